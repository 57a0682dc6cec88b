ALTER TABLE `discussions` ADD `erased_at` integer;--> statement-breakpoint
ALTER TABLE `sites` ADD `erasure_mode` text DEFAULT 'anonymise' NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `retention_months` integer;--> statement-breakpoint
CREATE INDEX `comments_author_idx` ON `comments` (`author_id`);--> statement-breakpoint
CREATE INDEX `discussion_changes_comment_idx` ON `discussion_changes` (`comment_id`);--> statement-breakpoint
CREATE INDEX `mail_messages_comment_idx` ON `mail_messages` (`comment_id`);--> statement-breakpoint
CREATE INDEX `participants_site_email_idx` ON `participants` (`site_id`,`email`);