ALTER TABLE "discussions" ADD COLUMN "erased_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "erasure_mode" text DEFAULT 'anonymise' NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "retention_months" integer;--> statement-breakpoint
CREATE INDEX "comments_author_idx" ON "comments" USING btree ("author_id");--> statement-breakpoint
CREATE INDEX "discussion_changes_comment_idx" ON "discussion_changes" USING btree ("comment_id");--> statement-breakpoint
CREATE INDEX "mail_messages_comment_idx" ON "mail_messages" USING btree ("comment_id");--> statement-breakpoint
CREATE INDEX "participants_site_email_idx" ON "participants" USING btree ("site_id","email");