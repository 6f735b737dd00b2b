-- Changesets, as SQLite's 0015: the approval-needing calls of one model turn, decided
-- together; `pending` is decremented under the row's lock by each decision, and the one
-- that takes it to 0 moves the task on in the same transaction.
CREATE TABLE changesets (
    id         TEXT COLLATE "C" PRIMARY KEY,
    task_id    TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    size       INTEGER NOT NULL CHECK (size > 0),
    pending    INTEGER NOT NULL CHECK (pending >= 0),
    created_at BIGINT NOT NULL
);
CREATE INDEX changesets_by_task ON changesets (task_id);
ALTER TABLE approvals ADD COLUMN changeset_id TEXT COLLATE "C" REFERENCES changesets (id);
ALTER TABLE approvals ADD COLUMN call_id TEXT;
CREATE INDEX approvals_by_changeset ON approvals (changeset_id);
