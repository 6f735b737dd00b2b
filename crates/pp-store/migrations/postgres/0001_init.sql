-- PocketPilot store on PostgreSQL, schema version 1: every table the SQLite migrations
-- 0001-0010 end up with (see migrations/sqlite/ for what each column means), with the
-- same column names and CHECKs.
--
-- Times are BIGINT milliseconds since the Unix epoch (always from the store's clock,
-- never PostgreSQL's now()). JSON columns are TEXT, blobs BYTEA. "Oldest/newest first"
-- (SQLite's rowid) is the identity column `ord`, or the table's identity id. Ids, names
-- and anything compared or sorted as text use the "C" collation: byte order, as SQLite.
--
-- Every statement is schema-unqualified: the schema is the first one on the connection's
-- search_path.

CREATE TABLE tasks (
    ord             BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id              TEXT COLLATE "C" PRIMARY KEY,
    prompt          TEXT NOT NULL,
    workspace       TEXT COLLATE "C" NOT NULL,
    workspace_path  TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'running', 'waiting_approval',
                        'completed', 'failed', 'cancelled', 'timed_out', 'interrupted')),
    created_by      TEXT NOT NULL,
    script          TEXT,
    script_position BIGINT NOT NULL DEFAULT 0 CHECK (script_position >= 0),
    running_ms      BIGINT NOT NULL DEFAULT 0 CHECK (running_ms >= 0),
    final_text      TEXT,
    failure_reason  TEXT,
    error           TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    finished_at     BIGINT,
    heartbeat_at    BIGINT,
    origin          TEXT
);

-- claim_queued: the oldest queued task, an index walk.
CREATE INDEX tasks_by_state ON tasks (state, ord);
CREATE INDEX tasks_by_finish ON tasks (finished_at) WHERE finished_at IS NOT NULL;

-- Append-only; `seq` is global so one Last-Event-ID serves per-task and global streams.
-- Every transaction that inserts events first takes the events advisory lock (see
-- src/postgres/events.rs), so sequence values are handed out and committed in one order
-- and a reader resuming after `seq` never skips an event. A seq is never reused.
CREATE TABLE events (
    seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    at      BIGINT NOT NULL,
    type    TEXT NOT NULL,
    step    BIGINT NOT NULL,
    payload TEXT NOT NULL
);

CREATE INDEX events_by_task ON events (task_id, seq);
CREATE INDEX events_by_at ON events (at);

CREATE TABLE approvals (
    ord              BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id               TEXT COLLATE "C" PRIMARY KEY,
    task_id          TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected',
                         'stale', 'cancelled')),
    tool             TEXT NOT NULL,
    capability       TEXT NOT NULL,
    risk             TEXT NOT NULL,
    label            TEXT,
    target           TEXT,
    arguments        TEXT NOT NULL,
    fingerprint      TEXT,
    checkpoint       TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    resolved_at      BIGINT,
    resolved_by      TEXT,
    reason           TEXT,
    edited_arguments TEXT,
    revertible       BOOLEAN
);

CREATE INDEX approvals_by_state ON approvals (state, ord);
CREATE INDEX approvals_by_task ON approvals (task_id, ord);

-- The audit ledger: append-only, no foreign keys (it must outlive anything it mentions).
CREATE TABLE audit (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             BIGINT NOT NULL,
    actor          TEXT NOT NULL,
    action         TEXT NOT NULL,
    task_id        TEXT COLLATE "C",
    approval_id    TEXT COLLATE "C",
    tool           TEXT,
    target         TEXT,
    arguments_hash TEXT,
    detail         TEXT
);

CREATE INDEX audit_by_actor ON audit (actor, id);
CREATE INDEX audit_by_task ON audit (task_id, id);
CREATE INDEX audit_by_action ON audit (action, id);
CREATE INDEX audit_by_approval ON audit (approval_id, id) WHERE approval_id IS NOT NULL;
CREATE INDEX audit_by_at ON audit (at);

-- Retention (Store::prune): events and audit rows stay append-only except inside the
-- prune transaction, which inserts a row into `prune_guard`, deletes what the retention
-- window allows and deletes the row again before committing: no other transaction ever
-- sees the row, so every other DELETE is still refused. UPDATE is always refused.
CREATE TABLE prune_guard (
    id BIGINT PRIMARY KEY CHECK (id = 1)
);

CREATE FUNCTION pp_append_only() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM prune_guard) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION pp_append_only();
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION pp_append_only();

