CREATE TABLE `rule_firings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`rule_id` integer,
	`rule_name` text NOT NULL,
	`discussion_id` integer NOT NULL,
	`trigger` text NOT NULL,
	`anchor_at` integer,
	`done` text NOT NULL,
	`at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`rule_id`) REFERENCES `rules`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rule_firings_once` ON `rule_firings` (`rule_id`,`discussion_id`,`anchor_at`);--> statement-breakpoint
CREATE INDEX `rule_firings_discussion` ON `rule_firings` (`discussion_id`,`id`);--> statement-breakpoint
CREATE TABLE `rules` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`position` integer NOT NULL,
	`name` text NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`events` text DEFAULT '' NOT NULL,
	`after_minutes` integer,
	`business` integer DEFAULT false NOT NULL,
	`since` text DEFAULT 'updated' NOT NULL,
	`conditions` text DEFAULT '{}' NOT NULL,
	`actions` text DEFAULT '[]' NOT NULL,
	`author_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`author_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rules_site_name_unique` ON `rules` (`site_id`,`name`);--> statement-breakpoint
ALTER TABLE `saved_replies` ADD `actions` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `rules_version` integer DEFAULT 0 NOT NULL;