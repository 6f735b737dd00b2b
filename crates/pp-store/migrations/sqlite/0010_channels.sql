-- Webhook channels (issue 13): a named URL (`POST /api/channels/{name}/webhook`) that a
-- form service or another machine posts to, authenticated by an HMAC-SHA256 signature
-- with the channel's secret. Every accepted delivery becomes a task created by the
-- `webhook` actor whose origin is the channel name.
--
-- `secret_sealed`: the 256-bit secret, encrypted (ChaCha20-Poly1305; 12-byte nonce then
-- ciphertext and tag) with a key kept in a 0600 file beside the database, never in it:
-- a copy of the database alone does not let anyone sign deliveries. pp-tasks seals and
-- opens it; the store only keeps the bytes.
-- `template`: how a delivery becomes the prompt (`{{body}}`, `{{json.field}}`); NULL for
-- the default. `workspace`: a configured workspace's name; NULL for the default.
CREATE TABLE channels (
    name          TEXT PRIMARY KEY NOT NULL,
    template      TEXT,
    workspace     TEXT,
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    secret_sealed BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    rotated_at    INTEGER
) STRICT;

-- What happened to each delivery to a known channel: accepted (with its task), refused
-- (with the reason, kept here and never sent to the sender) or rate limited. The newest
-- rows per channel are kept (pp-store trims older ones); removing a channel removes them.
CREATE TABLE channel_deliveries (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL REFERENCES channels (name) ON DELETE CASCADE,
    at      INTEGER NOT NULL,
    status  TEXT NOT NULL CHECK (status IN ('accepted', 'refused', 'rate_limited')),
    reason  TEXT,
    task_id TEXT
) STRICT;

CREATE INDEX channel_deliveries_by_channel ON channel_deliveries (channel, id);

-- Signatures seen inside the replay window, under a unique key (channel and signature),
-- kept until the window ends: the insert of a replay fails in whichever process gets it,
-- so two servers on one database refuse the same replay.
CREATE TABLE webhook_signatures (
    key        TEXT PRIMARY KEY NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX webhook_signatures_expiry ON webhook_signatures (expires_at);
