-- Started calls, as SQLite's 0017: what an approved call's targets held right before it
-- ran, recorded with its `tool_started` audit row; a retry marks those with no recorded
-- result `cut`, and the approval that asks such a call again names it.
-- Numbered 0008: 0007 is taken by the memory and skills tables.
CREATE TABLE started_calls (
    ord            BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    approval_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES approvals (id),
    task_id        TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    tool           TEXT NOT NULL,
    target         TEXT,
    started_at     BIGINT NOT NULL,
    files          TEXT NOT NULL,
    cut            BOOLEAN NOT NULL DEFAULT FALSE,
    asked_again_by TEXT COLLATE "C" REFERENCES approvals (id)
);
CREATE INDEX started_calls_by_task ON started_calls (task_id);
CREATE UNIQUE INDEX started_calls_asked_again ON started_calls (asked_again_by)
    WHERE asked_again_by IS NOT NULL;
