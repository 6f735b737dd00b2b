-- Schedules (issue 13): a prompt run in a workspace at the times of a 5-field cron
-- expression in an IANA time zone. pp-tasks parses the expression (croner) and computes
-- the times; the store keeps them and arbitrates who fires an occurrence.
--
-- `next_fire_at` is the occurrence to fire next (ms since the epoch). Firing it is a
-- compare-and-set on this column (`UPDATE ... WHERE id = ? AND next_fire_at = ?`), so
-- of two processes sharing the database exactly one fires each occurrence. NULL: the
-- schedule is paused or has no future occurrence.
-- `enabled` = 0 with a `paused_reason`: paused by the scheduler (its workspace or chat
-- session went away); without one: disabled by a person.
-- `session`: an optional chat session every fire continues (the fire is a new turn).
-- `last_task_id`: the task the latest fire created (the `skip` overlap policy looks at
-- its state). Not a foreign key: pruning may drop old tasks.

CREATE TABLE schedules (
    id            TEXT PRIMARY KEY NOT NULL,
    name          TEXT NOT NULL UNIQUE,
    cron          TEXT NOT NULL,
    time_zone     TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    session       TEXT,
    overlap       TEXT NOT NULL CHECK (overlap IN ('skip', 'queue')),
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    paused_reason TEXT,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    last_fired_at INTEGER,
    next_fire_at  INTEGER,
    last_task_id  TEXT
) STRICT;

-- The scheduler's tick: enabled schedules due by now, an index range scan.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE enabled = 1;

-- What happened to each occurrence, append-only while the schedule exists (removing a
-- schedule removes its history; the tasks it created and their audit rows stay).
-- `kind`: schedule_fired (task_id: the task created), schedule_skipped (task_id: the
-- previous task, still active), schedule_missed (`missed` occurrences passed while
-- nothing was running; `occurrence` is the first of them), schedule_paused (`detail`:
-- why). `occurrence`: the planned time; `at`: when it was recorded.
CREATE TABLE schedule_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('schedule_fired', 'schedule_skipped',
                    'schedule_missed', 'schedule_paused')),
    occurrence  INTEGER,
    at          INTEGER NOT NULL,
    missed      INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0),
    task_id     TEXT,
    detail      TEXT
) STRICT;

CREATE INDEX schedule_history_by_schedule ON schedule_history (schedule_id, id);

CREATE TRIGGER schedule_history_append_only BEFORE UPDATE ON schedule_history
BEGIN
    SELECT RAISE(ABORT, 'schedule history is append-only');
END;
