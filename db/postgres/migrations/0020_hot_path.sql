-- Every change to a site's row moves its version (docs/decisions.md, "One round trip to
-- authenticate"): the authentication path reads the site's id and version with the token, and a
-- process keeps the rest of the row for as long as the version it read is the one it kept. The
-- stores move the version themselves; this makes it true of any other writer too.
CREATE FUNCTION "site_version_moves"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.version := OLD.version + 1;
	RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER "sites_version_moves" BEFORE UPDATE ON "sites" FOR EACH ROW WHEN (NEW.version = OLD.version) EXECUTE FUNCTION "site_version_moves"();
