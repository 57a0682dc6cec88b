CREATE TABLE `discussion_changes` (
	`site_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`discussion_id` integer NOT NULL,
	`comment_id` integer,
	`at` integer NOT NULL,
	PRIMARY KEY(`site_id`, `seq`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`comment_id`) REFERENCES `comments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `discussion_changes_discussion_idx` ON `discussion_changes` (`discussion_id`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`site_id` integer NOT NULL,
	`credential` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`created_at` integer NOT NULL,
	`status` integer,
	`answer` text,
	PRIMARY KEY(`site_id`, `credential`, `key`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
-- Written by hand: every discussion already there starts the change feed as created, in the order
-- of its number, so a feed read from the start finds them all (db/stores/changes.ts).
INSERT INTO `discussion_changes` (`site_id`, `seq`, `kind`, `discussion_id`, `comment_id`, `at`)
  SELECT `site_id`, row_number() OVER (PARTITION BY `site_id` ORDER BY `number`), 'discussion.created', `id`, NULL, `created_at` FROM `discussions`;
