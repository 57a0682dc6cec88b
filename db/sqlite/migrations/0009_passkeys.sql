CREATE TABLE `used_challenges` (
	`challenge` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `second_factors` ADD `credential_id` text;--> statement-breakpoint
ALTER TABLE `second_factors` ADD `sign_count` integer;--> statement-breakpoint
ALTER TABLE `second_factors` ADD `transports` text;--> statement-breakpoint
CREATE UNIQUE INDEX `second_factors_credential_idx` ON `second_factors` (`credential_id`);--> statement-breakpoint
ALTER TABLE `sites` ADD `staff_second_factor` integer DEFAULT false NOT NULL;