CREATE TABLE "report_times" (
	"site_id" integer NOT NULL,
	"dimension" text NOT NULL,
	"day" text NOT NULL,
	"key" text NOT NULL,
	"timing" text NOT NULL,
	"bucket" integer NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "report_times_site_id_dimension_day_key_timing_bucket_pk" PRIMARY KEY("site_id","dimension","day","key","timing","bucket")
);
--> statement-breakpoint
ALTER TABLE "report_times" ADD CONSTRAINT "report_times_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The day rows' histograms, one row a bucket (db/schema/postgres.ts, report_times).
INSERT INTO "report_times" ("site_id", "dimension", "day", "key", "timing", "bucket", "count")
SELECT r."site_id", r."dimension", r."day", r."key", t.timing, e.key::integer, e.value::integer
FROM "report_days" r
CROSS JOIN LATERAL (VALUES ('first_reply', r."first_reply"), ('first_reply_business', r."first_reply_business"), ('resolution', r."resolution"), ('resolution_business', r."resolution_business")) AS t(timing, histogram)
CROSS JOIN LATERAL jsonb_each_text(t.histogram::jsonb) AS e;--> statement-breakpoint
ALTER TABLE "report_days" DROP COLUMN "first_reply";--> statement-breakpoint
ALTER TABLE "report_days" DROP COLUMN "first_reply_business";--> statement-breakpoint
ALTER TABLE "report_days" DROP COLUMN "resolution";--> statement-breakpoint
ALTER TABLE "report_days" DROP COLUMN "resolution_business";