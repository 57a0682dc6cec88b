CREATE TABLE "used_challenges" (
	"challenge" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "second_factors" ADD COLUMN "credential_id" text;--> statement-breakpoint
ALTER TABLE "second_factors" ADD COLUMN "sign_count" integer;--> statement-breakpoint
ALTER TABLE "second_factors" ADD COLUMN "transports" text;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "staff_second_factor" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "second_factors_credential_idx" ON "second_factors" USING btree ("credential_id");