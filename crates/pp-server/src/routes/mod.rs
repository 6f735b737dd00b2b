//! The route table and the router built from it.
//!
//! Every `/api` route is listed once in [`table`], with the [`Access`] that says which
//! roles may use it (the role matrix of docs/team.md, checked against this table by a
//! test); the router, [`crate::api_routes`], [`crate::route_access`] and the OpenAPI
//! test all read that one list.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Request, State};
use axum::http::Uri;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post, put};
use pp_types::Role;

use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;
use crate::{auth, security};

pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod changes;
pub(crate) mod changesets;
pub(crate) mod channels;
pub(crate) mod console;
pub(crate) mod events;
pub(crate) mod files;
pub(crate) mod health;
pub(crate) mod links;
pub(crate) mod login;
pub(crate) mod mcp;
pub(crate) mod me;
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

/// Which roles may use a route in team mode, and how far each one reaches (the cells of
/// docs/team.md's role matrix: [`Access::cell`]). Single-user mode's operator is an
/// owner.
///
/// The router refuses a role whose cell is `no` with `403 forbidden` before the handler
/// runs; `granted` and `own` are object-level rules the handler applies through
/// [`Caller`] (a task the caller may not see answers 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// No credentials at all (health; webhooks carry their own HMAC signature).
    Public,
    /// Every role, team-wide (memory, skills, `/api/me`, the OpenAPI document).
    Team,
    /// Every role; non-owners see only their granted workspaces.
    Granted,
    /// Reading tasks and what hangs off them: owners all, approvers and viewers those of
    /// granted workspaces, members their own.
    Tasks,
    /// Creating tasks: owners anywhere, approvers and members on granted workspaces.
    CreateTask,
    /// Cancelling or retrying: owners all, approvers granted workspaces, members their own.
    ActOnTask,
    /// Deciding (resolving approvals, reverting changes): owners, approvers of the task's
    /// workspace (another workspace: 403).
    Decide,
    /// Chat sessions: owners all, approvers and members their own.
    Sessions,
    /// Team-wide reading of audit, schedules, channels, MCP servers: not members.
    Read,
    /// Owners only (writes to memory, skills, schedules, channels; operator files).
    Owner,
}

impl Access {
    /// The role matrix's cell for `role`: `yes`, `granted`, `own`, `no`, or `public`.
    pub(crate) fn cell(self, role: Role) -> &'static str {
        use Role::{Approver, Member, Owner, Viewer};
        match (self, role) {
            (Self::Public, _) => "public",
            (_, Owner) | (Self::Team | Self::Read, Approver | Viewer) | (Self::Team, Member) => {
                "yes"
            }
            (Self::Granted, _)
            | (Self::CreateTask, Approver | Member)
            | (Self::Tasks | Self::ActOnTask | Self::Decide, Approver)
            | (Self::Tasks, Viewer) => "granted",
            (Self::Tasks | Self::ActOnTask | Self::Sessions, Member)
            | (Self::Sessions, Approver) => "own",
            _ => "no",
        }
    }

    /// Whether `role` may use the route at all.
    pub(crate) fn allows(self, role: Role) -> bool {
        self.cell(role) != "no"
    }
}

/// One route of the role matrix (every `/api` route, and the link page `/d/{token}`):
/// method, path, who may use it, handler.
pub(crate) struct Route {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    pub(crate) method: &'static str,
    pub(crate) path: &'static str,
    /// The roles that may use it (the role matrix).
    pub(crate) access: Access,
    pub(crate) handler: MethodRouter<AppState>,
}

fn route(
    method: &'static str,
    path: &'static str,
    access: Access,
    handler: MethodRouter<AppState>,
) -> Route {
    Route {
        method,
        path,
        access,
        handler,
    }
}

