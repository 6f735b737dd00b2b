-- Where a person decided, as SQLite's 0019: on the decision's audit row and on the
-- approval itself. Rows decided before this migration have none.
ALTER TABLE audit ADD COLUMN via TEXT;
ALTER TABLE approvals ADD COLUMN resolved_via TEXT;
