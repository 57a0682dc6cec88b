CREATE TABLE `recovery_codes` (
	`user_id` integer NOT NULL,
	`digest` text NOT NULL,
	`used_at` integer,
	PRIMARY KEY(`user_id`, `digest`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `second_factors` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`secret` text NOT NULL,
	`last_time_step` integer,
	`confirmed_at` integer,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `second_factors_user_idx` ON `second_factors` (`user_id`);