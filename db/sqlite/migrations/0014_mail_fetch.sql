ALTER TABLE `discussions` ADD `awaiting_team` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `imap` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `smtp` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `imap_position` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `lease_owner` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `lease_until` integer;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `last_fetch_at` integer;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `mailboxes` ADD `acknowledge` integer DEFAULT false NOT NULL;--> statement-breakpoint
-- Discussions already there: awaiting the team when their newest public comment is a customer's.
UPDATE `discussions` SET `awaiting_team` = coalesce((SELECT NOT `c`.`by_supporter` FROM `comments` `c` WHERE `c`.`discussion_id` = `discussions`.`id` AND `c`.`internal` = 0 ORDER BY `c`.`number` DESC LIMIT 1), 0);