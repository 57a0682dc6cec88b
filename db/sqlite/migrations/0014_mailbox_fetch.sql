ALTER TABLE `mailboxes` ADD `imap` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `smtp` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `imap_position` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `lease_owner` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `lease_until` integer;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `last_fetch_at` integer;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `acknowledge` integer DEFAULT false NOT NULL;