ALTER TABLE "discussions" ADD COLUMN "awaiting_team" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "imap" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "smtp" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "imap_position" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "lease_owner" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "lease_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "last_fetch_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "acknowledge" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- Discussions already there: awaiting the team when their newest public comment is a customer's.
UPDATE "discussions" SET "awaiting_team" = coalesce((SELECT NOT "c"."by_supporter" FROM "comments" "c" WHERE "c"."discussion_id" = "discussions"."id" AND NOT "c"."internal" ORDER BY "c"."number" DESC LIMIT 1), false);