-- PocketPilot store, schema version 1: tasks, events, approvals, audit ledger, sessions.
--
-- Times are INTEGER milliseconds since the Unix epoch. JSON columns are TEXT. Ordering
-- "oldest/newest first" uses the implicit rowid (insertion order), never the clock.

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY NOT NULL,
    prompt          TEXT NOT NULL,
    workspace       TEXT NOT NULL,
    workspace_path  TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'running', 'waiting_approval',
                        'completed', 'failed', 'cancelled', 'timed_out', 'interrupted')),
    created_by      TEXT NOT NULL,
    script          TEXT,                         -- JSON: the scripted model's turns
    script_position INTEGER NOT NULL DEFAULT 0 CHECK (script_position >= 0),
    running_ms      INTEGER NOT NULL DEFAULT 0 CHECK (running_ms >= 0),
    final_text      TEXT,
    failure_reason  TEXT,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER
) STRICT;

-- claim_queued and list_tasks(state): the index entries carry the rowid, so
-- `WHERE state = ? ORDER BY rowid` is a pure index walk.
CREATE INDEX tasks_by_state ON tasks (state);

-- Append-only; `seq` is global so one Last-Event-ID serves per-task and global streams.
-- AUTOINCREMENT: a seq is never reused, even after the newest row is deleted.
CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    at      INTEGER NOT NULL,
    type    TEXT NOT NULL,                        -- the event's `type`, for ad-hoc queries
    step    INTEGER NOT NULL,
    payload TEXT NOT NULL                         -- JSON: the whole pp_types::Event
) STRICT;

CREATE INDEX events_by_task ON events (task_id, seq);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TABLE approvals (
    id               TEXT PRIMARY KEY NOT NULL,
    task_id          TEXT NOT NULL REFERENCES tasks (id),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected',
                         'stale', 'cancelled')),
    tool             TEXT NOT NULL,
    capability       TEXT NOT NULL,
    risk             TEXT NOT NULL,
    label            TEXT,
    target           TEXT,
    arguments        TEXT NOT NULL,               -- JSON
    fingerprint      TEXT,
    checkpoint       TEXT NOT NULL,               -- JSON: pp_types::Checkpoint
    created_at       INTEGER NOT NULL,
    resolved_at      INTEGER,
    resolved_by      TEXT,
    reason           TEXT,
    edited_arguments TEXT                         -- JSON
) STRICT;

CREATE INDEX approvals_by_state ON approvals (state);
CREATE INDEX approvals_by_task ON approvals (task_id);

-- The audit ledger: append-only, no foreign keys (it must outlive anything it mentions).
CREATE TABLE audit (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             INTEGER NOT NULL,
    actor          TEXT NOT NULL,
    action         TEXT NOT NULL,
    task_id        TEXT,
    approval_id    TEXT,
    tool           TEXT,
    target         TEXT,
    arguments_hash TEXT,
    detail         TEXT
) STRICT;

CREATE INDEX audit_by_actor ON audit (actor, id);
CREATE INDEX audit_by_task ON audit (task_id, id);
CREATE INDEX audit_by_action ON audit (action, id);

CREATE TRIGGER audit_append_only_update BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit ledger is append-only');
END;

CREATE TRIGGER audit_append_only_delete BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit ledger is append-only');
END;

-- Console login sessions: only the SHA-256 of the session id is stored.
CREATE TABLE sessions (
    id_sha256  TEXT PRIMARY KEY NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX sessions_by_expiry ON sessions (expires_at);
