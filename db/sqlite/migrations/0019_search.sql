CREATE TABLE `search_backfill` (
	`key` integer PRIMARY KEY NOT NULL,
	`below` integer NOT NULL
);

--> statement-breakpoint
-- Written by hand (drizzle has no virtual tables): the full-text index, one row per discussion
-- (rowid: its id), holding only the index (content=''), given the words made by lib/search-text.ts
-- separated by spaces (the `ascii` tokenizer splits them there and nowhere else).
CREATE VIRTUAL TABLE `discussion_search` USING fts5(title, text, notes, content='', contentless_delete=1, tokenize='ascii');
--> statement-breakpoint
CREATE TRIGGER `discussions_search_delete` AFTER DELETE ON `discussions` BEGIN DELETE FROM `discussion_search` WHERE rowid = old.id; END;
--> statement-breakpoint
-- The discussions already there are indexed by the service in batches, newest first (db/stores/search.ts).
INSERT INTO `search_backfill` (`key`, `below`) SELECT 1, coalesce(max(`id`), 0) + 1 FROM `discussions`;
