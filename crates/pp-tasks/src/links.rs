//! Approval links (`docs/remote.md`): a single-use URL that decides one approval from
//! anywhere, bound to the target's precheck fingerprint when it was made and, in team
//! mode, to the user who made it. The token is random (256 bits) and stored only as a
//! hash; a link decides through the one resolve path ([`TaskService::resolve`]) with
//! `seen_fingerprint` = its fingerprint and `via: link`, so it can approve nothing but
//! that one call on that one state of its target.

use std::time::Duration;

use pp_store::{ApprovalLink, LinkEnd, NewApprovalLink};
use pp_types::{ApprovalId, ApprovalRecord, ApprovalState, Role, TaskRecord, Timestamp, Via};
use serde::Serialize;

use crate::access::{Action, Caller};
use crate::error::{Error, Result};
use crate::resolve::{Decision, ResolveRequest};
use crate::service::TaskService;
use crate::view::ApprovalView;

/// How long a link lasts unless told otherwise: 30 minutes.
pub const LINK_TTL_DEFAULT: Duration = Duration::from_secs(1800);

/// The longest a link may last: one day.
pub const LINK_TTL_MAX: Duration = Duration::from_secs(86_400);

/// A link just made: its token (shown once, never stored) and when it stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedLink {
    /// The secret part of the URL (`/d/{token}`): 64 hex characters.
    pub token: String,
    /// The approval it decides.
    pub approval_id: ApprovalId,
    /// When it stops working.
    pub expires_at: Timestamp,
}

/// What a link's page shows (`GET /api/links/{token}`): the one card, read-only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkView {
    /// The card, as `GET /api/approvals/{id}` shows it (with its precheck).
    pub approval: ApprovalView,
    /// When the link stops working.
    pub expires_at: Timestamp,
    /// Whether the link may approve this call (`[remote] approve_capabilities`); it may
    /// always reject.
    pub approvable: bool,
    /// Why it may not approve: "approve this in the console or the terminal".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve_refusal: Option<String>,
    /// The target is no longer in the state the link was made for: a decision through
    /// the link is refused with `changed_since_seen` (open the console instead).
    pub changed_since_link: bool,
}

impl TaskService {
    /// Makes a link deciding pending approval `id` for `caller`, lasting `ttl`
    /// ([`LINK_TTL_DEFAULT`] when `None`; at most [`LINK_TTL_MAX`], at least a second:
    /// [`Error::BadRequest`] otherwise). The link is bound to the target's precheck
    /// fingerprint now and, in team mode, to the caller, who must be allowed to decide
    /// the approval now ([`Action::Resolve`]). A decided approval is
    /// [`Error::AlreadyResolved`].
    pub async fn create_link(
        &self,
        id: &ApprovalId,
        ttl: Option<Duration>,
        caller: &Caller,
    ) -> Result<CreatedLink> {
        let ttl = ttl.unwrap_or(LINK_TTL_DEFAULT);
        if ttl < Duration::from_secs(1) || ttl > LINK_TTL_MAX {
            return Err(Error::BadRequest(format!(
                "a link lasts from 1 to {} seconds, not {}",
                LINK_TTL_MAX.as_secs(),
                ttl.as_secs()
            )));
        }
        let store = self.store();
        let approval = store.approval(id).await?;
        let task = store.task(&approval.task_id).await?;
        self.authorize(caller, Action::Resolve(&task)).await?;
        if self.inner.shared.settings.team.is_some() && caller.user.is_none() {
            return Err(Error::Unauthorized(
                "in team mode a link is made by a user (--user NAME), who must be allowed \
                 to decide it when it is used"
                    .into(),
            ));
        }
        if approval.state != ApprovalState::Pending {
            return Err(Error::AlreadyResolved {
                id: id.to_string(),
                state: approval.state,
            });
        }
        let fingerprint = self
            .precheck(id, None)
            .await?
            .and_then(|precheck| precheck.fingerprint);
        let (link, token) = store
            .create_approval_link(NewApprovalLink {
                approval_id: id.clone(),
                fingerprint,
                user: caller.user.clone(),
                ttl,
            })
            .await?;
        Ok(CreatedLink {
            token,
            approval_id: link.approval_id,
            expires_at: link.expires_at,
        })
    }

