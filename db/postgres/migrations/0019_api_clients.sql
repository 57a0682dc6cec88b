CREATE TABLE "discussion_changes" (
	"site_id" integer NOT NULL,
	"seq" integer NOT NULL,
	"kind" text NOT NULL,
	"discussion_id" integer NOT NULL,
	"comment_id" integer,
	"at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "discussion_changes_site_id_seq_pk" PRIMARY KEY("site_id","seq")
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"site_id" integer NOT NULL,
	"credential" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"status" integer,
	"answer" text,
	CONSTRAINT "idempotency_keys_site_id_credential_key_pk" PRIMARY KEY("site_id","credential","key")
);
--> statement-breakpoint
ALTER TABLE "discussion_changes" ADD CONSTRAINT "discussion_changes_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "discussion_changes" ADD CONSTRAINT "discussion_changes_discussion_id_discussions_id_fk" FOREIGN KEY ("discussion_id") REFERENCES "discussions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "discussion_changes" ADD CONSTRAINT "discussion_changes_comment_id_comments_id_fk" FOREIGN KEY ("comment_id") REFERENCES "comments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "discussion_changes_discussion_idx" ON "discussion_changes" USING btree ("discussion_id");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
-- Written by hand: every discussion already there starts the change feed as created, in the order
-- of its number, so a feed read from the start finds them all (db/stores/changes.ts).
INSERT INTO "discussion_changes" ("site_id", "seq", "kind", "discussion_id", "comment_id", "at")
  SELECT "site_id", row_number() OVER (PARTITION BY "site_id" ORDER BY "number"), 'discussion.created', "id", NULL, "created_at" FROM "discussions";
