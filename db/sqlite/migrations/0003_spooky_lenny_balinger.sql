CREATE TABLE `security_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
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
CREATE INDEX `security_events_user_idx` ON `security_events` (`user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_user_kind_idx` ON `security_events` (`user_id`,`kind`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_site_idx` ON `security_events` (`site_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `security_events_created_idx` ON `security_events` (`created_at`);