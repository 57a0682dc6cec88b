ALTER TABLE `discussions` ADD `erased_at` integer;--> statement-breakpoint
ALTER TABLE `sites` ADD `erasure_mode` text DEFAULT 'anonymise' NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `retention_months` integer;--> statement-breakpoint
CREATE INDEX `comments_author_idx` ON `comments` (`author_id`);--> statement-breakpoint
CREATE INDEX `participants_site_email_idx` ON `participants` (`site_id`,`email`);