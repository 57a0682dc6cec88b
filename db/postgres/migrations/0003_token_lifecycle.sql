CREATE TABLE "personal_token_addresses" (
	"token_id" integer NOT NULL,
	"address" text NOT NULL,
	"last_used_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "personal_token_addresses_token_id_address_pk" PRIMARY KEY("token_id","address")
);
--> statement-breakpoint
ALTER TABLE "personal_tokens" ADD COLUMN "week_notice_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "personal_tokens" ADD COLUMN "day_notice_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "personal_token_addresses" ADD CONSTRAINT "personal_token_addresses_token_id_personal_tokens_id_fk" FOREIGN KEY ("token_id") REFERENCES "personal_tokens"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "personal_tokens_expiry_idx" ON "personal_tokens" USING btree ("expires_at") WHERE "personal_tokens"."revoked_at" IS NULL;