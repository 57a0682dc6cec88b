ALTER TABLE "security_events" ALTER COLUMN "user_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "administrator" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "token_max_days" integer DEFAULT 365 NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "write_tokens" text DEFAULT 'everyone' NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "legacy_token_on" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "multipass_on" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "password_on" boolean DEFAULT true NOT NULL;