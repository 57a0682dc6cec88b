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
ALTER TABLE "report_times" ADD CONSTRAINT "report_times_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;