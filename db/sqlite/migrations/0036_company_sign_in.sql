CREATE TABLE `sign_in_links` (
	`provider_id` integer NOT NULL,
	`subject` text NOT NULL,
	`user_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`last_sign_in_at` integer NOT NULL,
	PRIMARY KEY(`provider_id`, `subject`),
	FOREIGN KEY (`provider_id`) REFERENCES `sign_in_providers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sign_in_links_user_unique` ON `sign_in_links` (`provider_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `sign_in_links_user_idx` ON `sign_in_links` (`user_id`);--> statement-breakpoint
CREATE TABLE `sign_in_providers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`issuer` text NOT NULL,
	`client_id` text NOT NULL,
	`secret` text NOT NULL,
	`domains` text DEFAULT '[]' NOT NULL,
	`domain_role` text,
	`trust_mfa` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sign_in_providers_site_name_unique` ON `sign_in_providers` (`site_id`,`name`);--> statement-breakpoint
ALTER TABLE `sites` ADD `company_sign_in_only` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `web_sessions` ADD `provider_id` integer REFERENCES sign_in_providers(id) ON DELETE set null;--> statement-breakpoint
ALTER TABLE `web_sessions` ADD `provider_sid` text;--> statement-breakpoint
ALTER TABLE `web_sessions` ADD `provider_mfa` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `web_sessions_provider_idx` ON `web_sessions` (`provider_id`);