-- Chat sessions. "Session" now means one thing: a conversation. The console login table
-- `sessions` becomes `console_logins` (its rows are kept: nobody is logged out by the
-- upgrade; the audit action `console_login` is unchanged).

ALTER TABLE sessions RENAME TO console_logins;
DROP INDEX sessions_by_expiry;
CREATE INDEX console_logins_by_expiry ON console_logins (expires_at);

-- A conversation in one workspace. `summary` is the model's summary of turns
-- 1..=`summarised_through` (0: no summary yet); those turns stay in `session_turns`.
CREATE TABLE chat_sessions (
    id                 TEXT PRIMARY KEY NOT NULL,
    title              TEXT,
    workspace          TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    summary            TEXT,
    summarised_through INTEGER NOT NULL DEFAULT 0 CHECK (summarised_through >= 0)
) STRICT;

-- One turn = one task. `messages` is the turn's own part of the conversation (its user
-- message, the model's turns and the tool results; JSON `[pp_types::Message]`), written
-- when the turn's task ends; NULL while it runs or when it ended without one
-- (cancelled, timed out). Deleting a session deletes its turns, never their tasks.
CREATE TABLE session_turns (
    session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL CHECK (turn_index >= 1),
    task_id    TEXT NOT NULL UNIQUE REFERENCES tasks (id),
    messages   TEXT,
    PRIMARY KEY (session_id, turn_index)
) STRICT;
