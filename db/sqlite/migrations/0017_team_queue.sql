CREATE TABLE `discussion_tags` (
	`discussion_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`tag` text NOT NULL,
	PRIMARY KEY(`discussion_id`, `tag`),
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `discussion_tags_site_tag_idx` ON `discussion_tags` (`site_id`,`tag`,`discussion_id`);--> statement-breakpoint
CREATE TABLE `saved_replies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `saved_replies_site_title_unique` ON `saved_replies` (`site_id`,`title`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_discussion_counts` (
	`site_id` integer NOT NULL,
	`category_id` integer NOT NULL,
	`state` text NOT NULL,
	`public` integer NOT NULL,
	`count` integer NOT NULL,
	`assignee_id` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`site_id`, `category_id`, `state`, `public`, `assignee_id`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_discussion_counts`("site_id", "category_id", "state", "public", "count", "assignee_id") SELECT "site_id", "category_id", "state", "public", "count", 0 FROM `discussion_counts`;--> statement-breakpoint
DROP TABLE `discussion_counts`;--> statement-breakpoint
ALTER TABLE `__new_discussion_counts` RENAME TO `discussion_counts`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
ALTER TABLE `categories` ADD `round_robin` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `categories` ADD `last_assignee_id` integer;--> statement-breakpoint
ALTER TABLE `discussions` ADD `assignee_id` integer REFERENCES users(id) ON DELETE set null;--> statement-breakpoint
ALTER TABLE `discussions` ADD `tags` text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX `discussions_todo_activity_idx` ON `discussions` (`site_id`,`last_updated_at`) WHERE "discussions"."state" in ('new', 'open');--> statement-breakpoint
CREATE INDEX `discussions_assignee_activity_idx` ON `discussions` (`site_id`,`assignee_id`,`last_updated_at`) WHERE "discussions"."state" <> 'deleted';--> statement-breakpoint
ALTER TABLE `memberships` ADD `notify_new` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `memberships` ADD `notify_owned` integer DEFAULT true NOT NULL;