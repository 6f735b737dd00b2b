//! Event streams: `GET /api/tasks/{id}/events` and `GET /api/events`, as JSON or SSE.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use pp_types::TaskId;
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery, limit};
use crate::sse::{self, Source};
use crate::state::AppState;

/// The events query: the sequence number to start after.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    after: Option<i64>,
    limit: Option<usize>,
}

/// One task's events after `?after=` (default: from the start). With
/// `Accept: text/event-stream` a live stream that resumes after `Last-Event-ID`.
pub(crate) async fn task_events(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = TaskId(id);
    let store = state.service().store();
    store.task(&id)?;
    let after = sse::last_event_id(&headers)?.or(query.after).unwrap_or(0);
    if sse::wants_event_stream(&headers) {
        return Ok(sse::stream(state, Source::Task(id), after).into_response());
    }
    let events = store.task_events(&id, after)?;
    Ok(Json(json!({ "events": events })).into_response())
}

/// Every task's events. As SSE (`Accept: text/event-stream`) it starts after
/// `Last-Event-ID`, else after `?after=`, else at the newest event (live only, so a new
/// console tab does not replay the whole history). As JSON it returns up to `?limit=`
/// events after `?after=` (default 0).
pub(crate) async fn all_events(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let store = state.service().store();
    let resume = sse::last_event_id(&headers)?.or(query.after);
    if sse::wants_event_stream(&headers) {
        let after = match resume {
            Some(after) => after,
            None => store.last_seq()?,
        };
        return Ok(sse::stream(state, Source::All, after).into_response());
    }
    let limit = limit(query.limit, 500, 5000)?;
    let events = store.events_after(resume.unwrap_or(0), limit)?;
    Ok(Json(json!({ "events": events })).into_response())
}