-- Console logins: only the SHA-256 of the login id is stored.
CREATE TABLE console_logins (
    id_sha256  TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX console_logins_by_expiry ON console_logins (expires_at);

-- Chat sessions and their turns (one turn = one task).
CREATE TABLE chat_sessions (
    ord                BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                 TEXT COLLATE "C" PRIMARY KEY,
    title              TEXT,
    workspace          TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    summary            TEXT,
    summarised_through BIGINT NOT NULL DEFAULT 0 CHECK (summarised_through >= 0)
);

CREATE TABLE session_turns (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    turn_index BIGINT NOT NULL CHECK (turn_index >= 1),
    task_id    TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES tasks (id),
    messages   TEXT,
    PRIMARY KEY (session_id, turn_index)
);

-- The change log (SQLite 0005 and 0006).
CREATE TABLE changes (
    ord               BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                TEXT COLLATE "C" PRIMARY KEY,
    task_id           TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    approval_id       TEXT COLLATE "C",
    tool              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('created', 'overwritten', 'edited',
                          'reverted', 'effects_unknown', 'moved', 'deleted',
                          'folder_created')),
    path              TEXT,
    root              TEXT NOT NULL DEFAULT 'workspace' CHECK (root IN ('workspace',
                          'memory')),
    bytes             BIGINT CHECK (bytes >= 0),
    at                BIGINT NOT NULL,
    before_state      TEXT NOT NULL CHECK (before_state IN ('absent', 'kept', 'not_kept',
                          'expired', 'none', 'folder')),
    before_sha256     TEXT,
    after_fingerprint TEXT,
    after_sha256      TEXT,
    reverts           TEXT COLLATE "C" REFERENCES changes (id),
    reverted_by       TEXT COLLATE "C" REFERENCES changes (id),
    state             TEXT NOT NULL DEFAULT 'done' CHECK (state IN ('done', 'pending',
                          'abandoned')),
    from_path         TEXT CHECK (from_path IS NULL OR kind = 'moved')
);

CREATE INDEX changes_by_task ON changes (task_id, ord);
CREATE INDEX changes_by_approval ON changes (approval_id) WHERE approval_id IS NOT NULL;
CREATE INDEX changes_pending ON changes (state) WHERE state = 'pending';
CREATE INDEX changes_by_reverts ON changes (reverts) WHERE reverts IS NOT NULL;

-- Token accounting: one row per model call (SQLite 0007).
CREATE TABLE model_calls (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id           TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    step              BIGINT NOT NULL CHECK (step >= 0),
    model             TEXT NOT NULL,
    reported          BOOLEAN NOT NULL,
    prompt_tokens     BIGINT NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens BIGINT NOT NULL CHECK (completion_tokens >= 0),
    cached_tokens     BIGINT NOT NULL CHECK (cached_tokens >= 0),
    reasoning_tokens  BIGINT NOT NULL CHECK (reasoning_tokens >= 0),
    cost              DOUBLE PRECISION CHECK (cost >= 0),
    currency          TEXT COLLATE "C" CHECK ((cost IS NULL) = (currency IS NULL)),
    at                BIGINT NOT NULL
);

CREATE INDEX model_calls_by_task ON model_calls (task_id);

-- Schedules and their history (SQLite 0008). Firing an occurrence is a compare-and-set
-- on `next_fire_at`.
CREATE TABLE schedules (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL UNIQUE,
    cron          TEXT NOT NULL,
    time_zone     TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    session       TEXT,
    overlap       TEXT NOT NULL CHECK (overlap IN ('skip', 'queue')),
    enabled       BOOLEAN NOT NULL,
    paused_reason TEXT,
    created_by    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    last_fired_at BIGINT,
    next_fire_at  BIGINT,
    last_task_id  TEXT COLLATE "C"
);

CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE enabled;

CREATE TABLE schedule_history (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id TEXT COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('schedule_fired', 'schedule_skipped',
                    'schedule_missed', 'schedule_paused')),
    occurrence  BIGINT,
    at          BIGINT NOT NULL,
    missed      BIGINT NOT NULL DEFAULT 0 CHECK (missed >= 0),
    task_id     TEXT COLLATE "C",
    detail      TEXT
);

CREATE INDEX schedule_history_by_schedule ON schedule_history (schedule_id, id);

CREATE FUNCTION pp_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'schedule history is append-only';
END;
$$;

CREATE TRIGGER schedule_history_append_only BEFORE UPDATE ON schedule_history
    FOR EACH ROW EXECUTE FUNCTION pp_history_append_only();

-- Webhook channels, their delivery log and the seen-signature record (SQLite 0010).
CREATE TABLE channels (
    name          TEXT COLLATE "C" PRIMARY KEY,
    template      TEXT,
    workspace     TEXT,
    enabled       BOOLEAN NOT NULL,
    secret_sealed BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    rotated_at    BIGINT
);

CREATE TABLE channel_deliveries (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel TEXT COLLATE "C" NOT NULL REFERENCES channels (name) ON DELETE CASCADE,
    at      BIGINT NOT NULL,
    status  TEXT NOT NULL CHECK (status IN ('accepted', 'refused', 'rate_limited')),
    reason  TEXT,
    task_id TEXT COLLATE "C"
);

CREATE INDEX channel_deliveries_by_channel ON channel_deliveries (channel, id);

CREATE TABLE webhook_signatures (
    key        TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE INDEX webhook_signatures_expiry ON webhook_signatures (expires_at);
