-- Team users and roles, as SQLite's 0012 (docs/team.md). A user's token is never stored:
-- only its SHA-256 (hex), like console logins. `role` is one of owner, approver, member,
-- viewer. Names use the "C" collation: byte order, as SQLite.
CREATE TABLE users (
    name         TEXT COLLATE "C" PRIMARY KEY,
    role         TEXT NOT NULL CHECK (role IN ('owner', 'approver', 'member', 'viewer')),
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    rotated_at   BIGINT
);

-- The workspaces (by configured name) a user may work in. Removing a user removes its
-- grants.
CREATE TABLE user_grants (
    user_name  TEXT COLLATE "C" NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    workspace  TEXT COLLATE "C" NOT NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (user_name, workspace)
);

-- Who is behind a console login (NULL: the single-user token's login), so rotating a
-- user's token ends that user's logins.
ALTER TABLE console_logins ADD COLUMN user_name TEXT COLLATE "C";
CREATE INDEX console_logins_by_user ON console_logins (user_name);

-- Which team user created a task or a chat session, resolved an approval, or acted in
-- an audit row (NULL in single-user mode and for schedules, webhooks, MCP clients).
ALTER TABLE tasks ADD COLUMN created_by_user TEXT COLLATE "C";
ALTER TABLE chat_sessions ADD COLUMN created_by_user TEXT COLLATE "C";
ALTER TABLE approvals ADD COLUMN resolved_by_user TEXT COLLATE "C";
ALTER TABLE audit ADD COLUMN user_name TEXT COLLATE "C";
