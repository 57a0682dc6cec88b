CREATE TABLE `discussion_merges` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`from_id` integer NOT NULL,
	`into_id` integer NOT NULL,
	`state_before` text NOT NULL,
	`comments` text NOT NULL,
	`participants` text NOT NULL,
	`by_id` integer,
	`created_at` integer NOT NULL,
	`undone_at` integer,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`from_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`into_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`by_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `discussion_merges_into_idx` ON `discussion_merges` (`into_id`);--> statement-breakpoint
CREATE INDEX `discussion_merges_from_idx` ON `discussion_merges` (`from_id`);--> statement-breakpoint
DROP INDEX `discussions_site_activity_idx`;--> statement-breakpoint
DROP INDEX `discussions_site_created_idx`;--> statement-breakpoint
DROP INDEX `discussions_site_updated_idx`;--> statement-breakpoint
DROP INDEX `discussions_category_activity_idx`;--> statement-breakpoint
DROP INDEX `discussions_assignee_activity_idx`;--> statement-breakpoint
ALTER TABLE `discussions` ADD `merged_into` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `split_from` integer;--> statement-breakpoint
CREATE INDEX `discussions_site_activity_idx` ON `discussions` (`site_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam', 'merged');--> statement-breakpoint
CREATE INDEX `discussions_site_created_idx` ON `discussions` (`site_id`,`created_at`) WHERE "discussions"."state" not in ('deleted', 'spam', 'merged');--> statement-breakpoint
CREATE INDEX `discussions_site_updated_idx` ON `discussions` (`site_id`,`updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam', 'merged');--> statement-breakpoint
CREATE INDEX `discussions_category_activity_idx` ON `discussions` (`site_id`,`category_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam', 'merged');--> statement-breakpoint
CREATE INDEX `discussions_assignee_activity_idx` ON `discussions` (`site_id`,`assignee_id`,`last_updated_at`) WHERE "discussions"."state" not in ('deleted', 'spam', 'merged');--> statement-breakpoint
ALTER TABLE `comments` ADD `moved_from` integer;--> statement-breakpoint
ALTER TABLE `comments` ADD `moved_from_number` integer;