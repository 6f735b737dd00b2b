//! Event streams: `GET /api/tasks/{id}/events` and `GET /api/events`, as JSON or SSE.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use pp_types::TaskId;
use serde::Deserialize;
use serde_json::json;

use crate::caller::{Caller, Visibility};
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery, limit};
use crate::sse::{self, Source};
use crate::state::AppState;

/// Events one JSON page holds when `?limit=` is absent.
const DEFAULT_PAGE: usize = 500;
/// The most events one JSON page may hold.
const MAX_PAGE: usize = 5000;

/// The events query: the sequence number to start after and the page size.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    after: Option<i64>,
    limit: Option<usize>,
}

/// One task's events after `?after=` (default: from the start), at most `?limit=`
/// (default 500, at most 5000) per page: `{"events": […], "next_after": seq | null}`,
/// where `next_after` is the `after` of the next page when more events follow. With
/// `Accept: text/event-stream` a live stream that resumes after `Last-Event-ID`.
pub(crate) async fn task_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = TaskId(id);
    let resume = sse::last_event_id(&headers)?.or(query.after);
    let after = resume.unwrap_or(0);
    caller.visible_task(&state, &id).await?;
    if sse::wants_event_stream(&headers) {
        return Ok(sse::stream(state, Source::Task(id), after, None).into_response());
    }
    let limit = limit(query.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let page = state.service().task_events_page(&id, after, limit).await?;
    Ok(Json(json!({ "events": page.events, "next_after": page.next_after })).into_response())
}

/// Every task's events. As SSE (`Accept: text/event-stream`) it starts after
/// `Last-Event-ID`, else after `?after=`, else at the newest event (live only, so a new
/// console tab does not replay the whole history). As JSON it returns up to `?limit=`
/// events after `?after=` (default 0). Either way, only events of tasks the caller may
/// see (team mode; a JSON page may then hold fewer than `limit`).
pub(crate) async fn all_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let service = state.service();
    let resume = sse::last_event_id(&headers)?.or(query.after);
    let mut visibility = Visibility::new(caller);
    if sse::wants_event_stream(&headers) {
        let after = match resume {
            Some(after) => after,
            None => service.last_seq().await?,
        };
        let filter = (!visibility.sees_all()).then_some(visibility);
        return Ok(sse::stream(state, Source::All, after, filter).into_response());
    }
    let limit = limit(query.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let mut events = service.events_after(resume.unwrap_or(0), limit).await?;
    if !visibility.sees_all() {
        let mut visible = Vec::with_capacity(events.len());
        for event in events {
            if visibility.sees(&state, &event.task_id).await {
                visible.push(event);
            }
        }
        events = visible;
    }
    Ok(Json(json!({ "events": events })).into_response())
}
