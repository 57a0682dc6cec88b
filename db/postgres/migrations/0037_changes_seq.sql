ALTER TABLE "sites" ADD COLUMN "changes_seq" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Each site's feed numbered on from its last change (db/stores/changes.ts). The sites' versions move with it (the trigger of 0020): their kept answers are made again once.
UPDATE "sites" SET "changes_seq" = coalesce((SELECT max("seq") FROM "discussion_changes" WHERE "discussion_changes"."site_id" = "sites"."id"), 0);
