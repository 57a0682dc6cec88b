-- The bytes each site's files take (docs/decisions.md, "Attachments"), which its space is held
-- against: kept by these triggers, whoever adds, names or removes a file (an upload, a mail taken
-- in, the sweep, an erasure, a site removed), so keeping a file reads one row instead of summing
-- every file of the site. A file counts once it is named by its content: while its pieces are
-- written it reads `pending:<random>` and counts nothing.
CREATE TABLE `site_file_usage` (
	`site_id` integer PRIMARY KEY NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `site_file_usage` (`site_id`, `bytes`) SELECT `site_id`, sum(`size`) FROM `files` WHERE `sha256` NOT LIKE 'pending:%' GROUP BY `site_id`;
--> statement-breakpoint
CREATE TRIGGER `files_usage_added` AFTER INSERT ON `files` FOR EACH ROW WHEN NEW.sha256 NOT LIKE 'pending:%' BEGIN
	INSERT INTO `site_file_usage` (`site_id`, `bytes`) VALUES (NEW.site_id, NEW.size) ON CONFLICT (`site_id`) DO UPDATE SET `bytes` = `bytes` + excluded.bytes;
END;
--> statement-breakpoint
CREATE TRIGGER `files_usage_removed` AFTER DELETE ON `files` FOR EACH ROW WHEN OLD.sha256 NOT LIKE 'pending:%' BEGIN
	UPDATE `site_file_usage` SET `bytes` = `bytes` - OLD.size WHERE `site_id` = OLD.site_id;
END;
--> statement-breakpoint
CREATE TRIGGER `files_usage_changed` AFTER UPDATE OF `site_id`, `sha256`, `size` ON `files` FOR EACH ROW BEGIN
	UPDATE `site_file_usage` SET `bytes` = `bytes` - OLD.size WHERE `site_id` = OLD.site_id AND OLD.sha256 NOT LIKE 'pending:%';
	INSERT INTO `site_file_usage` (`site_id`, `bytes`) SELECT NEW.site_id, NEW.size WHERE NEW.sha256 NOT LIKE 'pending:%' ON CONFLICT (`site_id`) DO UPDATE SET `bytes` = `bytes` + excluded.bytes;
END;
