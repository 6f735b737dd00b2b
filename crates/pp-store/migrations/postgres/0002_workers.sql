-- The worker processes sharing this database (`pocketpilot serve` / `pocketpilot worker`),
-- as SQLite's 0011: which workspaces each has (a JSON array of names) and when it last
-- said it is alive.
CREATE TABLE workers (
    id            TEXT COLLATE "C" PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           BIGINT NOT NULL CHECK (pid >= 0),
    workspaces    TEXT NOT NULL,
    started_at    BIGINT NOT NULL,
    heartbeat_at  BIGINT NOT NULL
);

-- claim_queued_in: the oldest queued task of some workspaces.
CREATE INDEX tasks_by_state_workspace ON tasks (state, workspace, ord);
