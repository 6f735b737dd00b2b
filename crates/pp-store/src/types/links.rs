//! Approval links: a single-use URL that decides one approval (`docs/remote.md`).

use std::time::Duration;

use pp_types::{ApprovalId, Timestamp};

/// A link to create ([`crate::Store::create_approval_link`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApprovalLink {
    /// The one approval the link decides.
    pub approval_id: ApprovalId,
    /// The precheck fingerprint of the target when the link was made: the only state a
    /// decision through the link may approve (`None`: the tool reports no target).
    pub fingerprint: Option<String>,
    /// Team mode: the user the link acts as (who must still be allowed to decide when it
    /// is used); `None` in single-user mode.
    pub user: Option<String>,
    /// How long the link lasts.
    pub ttl: Duration,
}

/// A link as stored (the token itself is not: only its SHA-256).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalLink {
    /// The approval it decides.
    pub approval_id: ApprovalId,
    /// The fingerprint it is bound to.
    pub fingerprint: Option<String>,
    /// The team user it is bound to.
    pub user: Option<String>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it stops working.
    pub expires_at: Timestamp,
    /// When it ended (`None`: open, though perhaps past `expires_at`).
    pub ended_at: Option<Timestamp>,
    /// How it ended.
    pub ended: Option<LinkEnd>,
}

impl ApprovalLink {
    /// Whether it is past its expiry at `now`.
    pub fn expired_at(&self, now: Timestamp) -> bool {
        self.expires_at <= now
    }
}

pp_types::wire_enum! {
    /// How a link ended; each link ends exactly once.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum LinkEnd {
        /// Its decision was accepted (its first `202`).
        Used => "used",
        /// The target no longer had the bound fingerprint (`409 changed_since_seen`).
        Changed => "changed",
        /// The bound user could no longer decide (`403`).
        Forbidden => "forbidden",
        /// Revoked: `approvals unlink`, or its user was removed.
        Revoked => "revoked",
        /// Past its expiry when it was used.
        Expired => "expired",
        /// Its approval was decided another way first.
        Decided => "decided",
    }
}
