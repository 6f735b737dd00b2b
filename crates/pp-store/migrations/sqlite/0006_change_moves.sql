-- File operations (issue 14): moves, deletes and new folders in the change log.
--
-- `kind` gains `moved` (`from_path` is where the entry was, `path` where it is now),
-- `deleted` and `folder_created`. `before_state` gains `folder`: what a delete removed
-- was an empty folder (a revert creates it again). For a move, `before_state` is about
-- the destination: `absent` (nothing was replaced) or the file an overwriting move
-- replaced (`kept`, `not_kept`).
--
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt. The old one
-- is renamed first, so the self-references (`reverts`, `reverted_by`) of the copy name
-- the new table and dropping the old one deletes no row another table points to.

ALTER TABLE changes RENAME TO changes_0005;

CREATE TABLE changes (
    id                TEXT PRIMARY KEY NOT NULL,
    task_id           TEXT NOT NULL REFERENCES tasks (id),
    approval_id       TEXT,
    tool              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('created', 'overwritten', 'edited',
                          'reverted', 'effects_unknown', 'moved', 'deleted',
                          'folder_created')),
    path              TEXT,
    root              TEXT NOT NULL DEFAULT 'workspace' CHECK (root IN ('workspace',
                          'memory')),
    bytes             INTEGER CHECK (bytes >= 0),
    at                INTEGER NOT NULL,
    before_state      TEXT NOT NULL CHECK (before_state IN ('absent', 'kept', 'not_kept',
                          'expired', 'none', 'folder')),
    before_sha256     TEXT,
    after_fingerprint TEXT,
    after_sha256      TEXT,
    reverts           TEXT REFERENCES changes (id),
    reverted_by       TEXT REFERENCES changes (id),
    state             TEXT NOT NULL DEFAULT 'done' CHECK (state IN ('done', 'pending',
                          'abandoned')),
    from_path         TEXT CHECK (from_path IS NULL OR kind = 'moved')
) STRICT;

INSERT INTO changes (id, task_id, approval_id, tool, kind, path, root, bytes, at,
                     before_state, before_sha256, after_fingerprint, after_sha256,
                     reverts, reverted_by, state)
SELECT id, task_id, approval_id, tool, kind, path, root, bytes, at, before_state,
       before_sha256, after_fingerprint, after_sha256, reverts, reverted_by, state
FROM changes_0005 ORDER BY rowid;

DROP TABLE changes_0005;

CREATE INDEX changes_by_task ON changes (task_id);
CREATE INDEX changes_by_approval ON changes (approval_id) WHERE approval_id IS NOT NULL;
CREATE INDEX changes_pending ON changes (state) WHERE state = 'pending';
