ALTER TABLE "mailboxes" ADD COLUMN "imap" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "smtp" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "imap_position" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "lease_owner" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "lease_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "last_fetch_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "acknowledge" boolean DEFAULT false NOT NULL;