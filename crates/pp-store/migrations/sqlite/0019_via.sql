-- Where a person decided (issue 30, item 6): `console`, `api`, `cli`, `link` or
-- `telegram`, on the decision's audit row and on the approval itself (the decided card
-- shows it). Rows decided before this migration have none.
ALTER TABLE audit ADD COLUMN via TEXT;
ALTER TABLE approvals ADD COLUMN resolved_via TEXT;
