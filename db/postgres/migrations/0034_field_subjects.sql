ALTER TABLE "fields" ADD COLUMN "of" text DEFAULT 'discussion' NOT NULL;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "queue_fields" text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "fields" text DEFAULT '{}' NOT NULL;