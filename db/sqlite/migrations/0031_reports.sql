CREATE TABLE `report_days` (
	`site_id` integer NOT NULL,
	`dimension` text NOT NULL,
	`day` text NOT NULL,
	`key` text NOT NULL,
	`created` integer DEFAULT 0 NOT NULL,
	`resolved` integer DEFAULT 0 NOT NULL,
	`reopened` integer DEFAULT 0 NOT NULL,
	`replies` integer DEFAULT 0 NOT NULL,
	`first_replies` integer DEFAULT 0 NOT NULL,
	`sla_kept` integer DEFAULT 0 NOT NULL,
	`sla_breached` integer DEFAULT 0 NOT NULL,
	`rated_good` integer DEFAULT 0 NOT NULL,
	`rated_bad` integer DEFAULT 0 NOT NULL,
	`first_reply` text DEFAULT '{}' NOT NULL,
	`first_reply_business` text DEFAULT '{}' NOT NULL,
	`resolution` text DEFAULT '{}' NOT NULL,
	`resolution_business` text DEFAULT '{}' NOT NULL,
	PRIMARY KEY(`site_id`, `dimension`, `day`, `key`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `discussions` ADD `first_reply_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `first_reply_minutes` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `first_reply_business` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `resolved_at` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `resolved_by_id` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `resolution_minutes` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `resolution_business` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `reopens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `team_replies` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `rating` text;--> statement-breakpoint
ALTER TABLE `discussions` ADD `rating_comment` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `discussions` ADD `rated_at` integer;--> statement-breakpoint
ALTER TABLE `memberships` ADD `notify_digest` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `satisfaction_on` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `digest_week` text DEFAULT '' NOT NULL;