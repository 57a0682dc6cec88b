CREATE TABLE `sla_policies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`position` integer NOT NULL,
	`name` text NOT NULL,
	`categories` text DEFAULT '' NOT NULL,
	`tags` text DEFAULT '' NOT NULL,
	`domains` text DEFAULT '' NOT NULL,
	`channels` text DEFAULT '' NOT NULL,
	`schedule_id` integer,
	`first_reply_minutes` integer,
	`next_reply_minutes` integer,
	`resolution_minutes` integer,
	`warn_minutes` integer DEFAULT 30 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`schedule_id`) REFERENCES `schedules`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sla_policies_site_name_unique` ON `sla_policies` (`site_id`,`name`);--> statement-breakpoint
ALTER TABLE `discussions` ADD `channel` text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_policy_id` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_reply_since` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_first_replied_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_resolution_since` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_resolution_spent` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `first_reply_due_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `next_reply_due_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `resolution_due_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `due_at` integer DEFAULT 253402300799000 NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_breached` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_told` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `sla_alert_at` integer;--> statement-breakpoint
CREATE INDEX `discussions_todo_due_idx` ON `discussions` (`site_id`,`due_at`) WHERE "discussions"."state" in ('new', 'open');--> statement-breakpoint
CREATE INDEX `discussions_breached_activity_idx` ON `discussions` (`site_id`,`last_updated_at`) WHERE "discussions"."sla_breached" <> '';--> statement-breakpoint
CREATE INDEX `discussions_sla_alert_idx` ON `discussions` (`sla_alert_at`) WHERE "discussions"."sla_alert_at" is not null;--> statement-breakpoint
UPDATE `discussions` SET `channel` = CASE (SELECT `via` FROM `comments` WHERE `comments`.`discussion_id` = `discussions`.`id` AND `comments`.`number` = 1) WHEN 'email' THEN 'mail' WHEN 'web' THEN 'web' ELSE 'api' END;