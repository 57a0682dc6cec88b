CREATE TABLE `sender_rules` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`pattern` text NOT NULL,
	`verdict` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sender_rules_site_pattern_unique` ON `sender_rules` (`site_id`,`pattern`);--> statement-breakpoint
DROP INDEX `discussions_site_activity_idx`;--> statement-breakpoint
DROP INDEX `discussions_site_created_idx`;--> statement-breakpoint
DROP INDEX `discussions_site_updated_idx`;--> statement-breakpoint
DROP INDEX `discussions_category_activity_idx`;--> statement-breakpoint
DROP INDEX `discussions_assignee_activity_idx`;--> statement-breakpoint
CREATE INDEX `discussions_site_activity_idx` ON `discussions` (`site_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam');--> statement-breakpoint
CREATE INDEX `discussions_site_created_idx` ON `discussions` (`site_id`,`created_at`) WHERE "discussions"."state" not in ('deleted', 'spam');--> statement-breakpoint
CREATE INDEX `discussions_site_updated_idx` ON `discussions` (`site_id`,`updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam');--> statement-breakpoint
CREATE INDEX `discussions_category_activity_idx` ON `discussions` (`site_id`,`category_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam');--> statement-breakpoint
CREATE INDEX `discussions_assignee_activity_idx` ON `discussions` (`site_id`,`assignee_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam');--> statement-breakpoint
ALTER TABLE `mail_messages` ADD `spam_reason` text;