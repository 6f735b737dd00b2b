//! The route table and the router built from it.
//!
//! Every `/api` route is listed once in [`table`]; the router, [`crate::api_routes`]
//! and the OpenAPI test all read that one list.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{MethodRouter, delete, get, post, put};

use crate::error::ApiError;
use crate::state::AppState;
use crate::{auth, security};

pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod changes;
pub(crate) mod channels;
pub(crate) mod console;
pub(crate) mod events;
pub(crate) mod files;
pub(crate) mod health;
pub(crate) mod login;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod openapi;
pub(crate) mod schedules;
pub(crate) mod sessions;
pub(crate) mod skills;
pub(crate) mod tasks;
pub(crate) mod workspaces;

/// The one route that answers without a token.
const PUBLIC_API_ROUTE: &str = "/api/health";

/// The webhook route: no token (the HMAC signature authenticates it) and no Origin
/// check ([`crate::security::check_host_and_origin`]).
pub(crate) const WEBHOOK_ROUTE: &str = "/api/channels/{name}/webhook";

/// One `/api` route: method, path, handler.
pub(crate) struct Route {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    pub(crate) handler: MethodRouter<AppState>,
}

fn route(method: &'static str, path: &'static str, handler: MethodRouter<AppState>) -> Route {
    Route {
        method,
        path,
        handler,
    }
}

/// Every `/api` route.
pub(crate) fn table() -> Vec<Route> {
    vec![
        route("POST", "/api/tasks", post(tasks::create)),
        route("GET", "/api/tasks", get(tasks::list)),
        route("GET", "/api/tasks/{id}", get(tasks::show)),
        route("POST", "/api/tasks/{id}/cancel", post(tasks::cancel)),
        route("POST", "/api/tasks/{id}/retry", post(tasks::retry)),
        route("GET", "/api/tasks/{id}/events", get(events::task_events)),
        route("GET", "/api/tasks/{id}/changes", get(changes::task_changes)),
        route("POST", "/api/changes/{id}/revert", post(changes::revert)),
        route("GET", "/api/events", get(events::all_events)),
        route("GET", "/api/approvals", get(approvals::list)),
        route("GET", "/api/approvals/{id}", get(approvals::show)),
        route(
            "POST",
            "/api/approvals/{id}/resolve",
            post(approvals::resolve),
        ),
        route("POST", "/api/sessions", post(sessions::create)),
        route("GET", "/api/sessions", get(sessions::list)),
        route("GET", "/api/sessions/{id}", get(sessions::show)),
        route("DELETE", "/api/sessions/{id}", delete(sessions::delete)),
        route("POST", "/api/sessions/{id}/messages", post(sessions::send)),
        route("GET", "/api/files", get(files::list)),
        route("GET", "/api/files/content", get(files::download)),
        route("PUT", "/api/files/content", put(files::upload)),
        route("GET", "/api/audit", get(audit::list)),
        route("GET", "/api/workspaces", get(workspaces::list)),
        route("GET", "/api/skills", get(skills::list)),
        route("GET", "/api/skills/{name}", get(skills::show)),
        route("PUT", "/api/skills/{name}", put(skills::put)),
        route("DELETE", "/api/skills/{name}", delete(skills::remove)),
        route(
            "PUT",
            "/api/skills/{name}/files/{path}",
            put(skills::put_file),
        ),
        route("GET", "/api/mcp/servers", get(mcp::servers)),
        route("POST", "/api/schedules", post(schedules::create)),
        route("GET", "/api/schedules", get(schedules::list)),
        route("GET", "/api/schedules/{id}", get(schedules::show)),
        route("PUT", "/api/schedules/{id}", put(schedules::edit)),
        route("DELETE", "/api/schedules/{id}", delete(schedules::remove)),
        route("POST", "/api/schedules/{id}/run", post(schedules::run)),
        route("GET", "/api/schedules/{id}/tasks", get(schedules::tasks)),
        route("GET", "/api/memory", get(memory::show)),
        route("PUT", "/api/memory", put(memory::put)),
        route("GET", "/api/channels", get(channels::list)),
        route("POST", "/api/channels", post(channels::create)),
        route("GET", "/api/channels/{name}", get(channels::show)),
        route("PUT", "/api/channels/{name}", put(channels::edit)),
        route("DELETE", "/api/channels/{name}", delete(channels::remove)),
        route(
            "POST",
            "/api/channels/{name}/rotate",
            post(channels::rotate),
        ),
        route(
            "GET",
            "/api/channels/{name}/deliveries",
            get(channels::deliveries),
        ),
        route("POST", WEBHOOK_ROUTE, post(channels::webhook)),
        route("GET", "/api/openapi.json", get(openapi::document)),
        route("GET", PUBLIC_API_ROUTE, get(health::health)),
    ]
}

/// The router: `/api` (authenticated but for health), login, the console shell, and the
/// middleware every route passes through.
pub(crate) fn build(state: AppState) -> Router {
    let settings = state.settings().clone();
    let mut authed = Router::new();
    let mut public = Router::new();
    for Route { path, handler, .. } in table() {
        if path == PUBLIC_API_ROUTE || path == WEBHOOK_ROUTE {
            public = public.route(path, handler);
        } else {
            authed = authed.route(&routed_path(path), handler);
        }
    }
    let authed = authed.route_layer(from_fn_with_state(state.clone(), auth::require_auth));
    Router::new()
        .merge(authed)
        .merge(public)
        .route("/login", get(login::login))
        .route("/logout", post(login::logout))
        .route("/", get(console::index))
        .route("/assets/{*path}", get(console::asset))
        .route("/favicon.ico", get(console::favicon))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(settings.max_body_bytes))
        .layer(from_fn_with_state(
            state.clone(),
            security::log_internal_errors,
        ))
        .layer(from_fn_with_state(
            state.clone(),
            security::check_host_and_origin,
        ))
        .layer(from_fn(security::security_headers))
        .with_state(state)
}

/// The router's form of a documented path: a final `{path}` segment takes the rest of
/// the URL, slashes included (`/api/skills/{name}/files/{path}` serves
/// `…/files/scripts/run.py`).
fn routed_path(path: &str) -> String {
    match path.strip_suffix("/{path}") {
        Some(head) => format!("{head}/{{*path}}"),
        None => path.to_owned(),
    }
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
