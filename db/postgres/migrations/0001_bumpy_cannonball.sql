CREATE TABLE "oauth_records" (
	"model" text NOT NULL,
	"id" text NOT NULL,
	"payload" text NOT NULL,
	"grant_id" text,
	"uid" text,
	"user_code" text,
	"account_id" text,
	"client_id" text,
	"resource" text,
	"expires_at" timestamp (3) with time zone,
	"consumed_at" timestamp (3) with time zone,
	"last_used_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "oauth_records_model_id_pk" PRIMARY KEY("model","id")
);
--> statement-breakpoint
CREATE INDEX "oauth_records_grant_idx" ON "oauth_records" USING btree ("grant_id") WHERE "oauth_records"."grant_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oauth_records_uid_idx" ON "oauth_records" USING btree ("model","uid") WHERE "oauth_records"."uid" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oauth_records_user_code_idx" ON "oauth_records" USING btree ("model","user_code") WHERE "oauth_records"."user_code" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oauth_records_account_idx" ON "oauth_records" USING btree ("account_id","model") WHERE "oauth_records"."account_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oauth_records_expiry_idx" ON "oauth_records" USING btree ("expires_at") WHERE "oauth_records"."expires_at" IS NOT NULL;