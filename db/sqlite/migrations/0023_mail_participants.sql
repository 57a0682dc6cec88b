CREATE TABLE `participants` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`discussion_id` integer NOT NULL,
	`email` text NOT NULL,
	`name` text,
	`added_by` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `participants_discussion_email_unique` ON `participants` (`discussion_id`,`email`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_memberships` (
	`site_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`role` text NOT NULL,
	`created_at` integer NOT NULL,
	`administrator` integer DEFAULT false NOT NULL,
	`notify_new` integer,
	`notify_owned` integer DEFAULT true NOT NULL,
	PRIMARY KEY(`site_id`, `user_id`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_memberships`("site_id", "user_id", "role", "created_at", "administrator", "notify_new", "notify_owned") SELECT "site_id", "user_id", "role", "created_at", "administrator", "notify_new", "notify_owned" FROM `memberships`;--> statement-breakpoint
DROP TABLE `memberships`;--> statement-breakpoint
ALTER TABLE `__new_memberships` RENAME TO `memberships`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `memberships_user_idx` ON `memberships` (`user_id`);--> statement-breakpoint
CREATE INDEX `memberships_site_role_idx` ON `memberships` (`site_id`,`role`,`user_id`);--> statement-breakpoint
ALTER TABLE `sites` ADD `new_discussions_to_team` integer DEFAULT true NOT NULL;--> statement-breakpoint
-- Sites made before issue 65 keep what their supporters chose: off unless a supporter turned it on.
UPDATE `sites` SET `new_discussions_to_team` = false;--> statement-breakpoint
UPDATE `memberships` SET `notify_new` = NULL WHERE `notify_new` = false;
