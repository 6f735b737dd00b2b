-- The change log (issue 11): what approved calls did to files, and the operator's
-- reverts. Snapshot contents live outside the database, content-addressed by SHA-256 in
-- the data directory's `snapshots/`; rows name them by hash.
--
-- `before_state`: what the file held before the change —
--   `absent` (nothing: a revert deletes the file), `kept` (`before_sha256` names the
--   blob), `not_kept` (too large, unreadable, or the blob could not be stored), `expired`
--   (`[revert] retain_days` pruned the blob), `none` (no snapshot: effects unknown).
-- `root`: what `path` is relative to — `workspace` (the task's workspace) or `memory`
--   (the data directory holding `memory.md`, for `memory_write`).
-- `after_fingerprint`: the jail's fingerprint of the file right after the change; a
--   revert refuses when the file no longer has it.
-- `after_sha256`: the blob of the content right after the change, when kept (the diff
--   a refused revert shows; the agent's version a revert keeps).
-- `state`: `done`, or `pending` for a revert whose file write may or may not have
--   happened (the intent, written before the write; resolved on the next read), or
--   `abandoned` (an intent whose write never happened; hidden).

CREATE TABLE changes (
    id                TEXT PRIMARY KEY NOT NULL,
    task_id           TEXT NOT NULL REFERENCES tasks (id),
    approval_id       TEXT,
    tool              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('created', 'overwritten', 'edited',
                          'reverted', 'effects_unknown')),
    path              TEXT,
    root              TEXT NOT NULL DEFAULT 'workspace' CHECK (root IN ('workspace',
                          'memory')),
    bytes             INTEGER CHECK (bytes >= 0),
    at                INTEGER NOT NULL,
    before_state      TEXT NOT NULL CHECK (before_state IN ('absent', 'kept', 'not_kept',
                          'expired', 'none')),
    before_sha256     TEXT,
    after_fingerprint TEXT,
    after_sha256      TEXT,
    reverts           TEXT REFERENCES changes (id),
    reverted_by       TEXT REFERENCES changes (id),
    state             TEXT NOT NULL DEFAULT 'done' CHECK (state IN ('done', 'pending',
                          'abandoned'))
) STRICT;

CREATE INDEX changes_by_task ON changes (task_id);
CREATE INDEX changes_by_approval ON changes (approval_id) WHERE approval_id IS NOT NULL;
CREATE INDEX changes_pending ON changes (state) WHERE state = 'pending';

-- Whether what an approval's call would replace can be kept for a revert, decided when
-- the approval is requested (NULL: the tool has no file effect).
ALTER TABLE approvals ADD COLUMN revertible INTEGER;
