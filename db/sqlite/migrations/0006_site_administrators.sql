PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_security_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer,
	`site_id` integer,
	`kind` text NOT NULL,
	`created_at` integer NOT NULL,
	`address` text,
	`actor` text,
	`detail` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_security_events`("id", "user_id", "site_id", "kind", "created_at", "address", "actor", "detail") SELECT "id", "user_id", "site_id", "kind", "created_at", "address", "actor", "detail" FROM `security_events`;--> statement-breakpoint
DROP TABLE `security_events`;--> statement-breakpoint
ALTER TABLE `__new_security_events` RENAME TO `security_events`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `security_events_user_idx` ON `security_events` (`user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_user_kind_idx` ON `security_events` (`user_id`,`kind`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_site_idx` ON `security_events` (`site_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_created_idx` ON `security_events` (`created_at`);--> statement-breakpoint
ALTER TABLE `memberships` ADD `administrator` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `token_max_days` integer DEFAULT 365 NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `write_tokens` text DEFAULT 'everyone' NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `legacy_token_on` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `multipass_on` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `password_on` integer DEFAULT true NOT NULL;