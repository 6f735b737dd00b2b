//! `/api/changesets`: the approval-needing calls of one model turn, reviewed and decided
//! together (each call still its own approval and decision).

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_tasks::{ChangesetDecision, ChangesetView, Decision};
use pp_types::{Actor, ApprovalId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::{Caller, Visibility, hidden};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::routes::approvals::{ResolveQuery, not_granted};
use crate::state::AppState;

/// `POST /api/changesets/{id}/resolve` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveBody {
    decisions: Vec<DecisionBody>,
}

/// One decision of [`ResolveBody`], as the body of a single resolve plus the approval.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    approval_id: String,
    decision: Decision,
    #[serde(default)]
    edited_arguments: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    seen_fingerprint: Option<String>,
}

/// A changeset with every card, each pending one pre-checked; visible to whoever may
/// read its task's approvals (as `GET /api/approvals/{id}`).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ChangesetView>> {
    let mut view = state.service().changeset_view(&id).await?;
    let mut visibility = Visibility::new(caller);
    if !visibility.sees(&state, &view.task_id).await {
        return Err(hidden("changeset", &id));
    }
    if !visibility.reads_workspace(&state, &view.task_id).await {
        view.approvals.iter_mut().for_each(not_granted);
    }
    Ok(Json(view))
}

/// Decides several calls of a changeset at once: `202` with one result per decision
/// (also when none was accepted); with `?wait=true`, `200` once the resumed run ends or
/// pauses again. `400` when a decision names an approval outside the changeset or one
/// approval twice; `404` for an unknown changeset. Each decision follows the rules of
/// `POST /api/approvals/{id}/resolve`, team roles included.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ResolveQuery>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let decisions = body
        .decisions
        .into_iter()
        .map(|decision| ChangesetDecision {
            approval_id: ApprovalId(decision.approval_id),
            decision: decision.decision,
            edited_arguments: decision.edited_arguments,
            reason: decision.reason,
            seen_fingerprint: decision.seen_fingerprint,
        })
        .collect();
    let results = state
        .service()
        .resolve_changeset(
            &id,
            decisions,
            Actor::Operator,
            Some(caller.via()),
            Some(&caller),
            query.wait,
        )
        .await?;
    let status = if query.wait {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(json!({ "results": results }))))
}