/// Every `/api` route, with the roles that may use it.
#[rustfmt::skip]
pub(crate) fn table() -> Vec<Route> {
    use Access::{
        ActOnTask, CreateTask, Decide, Granted, Owner, Public, Read, Sessions, Tasks, Team,
    };
    vec![
        route("POST", "/api/tasks", CreateTask, post(tasks::create)),
        route("GET", "/api/tasks", Tasks, get(tasks::list)),
        route("GET", "/api/tasks/{id}", Tasks, get(tasks::show)),
        route("POST", "/api/tasks/{id}/cancel", ActOnTask, post(tasks::cancel)),
        route("POST", "/api/tasks/{id}/retry", ActOnTask, post(tasks::retry)),
        route("GET", "/api/tasks/{id}/events", Tasks, get(events::task_events)),
        route("GET", "/api/tasks/{id}/changes", Tasks, get(changes::task_changes)),
        route("POST", "/api/changes/{id}/revert", Decide, post(changes::revert)),
        route("GET", "/api/events", Tasks, get(events::all_events)),
        route("GET", "/api/approvals", Tasks, get(approvals::list)),
        route("GET", "/api/approvals/count", Tasks, get(approvals::count)),
        route("GET", "/api/approvals/{id}", Tasks, get(approvals::show)),
        route("POST", "/api/approvals/{id}/precheck", Tasks, post(approvals::precheck)),
        route("POST", "/api/approvals/{id}/resolve", Decide, post(approvals::resolve)),
        route("GET", "/api/changesets/{id}", Tasks, get(changesets::show)),
        route("POST", "/api/changesets/{id}/resolve", Decide, post(changesets::resolve)),
        route("POST", "/api/sessions", Sessions, post(sessions::create)),
        route("GET", "/api/sessions", Sessions, get(sessions::list)),
        route("GET", "/api/sessions/{id}", Sessions, get(sessions::show)),
        route("DELETE", "/api/sessions/{id}", Sessions, delete(sessions::delete)),
        route("POST", "/api/sessions/{id}/messages", Sessions, post(sessions::send)),
        route("GET", "/api/files", Owner, get(files::list)),
        route("GET", "/api/files/content", Owner, get(files::download)),
        route("PUT", "/api/files/content", Owner, put(files::upload)),
        route("GET", "/api/audit", Read, get(audit::list)),
        route("GET", "/api/workspaces", Granted, get(workspaces::list)),
        route("GET", "/api/me", Team, get(me::show)),
        route("GET", "/api/skills", Team, get(skills::list)),
        route("GET", "/api/skills/{name}", Team, get(skills::show)),
        route("PUT", "/api/skills/{name}", Owner, put(skills::put)),
        route("DELETE", "/api/skills/{name}", Owner, delete(skills::remove)),
        route("PUT", "/api/skills/{name}/files/{path}", Owner, put(skills::put_file)),
        route("GET", "/api/mcp/servers", Read, get(mcp::servers)),
        route("POST", "/api/schedules", Owner, post(schedules::create)),
        route("GET", "/api/schedules", Read, get(schedules::list)),
        route("GET", "/api/schedules/{id}", Read, get(schedules::show)),
        route("PUT", "/api/schedules/{id}", Owner, put(schedules::edit)),
        route("DELETE", "/api/schedules/{id}", Owner, delete(schedules::remove)),
        route("POST", "/api/schedules/{id}/run", Owner, post(schedules::run)),
        route("GET", "/api/schedules/{id}/tasks", Read, get(schedules::tasks)),
        route("GET", "/api/memory", Team, get(memory::show)),
        route("PUT", "/api/memory", Owner, put(memory::put)),
        route("GET", "/api/channels", Read, get(channels::list)),
        route("POST", "/api/channels", Owner, post(channels::create)),
        route("GET", "/api/channels/{name}", Read, get(channels::show)),
        route("PUT", "/api/channels/{name}", Owner, put(channels::edit)),
        route("DELETE", "/api/channels/{name}", Owner, delete(channels::remove)),
        route("POST", "/api/channels/{name}/rotate", Owner, post(channels::rotate)),
        route("GET", "/api/channels/{name}/deliveries", Read, get(channels::deliveries)),
        route("POST", WEBHOOK_ROUTE, Public, post(channels::webhook)),
        route("GET", "/api/links/{token}", Public, get(links::show)),
        route("POST", "/api/links/{token}/resolve", Public, post(links::resolve)),
        route("GET", links::PAGE_ROUTE, Public, get(links::page)),
        route("GET", "/api/openapi.json", Team, get(openapi::document)),
        route("GET", PUBLIC_API_ROUTE, Public, get(health::health)),
    ]
}

/// Per-route middleware: `403 forbidden` when the caller's role may not use the route
/// at all ([`Access::allows`]). Runs after [`auth::require_auth`] put the [`Caller`] in.
async fn enforce(State(access): State<Access>, request: Request, next: Next) -> Response {
    let allowed = request
        .extensions()
        .get::<Caller>()
        .is_some_and(|caller| access.allows(caller.role));
    if allowed {
        next.run(request).await
    } else {
        ApiError::Forbidden("your role may not use this route".into()).into_response()
    }
}

/// The router: `/api` (authenticated but for health), login, the console shell, and the
/// middleware every route passes through.
pub(crate) fn build(state: AppState) -> Router {
    let settings = state.settings().clone();
    let mut authed = Router::new();
    let mut public = Router::new();
    for Route {
        path,
        access,
        handler,
        ..
    } in table()
    {
        if access == Access::Public {
            public = public.route(path, handler);
        } else {
            let handler = handler.route_layer(from_fn_with_state(access, enforce));
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
