-- What an edited approval ran (issue: after approving an edited call, the card kept the
-- original path and diff while a different file was written): the edited call's effect
-- preview (JSON), described when the person approved it. NULL for approvals decided as
-- asked, and on rows decided before.
ALTER TABLE approvals ADD COLUMN edited_preview TEXT;
