CREATE TABLE "rate_limit_windows" (
	"key" text NOT NULL,
	"window_start" timestamp (3) with time zone NOT NULL,
	"taken" integer NOT NULL,
	CONSTRAINT "rate_limit_windows_key_window_start_pk" PRIMARY KEY("key","window_start")
);
