-- The worker processes sharing this database (`pocketpilot serve` / `pocketpilot worker`):
-- which workspaces each has, and when it last said it is alive. A queued task whose
-- workspace no live worker has waits, and the console says so.
CREATE TABLE workers (
    id            TEXT PRIMARY KEY NOT NULL,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL CHECK (pid >= 0),
    workspaces    TEXT NOT NULL,                -- JSON array of workspace names
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL
) STRICT;

-- claim_queued_in: the oldest queued task of some workspaces.
CREATE INDEX tasks_by_state_workspace ON tasks (state, workspace);
