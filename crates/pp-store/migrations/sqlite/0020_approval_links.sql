-- Approval links (issue 30): a single-use URL that decides one approval from anywhere.
-- The token is never stored, only its SHA-256 (hex), like a console login's id. A link is
-- bound to its approval, to the precheck fingerprint of the target when it was made and,
-- in team mode, to the user who made it. It ends exactly once (`ended_at` and `ended` are
-- set together by a compare-and-set): `used` by its decision, `changed` when the target no
-- longer has the bound fingerprint, `forbidden` when the bound user may no longer decide,
-- `revoked` (unlink, the bound user removed), `expired`, or `decided` when the approval
-- was decided another way first.
CREATE TABLE approval_links (
    token_sha256 TEXT PRIMARY KEY NOT NULL,
    approval_id  TEXT NOT NULL REFERENCES approvals (id),
    fingerprint  TEXT,
    user_name    TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    ended_at     INTEGER,
    ended        TEXT CHECK (ended IN ('used', 'changed', 'forbidden', 'revoked', 'expired', 'decided')),
    CHECK ((ended_at IS NULL) = (ended IS NULL))
) STRICT;
CREATE INDEX approval_links_by_approval ON approval_links (approval_id);
CREATE INDEX approval_links_by_user ON approval_links (user_name);
