//! The audit rows of the operator's own changes (skills, memory): the one store call the
//! operator services make, behind [`OperatorAudit`]. In team mode the rows name the
//! team user who made the change ([`OperatorAudit::as_user`]).

use pp_store::Store;
use pp_types::{Actor, AuditAction, NewAudit};

use crate::error::Result;

/// The store as the operator services see it: appending their audit rows, nothing else.
#[derive(Clone)]
pub(crate) struct OperatorAudit {
    store: Store,
    /// The team user the rows name (team mode), if any.
    user: Option<String>,
}

impl OperatorAudit {
    pub(crate) fn new(store: Store) -> Self {
        Self { store, user: None }
    }

    /// The same rows, naming the team user `user` (team mode; `None`: the operator).
    pub(crate) fn as_user(&self, user: Option<&str>) -> Self {
        Self {
            store: self.store.clone(),
            user: user.map(str::to_owned),
        }
    }

    /// Records `action` on `target` by the operator (no approval card: the operator is
    /// the person approvals ask).
    pub(crate) async fn record(
        &self,
        action: AuditAction,
        target: String,
        detail: String,
    ) -> Result<()> {
        self.store
            .append_audit(NewAudit {
                actor: Some(Actor::Operator),
                target: Some(target),
                detail: Some(detail),
                user: self.user.clone(),
                ..NewAudit::new(action)
            })
            .await?;
        Ok(())
    }
}
