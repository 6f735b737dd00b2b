-- Retention (`[store] retain_days`, Store::prune): events and audit rows stay
-- append-only, except inside the prune transaction.
--
-- The delete triggers now fire unless `prune_guard` holds a row. Store::prune inserts
-- that row, deletes what the retention window allows and deletes the row again, all in
-- one BEGIN IMMEDIATE transaction: no other connection ever sees the row (it is never
-- committed), so every other DELETE is still refused. The CHECK allows one row at most.
-- UPDATE stays forbidden without exception. (Anyone who can write the file can of course
-- drop triggers; they guard against our own code, not against the file's owner.)

CREATE TABLE prune_guard (
    id INTEGER PRIMARY KEY CHECK (id = 1)
) STRICT;

DROP TRIGGER events_append_only_delete;

CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM prune_guard)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

DROP TRIGGER audit_append_only_delete;

CREATE TRIGGER audit_append_only_delete BEFORE DELETE ON audit
WHEN NOT EXISTS (SELECT 1 FROM prune_guard)
BEGIN
    SELECT RAISE(ABORT, 'the audit ledger is append-only');
END;

-- Prune finds finished tasks by state and finish time.
CREATE INDEX tasks_by_finish ON tasks (finished_at) WHERE finished_at IS NOT NULL;
