-- Changesets (issue 27): the approval-needing calls of one model turn are stored
-- together and decided together. `pending` counts the changeset's approvals still
-- waiting for a decision; the decision that takes it to 0 moves the task on in the same
-- transaction. Every approval carries the whole checkpoint and the id of its own call.
-- Rows stored before have no changeset and decide the checkpoint's `pending` call.
CREATE TABLE changesets (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks (id),
    size       INTEGER NOT NULL CHECK (size > 0),
    pending    INTEGER NOT NULL CHECK (pending >= 0),
    created_at INTEGER NOT NULL
);
CREATE INDEX changesets_by_task ON changesets (task_id);
ALTER TABLE approvals ADD COLUMN changeset_id TEXT REFERENCES changesets (id);
ALTER TABLE approvals ADD COLUMN call_id TEXT;
CREATE INDEX approvals_by_changeset ON approvals (changeset_id);
