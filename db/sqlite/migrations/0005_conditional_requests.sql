ALTER TABLE `discussions` ADD `version` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `sites` ADD `version` integer DEFAULT 0 NOT NULL;