CREATE TABLE "report_days" (
	"site_id" integer NOT NULL,
	"dimension" text NOT NULL,
	"day" text NOT NULL,
	"key" text NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"resolved" integer DEFAULT 0 NOT NULL,
	"reopened" integer DEFAULT 0 NOT NULL,
	"replies" integer DEFAULT 0 NOT NULL,
	"first_replies" integer DEFAULT 0 NOT NULL,
	"sla_kept" integer DEFAULT 0 NOT NULL,
	"sla_breached" integer DEFAULT 0 NOT NULL,
	"rated_good" integer DEFAULT 0 NOT NULL,
	"rated_bad" integer DEFAULT 0 NOT NULL,
	"first_reply" text DEFAULT '{}' NOT NULL,
	"first_reply_business" text DEFAULT '{}' NOT NULL,
	"resolution" text DEFAULT '{}' NOT NULL,
	"resolution_business" text DEFAULT '{}' NOT NULL,
	CONSTRAINT "report_days_site_id_dimension_day_key_pk" PRIMARY KEY("site_id","dimension","day","key")
);
--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "first_reply_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "first_reply_minutes" integer;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "first_reply_business" integer;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "resolved_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "resolved_by_id" integer;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "resolution_minutes" integer;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "resolution_business" integer;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "reopens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "team_replies" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "rating" text;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "rating_comment" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "discussions" ADD COLUMN "rated_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "notify_digest" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "satisfaction_on" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "digest_week" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "report_days" ADD CONSTRAINT "report_days_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;