-- Approval links, as SQLite's 0020: a single-use URL deciding one approval. Only the
-- token's SHA-256 is stored; the link is bound to its approval, the target's precheck
-- fingerprint when it was made and (team mode) the user who made it, and ends exactly
-- once (`ended_at` and `ended` set together by a compare-and-set).
CREATE TABLE approval_links (
    token_sha256 TEXT COLLATE "C" PRIMARY KEY,
    approval_id  TEXT COLLATE "C" NOT NULL REFERENCES approvals (id),
    fingerprint  TEXT,
    user_name    TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    ended_at     BIGINT,
    ended        TEXT CHECK (ended IN ('used', 'changed', 'forbidden', 'revoked', 'expired', 'decided')),
    CHECK ((ended_at IS NULL) = (ended IS NULL))
);
CREATE INDEX approval_links_by_approval ON approval_links (approval_id);
CREATE INDEX approval_links_by_user ON approval_links (user_name);
