CREATE TABLE `categories` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`name` text NOT NULL,
	`permalink` text NOT NULL,
	`public` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `categories_site_permalink_unique` ON `categories` (`site_id`,`permalink`);--> statement-breakpoint
CREATE TABLE `comments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`discussion_id` integer NOT NULL,
	`number` integer NOT NULL,
	`author_id` integer NOT NULL,
	`by_supporter` integer NOT NULL,
	`body` text NOT NULL,
	`internal` integer DEFAULT false NOT NULL,
	`via` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`discussion_id`) REFERENCES `discussions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`author_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `comments_discussion_number_unique` ON `comments` (`discussion_id`,`number`);--> statement-breakpoint
CREATE TABLE `discussion_counts` (
	`site_id` integer NOT NULL,
	`category_id` integer NOT NULL,
	`state` text NOT NULL,
	`public` integer NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`site_id`, `category_id`, `state`, `public`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `discussions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`site_id` integer NOT NULL,
	`number` integer NOT NULL,
	`title` text NOT NULL,
	`permalink` text NOT NULL,
	`state` text NOT NULL,
	`state_before_delete` text,
	`public` integer NOT NULL,
	`author_id` integer NOT NULL,
	`category_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`last_updated_at` integer NOT NULL,
	`comments_count` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`author_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `discussions_site_number_unique` ON `discussions` (`site_id`,`number`);--> statement-breakpoint
CREATE INDEX `discussions_site_activity_idx` ON `discussions` (`site_id`,`last_updated_at`) WHERE "discussions"."state" <> 'deleted';--> statement-breakpoint
CREATE INDEX `discussions_site_created_idx` ON `discussions` (`site_id`,`created_at`) WHERE "discussions"."state" <> 'deleted';--> statement-breakpoint
CREATE INDEX `discussions_site_updated_idx` ON `discussions` (`site_id`,`updated_at`) WHERE "discussions"."state" <> 'deleted';--> statement-breakpoint
CREATE INDEX `discussions_state_activity_idx` ON `discussions` (`site_id`,`state`,`last_updated_at`);--> statement-breakpoint
CREATE INDEX `discussions_state_created_idx` ON `discussions` (`site_id`,`state`,`created_at`);--> statement-breakpoint
CREATE INDEX `discussions_state_updated_idx` ON `discussions` (`site_id`,`state`,`updated_at`);--> statement-breakpoint
CREATE INDEX `discussions_category_activity_idx` ON `discussions` (`site_id`,`category_id`,`last_updated_at`) WHERE "discussions"."state" <> 'deleted';--> statement-breakpoint
CREATE INDEX `discussions_author_activity_idx` ON `discussions` (`site_id`,`author_id`,`last_updated_at`);