-- Remote decisions through a messenger, as SQLite's 0021 (issue 30, docs/remote.md).
-- The card messages a bot sent: each bound to one approval and to the precheck
-- fingerprint of its target when it was sent; a tap counts only if it names a stored
-- (messenger, chat, message) and carries the row's random `callback_id`. `decided_at` is
-- set once, by whoever settled the card first (a tap, or the sweep that edits a card
-- decided elsewhere).
CREATE TABLE remote_messages (
    messenger    TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    approval_id  TEXT NOT NULL,
    fingerprint  TEXT,
    callback_id  TEXT NOT NULL,
    sent_at      BIGINT NOT NULL,
    decided_at   BIGINT,
    outcome      TEXT,
    PRIMARY KEY (messenger, chat_id, message_id)
);
CREATE INDEX remote_messages_approval ON remote_messages (messenger, approval_id);
CREATE INDEX remote_messages_live ON remote_messages (messenger) WHERE decided_at IS NULL;

-- Where each messenger's update stream was read up to (Telegram's getUpdates offset), so
-- a restart does not replay taps, and when it was last read (a tap read after a longer gap
-- may be older than a tap may be).
CREATE TABLE remote_offsets (
    messenger    TEXT PRIMARY KEY,
    next_offset  BIGINT NOT NULL,
    polled_at    BIGINT NOT NULL
);

-- One poller per messenger across processes: the holder renews its lease; another may
-- take it once it expired.
CREATE TABLE remote_leases (
    messenger    TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    expires_at   BIGINT NOT NULL
);

-- Refused taps are audited at most once per chat per window.
CREATE TABLE remote_refusals (
    messenger    TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    audited_at   BIGINT NOT NULL,
    PRIMARY KEY (messenger, chat_id)
);
