//! The audit rows of the operator's own changes (skills, memory): the one store call the
//! operator services make, behind [`OperatorAudit`].

use pp_store::Store;
use pp_types::{Actor, AuditAction, NewAudit};

use crate::error::Result;

/// The store as the operator services see it: appending their audit rows, nothing else.
#[derive(Clone)]
pub(crate) struct OperatorAudit(Store);

impl OperatorAudit {
    pub(crate) fn new(store: Store) -> Self {
        Self(store)
    }

    /// Records `action` on `target` by the operator (no approval card: the operator is
    /// the person approvals ask).
    pub(crate) async fn record(
        &self,
        action: AuditAction,
        target: String,
        detail: String,
    ) -> Result<()> {
        self.0
            .append_audit(NewAudit {
                actor: Some(Actor::Operator),
                target: Some(target),
                detail: Some(detail),
                ..NewAudit::new(action)
            })
            .await?;
        Ok(())
    }
}