    /// The card a link shows, read-only: it never decides, consumes or ends the link.
    /// [`Error::NotFound`] for an unknown token, [`Error::Gone`] for a link that ended,
    /// expired or whose approval was decided (saying by whom and how),
    /// [`Error::Forbidden`] when (team mode) the link's user may no longer decide it.
    pub async fn link_card(&self, token: &str) -> Result<LinkView> {
        let (link, approval) = self.open_link(token, false).await?;
        if let Some(name) = &link.user {
            // Team mode: what the link's user may no longer decide, its link no longer
            // shows (reading ends nothing: the decision request does that).
            let task = self.store().task(&approval.task_id).await?;
            self.authorize(&bound_caller(name), Action::Resolve(&task))
                .await
                .map_err(forbidden)?;
        }
        let card = self.approval_view_checked(&approval.id).await?;
        let current = card
            .precheck
            .as_ref()
            .and_then(|precheck| precheck.fingerprint.clone());
        let changed_since_link = link.fingerprint.is_some() && current != link.fingerprint;
        let approve_refusal = self.remote_refusal(&approval);
        Ok(LinkView {
            approval: card,
            expires_at: link.expires_at,
            approvable: approve_refusal.is_none(),
            approve_refusal,
            changed_since_link,
        })
    }

    /// Decides the link's approval, exactly once, through the one resolve path (with the
    /// link's fingerprint as `seen_fingerprint` and `via: link`). The link ends with its
    /// first accepted decision (`used`), with a [`Error::ChangedSinceSeen`] (`changed`:
    /// nothing ran) and with a [`Error::Forbidden`] for its user (`forbidden`: in team
    /// mode the bound user must still be allowed to decide). An approve the link may not
    /// make ([`Error::NotRemotelyApprovable`]) leaves it open: it may still reject.
    /// [`Error::Gone`] for a used, expired, revoked or otherwise decided link.
    pub async fn resolve_link(
        &self,
        token: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<TaskRecord> {
        let store = self.store();
        let (link, approval) = self.open_link(token, true).await?;
        let caller = match &link.user {
            None => None,
            Some(name) => {
                let task = store.task(&approval.task_id).await?;
                let caller = bound_caller(name);
                if let Err(error) = self.authorize(&caller, Action::Resolve(&task)).await {
                    store
                        .end_approval_link(token, LinkEnd::Forbidden, None)
                        .await?;
                    return Err(forbidden(error));
                }
                Some(caller)
            }
        };
        if decision == Decision::Approve
            && let Some(message) = self.remote_refusal(&approval)
        {
            return Err(Error::NotRemotelyApprovable(message));
        }
        // The claim: of two requests with one link, one goes on.
        if !store.end_approval_link(token, LinkEnd::Used, None).await? {
            return Err(match self.open_link(token, false).await {
                Ok(_) => Error::Gone("this link was just used".into()),
                Err(error) => error,
            });
        }
        let request = ResolveRequest {
            decision,
            edited_arguments: None,
            reason,
            seen_fingerprint: link.fingerprint.clone(),
            actor: pp_types::Actor::Operator,
            wait: false,
            via: Some(Via::Link),
            remote_user: None,
        };
        let resolved = match &caller {
            Some(caller) => self.resolve_for(&approval.id, request, caller).await,
            None => self.resolve(&approval.id, request).await,
        };
        let corrected = match &resolved {
            Ok(_) => None,
            Err(Error::ChangedSinceSeen(_)) => Some(LinkEnd::Changed),
            Err(Error::Forbidden(_) | Error::Unauthorized(_) | Error::NotRemotelyApprovable(_)) => {
                Some(LinkEnd::Forbidden)
            }
            Err(Error::AlreadyResolved { .. } | Error::InvalidState { .. }) => {
                Some(LinkEnd::Decided)
            }
            Err(_) => None,
        };
        if let Some(end) = corrected {
            store
                .end_approval_link(token, end, Some(LinkEnd::Used))
                .await?;
        }
        match resolved {
            Err(Error::AlreadyResolved { .. } | Error::InvalidState { .. }) => {
                let approval = store.approval(&approval.id).await?;
                Err(Error::Gone(decided(&approval)))
            }
            Err(error @ Error::Unauthorized(_)) => Err(forbidden(error)),
            other => other,
        }
    }

    /// Revokes every open link of approval `id` (`approvals unlink`), for `caller`, who
    /// must be allowed to decide it; how many were revoked.
    pub async fn unlink(&self, id: &ApprovalId, caller: &Caller) -> Result<usize> {
        let store = self.store();
        let approval = store.approval(id).await?;
        let task = store.task(&approval.task_id).await?;
        self.authorize(caller, Action::Resolve(&task)).await?;
        Ok(store.revoke_approval_links(id).await?)
    }

    /// The link `token` and its approval, if the link may still decide: open, not
    /// expired, and its approval pending. With `record`, an expired link is ended
    /// `expired` on the way (a decision's request; reading a card writes nothing).
    async fn open_link(&self, token: &str, record: bool) -> Result<(ApprovalLink, ApprovalRecord)> {
        let store = self.store();
        let unknown = || Error::NotFound {
            what: "link",
            id: "(this link)".into(),
        };
        // A token is 64 hex characters: anything else is not looked up at all.
        if token.len() != 64 || !token.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(unknown());
        }
        let link = store.approval_link(token).await?.ok_or_else(unknown)?;
        let approval = store.approval(&link.approval_id).await?;
        if let Some(end) = link.ended {
            return Err(Error::Gone(ended(end, &approval)));
        }
        if link.expired_at(store.clock().now()) {
            if record {
                store
                    .end_approval_link(token, LinkEnd::Expired, None)
                    .await?;
            }
            return Err(Error::Gone(format!(
                "this link expired at {}; make a new one, or open the console",
                link.expires_at
            )));
        }
        if approval.state != ApprovalState::Pending {
            return Err(Error::Gone(decided(&approval)));
        }
        Ok((link, approval))
    }
}

