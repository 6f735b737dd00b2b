//! A server state the binary has not finished equipping (no scheduler, channels, skills,
//! memory or MCP report) answers each of those routes `404 not_found` saying what is not
//! configured, and the OpenAPI document lists that 404 for each.

use std::sync::Arc;

use axum::http::Method;
use pp_server::ServerSettings;
use pp_tasks::{ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::TempTree;
use pp_types::{ManualClock, Timestamp};

use crate::{App, bare_state};

/// An app whose state has only what `AppState::new` takes.
fn bare_app() -> App {
    let tree = TempTree::new();
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let store = pp_test_support::sqlite_store_with_clock(
        &tree.base().join("pocketpilot.db"),
        clock.clone(),
    );
    let service = TaskService::new(
        store.clone(),
        TaskSettings::default(),
        Workspaces::single("main", tree.workspace()),
        ModelSource::Scripted,
    );
    let state = bare_state(&service, &store, ServerSettings::default());
    App::assemble(tree, clock, store, service, state)
}

#[tokio::test]
async fn every_unequipped_route_says_what_is_not_configured_and_documents_its_404() {
    let app = bare_app();
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    for (uri, documented, what) in [
        ("/api/schedules", "/api/schedules", "schedules"),
        ("/api/channels", "/api/channels", "channels"),
        ("/api/skills", "/api/skills", "skills"),
        ("/api/memory", "/api/memory", "memory"),
        ("/api/mcp/servers", "/api/mcp/servers", "MCP"),
    ] {
        let reply = app.call(Method::GET, uri).await;
        reply.expect(404, Some("not_found"));
        let message = reply.json["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(what) && message.contains("not configured"),
            "{uri}: {message}"
        );
        assert!(
            doc["paths"][documented]["get"]["responses"]
                .get("404")
                .is_some(),
            "GET {documented} does not document its 404"
        );
    }
}
