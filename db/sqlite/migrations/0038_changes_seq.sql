ALTER TABLE `sites` ADD `changes_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Each site's feed numbered on from its last change (db/stores/changes.ts).
UPDATE `sites` SET `changes_seq` = coalesce((SELECT max(`seq`) FROM `discussion_changes` WHERE `discussion_changes`.`site_id` = `sites`.`id`), 0);
