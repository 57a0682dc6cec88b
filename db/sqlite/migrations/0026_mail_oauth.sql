CREATE TABLE `mail_providers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`label` text NOT NULL,
	`issuer` text NOT NULL,
	`settings` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mail_providers_name_unique` ON `mail_providers` (`name`);--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `oauth_provider` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `oauth_tokens` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `oauth_problem` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `oauth_renew_until` integer;