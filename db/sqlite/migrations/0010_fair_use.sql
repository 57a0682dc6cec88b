CREATE TABLE `rate_limit_windows` (
	`key` text NOT NULL,
	`window_start` integer NOT NULL,
	`taken` integer NOT NULL,
	PRIMARY KEY(`key`, `window_start`)
);