/// The bound user as a caller: [`TaskService::authorize`] reads their role and grants
/// from the store at that moment, so only the name counts here.
fn bound_caller(name: &str) -> Caller {
    Caller {
        user: Some(name.to_owned()),
        role: Role::Viewer,
        workspaces: Vec::new(),
    }
}

/// A link's user who may no longer decide (or no longer exists): `403`.
fn forbidden(error: Error) -> Error {
    match error {
        Error::Unauthorized(message) | Error::Forbidden(message) => Error::Forbidden(format!(
            "the user this link was made for may no longer decide this approval: {message}"
        )),
        other => other,
    }
}

/// Why an ended link no longer decides, for its page.
fn ended(end: LinkEnd, approval: &ApprovalRecord) -> String {
    let how = match end {
        LinkEnd::Used | LinkEnd::Decided => return decided(approval),
        LinkEnd::Changed => "its target changed after the link was made; nothing ran",
        LinkEnd::Forbidden => "its user may no longer decide this approval",
        LinkEnd::Revoked => "it was revoked",
        LinkEnd::Expired => "it expired",
    };
    format!("this link no longer works: {how}; open the console")
}

/// "approved via console by ana at …": how and by whom an approval was decided.
fn decided(approval: &ApprovalRecord) -> String {
    let state = approval.state.as_str();
    if approval.state == ApprovalState::Pending {
        return "this link was used, but the decision did not happen; open the console".into();
    }
    let mut text = format!("this approval was already {state}");
    if let Some(via) = approval.resolved_via {
        text.push_str(&format!(" via {}", via.as_str()));
    }
    match (&approval.resolved_by_user, approval.resolved_by) {
        (Some(user), _) => text.push_str(&format!(" by {user}")),
        (None, Some(actor)) => text.push_str(&format!(" by the {}", actor.as_str())),
        (None, None) => {}
    }
    if let Some(at) = approval.resolved_at {
        text.push_str(&format!(" at {at}"));
    }
    text
}
