-- The bytes each site's files take (docs/decisions.md, "Attachments"), which its space is held
-- against: kept by this trigger, whoever adds, names or removes a file (an upload, a mail taken
-- in, the sweep, an erasure, a site removed, `service-desk copy`), so keeping a file reads one row
-- instead of summing every file of the site. A file counts once it is named by its content: while
-- its pieces are written it reads `pending:<random>` and counts nothing. The function looks for
-- the table in the schema it was made in (SET search_path FROM CURRENT).
CREATE TABLE "site_file_usage" (
	"site_id" integer NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "site_file_usage_site_id_pk" PRIMARY KEY("site_id")
);
--> statement-breakpoint
ALTER TABLE "site_file_usage" ADD CONSTRAINT "site_file_usage_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "sites"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
INSERT INTO "site_file_usage" ("site_id", "bytes") SELECT "site_id", sum("size") FROM "files" WHERE "sha256" NOT LIKE 'pending:%' GROUP BY "site_id";
--> statement-breakpoint
CREATE FUNCTION "files_usage_moves"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF TG_OP <> 'INSERT' AND OLD.sha256 NOT LIKE 'pending:%' THEN
		UPDATE "site_file_usage" SET "bytes" = "bytes" - OLD.size WHERE "site_id" = OLD.site_id;
	END IF;
	IF TG_OP <> 'DELETE' AND NEW.sha256 NOT LIKE 'pending:%' THEN
		INSERT INTO "site_file_usage" ("site_id", "bytes") VALUES (NEW.site_id, NEW.size)
			ON CONFLICT ("site_id") DO UPDATE SET "bytes" = "site_file_usage"."bytes" + excluded.bytes;
	END IF;
	RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "files_usage" AFTER INSERT OR DELETE OR UPDATE OF "site_id", "sha256", "size" ON "files" FOR EACH ROW EXECUTE FUNCTION "files_usage_moves"();
