CREATE TABLE `customer_links` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`purpose` text NOT NULL,
	`email` text NOT NULL,
	`digest` text NOT NULL,
	`payload` text,
	`address` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`discussion_id` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `customer_links_digest_unique` ON `customer_links` (`digest`);--> statement-breakpoint
CREATE INDEX `customer_links_email_idx` ON `customer_links` (`site_id`,`email`,`created_at`);--> statement-breakpoint
CREATE INDEX `customer_links_address_idx` ON `customer_links` (`address`,`created_at`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`comment_id` integer,
	`kind` text NOT NULL,
	`payload` text NOT NULL,
	`state` text DEFAULT 'queued' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`lease_until` integer,
	`last_error` text,
	`sent_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`comment_id`) REFERENCES `comments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_outbox`("id", "site_id", "comment_id", "kind", "payload", "state", "attempts", "next_attempt_at", "lease_until", "last_error", "sent_at", "created_at") SELECT "id", "site_id", "comment_id", "kind", "payload", "state", "attempts", "next_attempt_at", "lease_until", "last_error", "sent_at", "created_at" FROM `outbox`;--> statement-breakpoint
DROP TABLE `outbox`;--> statement-breakpoint
ALTER TABLE `__new_outbox` RENAME TO `outbox`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `outbox_due_idx` ON `outbox` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `outbox_comment_idx` ON `outbox` (`comment_id`);--> statement-breakpoint
ALTER TABLE `discussions` ADD `started_on_the_web` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `visitor_discussions` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `public_discussions` integer DEFAULT true NOT NULL;