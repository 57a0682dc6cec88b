CREATE TABLE `report_times` (
	`site_id` integer NOT NULL,
	`dimension` text NOT NULL,
	`day` text NOT NULL,
	`key` text NOT NULL,
	`timing` text NOT NULL,
	`bucket` integer NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`site_id`, `dimension`, `day`, `key`, `timing`, `bucket`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- The day rows' histograms, one row a bucket (db/schema/sqlite.ts, report_times).
INSERT INTO `report_times` (`site_id`, `dimension`, `day`, `key`, `timing`, `bucket`, `count`)
SELECT r.`site_id`, r.`dimension`, r.`day`, r.`key`, t.timing, CAST(e.key AS integer), e.value
FROM `report_days` r
JOIN (SELECT 'first_reply' AS timing UNION ALL SELECT 'first_reply_business' UNION ALL SELECT 'resolution' UNION ALL SELECT 'resolution_business') t
JOIN json_each(CASE t.timing WHEN 'first_reply' THEN r.`first_reply` WHEN 'first_reply_business' THEN r.`first_reply_business` WHEN 'resolution' THEN r.`resolution` ELSE r.`resolution_business` END) e;--> statement-breakpoint
ALTER TABLE `report_days` DROP COLUMN `first_reply`;--> statement-breakpoint
ALTER TABLE `report_days` DROP COLUMN `first_reply_business`;--> statement-breakpoint
ALTER TABLE `report_days` DROP COLUMN `resolution`;--> statement-breakpoint
ALTER TABLE `report_days` DROP COLUMN `resolution_business`;