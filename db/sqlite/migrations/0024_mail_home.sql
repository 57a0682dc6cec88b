CREATE TABLE `mail_home` (
	`id` integer PRIMARY KEY NOT NULL,
	`place` text NOT NULL,
	`held` text,
	`changed_at` integer NOT NULL
);
