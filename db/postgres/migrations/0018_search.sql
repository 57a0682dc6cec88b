CREATE TABLE "search_backfill" (
	"key" integer PRIMARY KEY NOT NULL,
	"below" integer NOT NULL
);

--> statement-breakpoint
-- Written by hand, like SQLite's FTS5 table: the full-text index, one row per discussion, its
-- tsvector written out word by word by lib/search-text.ts (no text search configuration applies).
CREATE TABLE "discussion_search" (
	"discussion_id" integer PRIMARY KEY NOT NULL REFERENCES "discussions"("id") ON DELETE CASCADE,
	"document" tsvector NOT NULL
);
--> statement-breakpoint
CREATE INDEX "discussion_search_document_idx" ON "discussion_search" USING gin ("document");
--> statement-breakpoint
-- The discussions already there are indexed by the service in batches, newest first (db/stores/search.ts).
INSERT INTO "search_backfill" ("key", "below") SELECT 1, coalesce(max("id"), 0) + 1 FROM "discussions";
