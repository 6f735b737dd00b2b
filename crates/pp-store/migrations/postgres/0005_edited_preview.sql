-- What an edited approval ran, as SQLite's 0014: the edited call's effect preview (JSON),
-- described when the person approved it. NULL for approvals decided as asked, and on
-- rows decided before.
ALTER TABLE approvals ADD COLUMN edited_preview TEXT;
