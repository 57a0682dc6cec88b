CREATE TABLE `oauth_records` (
	`model` text NOT NULL,
	`id` text NOT NULL,
	`payload` text NOT NULL,
	`grant_id` text,
	`uid` text,
	`user_code` text,
	`account_id` text,
	`client_id` text,
	`resource` text,
	`expires_at` integer,
	`consumed_at` integer,
	`last_used_at` integer,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`model`, `id`)
);
--> statement-breakpoint
CREATE INDEX `oauth_records_grant_idx` ON `oauth_records` (`grant_id`) WHERE "oauth_records"."grant_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `oauth_records_uid_idx` ON `oauth_records` (`model`,`uid`) WHERE "oauth_records"."uid" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `oauth_records_user_code_idx` ON `oauth_records` (`model`,`user_code`) WHERE "oauth_records"."user_code" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `oauth_records_account_idx` ON `oauth_records` (`account_id`,`model`) WHERE "oauth_records"."account_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `oauth_records_expiry_idx` ON `oauth_records` (`expires_at`) WHERE "oauth_records"."expires_at" IS NOT NULL;