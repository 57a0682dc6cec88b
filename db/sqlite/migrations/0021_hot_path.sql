-- Every change to a site's row moves its version (docs/decisions.md, "One round trip to
-- authenticate"): the authentication path reads the site's id and version with the token, and the
-- row is kept for as long as that version is the one kept. The stores move the version themselves;
-- this makes it true of any other writer too (a trigger does not fire itself again).
CREATE TRIGGER `sites_version_moves` AFTER UPDATE ON `sites` FOR EACH ROW WHEN NEW.version = OLD.version BEGIN
	UPDATE `sites` SET `version` = `version` + 1 WHERE `id` = NEW.id;
END;
