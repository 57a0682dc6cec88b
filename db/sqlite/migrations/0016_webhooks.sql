CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`webhook_id` integer NOT NULL,
	`outbox_id` integer,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`attempted_at` integer NOT NULL,
	`status` integer,
	`duration_ms` integer NOT NULL,
	`answer` text DEFAULT '' NOT NULL,
	`error` text,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`outbox_id`) REFERENCES `outbox`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_idx` ON `webhook_deliveries` (`webhook_id`,`attempted_at`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`url` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`events` text NOT NULL,
	`internal_comments` integer DEFAULT false NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_until` integer,
	`failing_since` integer,
	`disabled_reason` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhooks_site_idx` ON `webhooks` (`site_id`);--> statement-breakpoint
ALTER TABLE `outbox` ADD `webhook_id` integer REFERENCES webhooks(id) ON DELETE cascade;--> statement-breakpoint
ALTER TABLE `outbox` ADD `event_id` text;--> statement-breakpoint
CREATE INDEX `outbox_webhook_idx` ON `outbox` (`webhook_id`);