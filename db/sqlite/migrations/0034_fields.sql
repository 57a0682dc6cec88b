CREATE TABLE `field_values` (
	`site_id` integer NOT NULL,
	`field_id` integer NOT NULL,
	`discussion_id` integer NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`discussion_id`, `field_id`, `value`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`field_id`) REFERENCES `fields`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `field_values_site_field_value_idx` ON `field_values` (`site_id`,`field_id`,`value`,`discussion_id`);--> statement-breakpoint
CREATE TABLE `fields` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`key` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`audience` text NOT NULL,
	`required` integer DEFAULT false NOT NULL,
	`choices` text DEFAULT '[]' NOT NULL,
	`position` integer NOT NULL,
	`created_at` integer NOT NULL,
	`removed_at` integer,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fields_site_key_unique` ON `fields` (`site_id`,`key`);--> statement-breakpoint
ALTER TABLE `discussions` ADD `fields` text DEFAULT '{}' NOT NULL;