CREATE TABLE `personal_token_addresses` (
	`token_id` integer NOT NULL,
	`address` text NOT NULL,
	`last_used_at` integer NOT NULL,
	PRIMARY KEY(`token_id`, `address`),
	FOREIGN KEY (`token_id`) REFERENCES `personal_tokens`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `personal_tokens` ADD `week_notice_at` integer;--> statement-breakpoint
ALTER TABLE `personal_tokens` ADD `day_notice_at` integer;--> statement-breakpoint
CREATE INDEX `personal_tokens_expiry_idx` ON `personal_tokens` (`expires_at`) WHERE "personal_tokens"."revoked_at" IS NULL;