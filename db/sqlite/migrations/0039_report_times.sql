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
