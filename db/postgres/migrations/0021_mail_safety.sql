ALTER TABLE "attachments" ADD COLUMN "original_message" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "imap_deferred" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "passed_over" text;--> statement-breakpoint
-- The originals kept before this migration are marked too (docs/decisions.md, "Mail").
UPDATE "attachments" SET "original_message" = true WHERE "name" IN ('original-message.eml', 'original-message.txt') AND "comment_id" IN (SELECT "comment_id" FROM "mail_messages" WHERE "outbound" = false);
