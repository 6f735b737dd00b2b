-- Started calls (issue 29, item 3): an approved call that is about to run records what
-- its targets held right before it (the change log's snapshot: state, blob, size), with
-- its `tool_started` audit row, in one transaction. A retry marks the started calls of
-- the task with no recorded result `cut` (they may have run); the approval that asks
-- such a call again names it (`asked_again_by`), and its card says "this call may
-- already have run", showing the target now against `files`' state before the call.
-- Numbered 0017: 0016 is taken by the memory and skills tables.
CREATE TABLE started_calls (
    approval_id    TEXT PRIMARY KEY NOT NULL REFERENCES approvals (id),
    task_id        TEXT NOT NULL REFERENCES tasks (id),
    tool           TEXT NOT NULL,
    target         TEXT,
    started_at     INTEGER NOT NULL,
    -- JSON: [{"root", "path", "before", "before_sha256", "size"}]
    files          TEXT NOT NULL,
    cut            INTEGER NOT NULL DEFAULT 0 CHECK (cut IN (0, 1)),
    asked_again_by TEXT REFERENCES approvals (id)
) STRICT;
CREATE INDEX started_calls_by_task ON started_calls (task_id);
CREATE UNIQUE INDEX started_calls_asked_again ON started_calls (asked_again_by)
    WHERE asked_again_by IS NOT NULL;
