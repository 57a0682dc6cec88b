ALTER TABLE `fields` ADD `of` text DEFAULT 'discussion' NOT NULL;--> statement-breakpoint
ALTER TABLE `memberships` ADD `queue_fields` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `memberships` ADD `fields` text DEFAULT '{}' NOT NULL;