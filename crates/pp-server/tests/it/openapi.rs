//! The OpenAPI document lists exactly the router's routes.

use std::collections::BTreeSet;

use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::App;

const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];

#[tokio::test]
async fn the_document_matches_the_routes() {
    let app = App::idle();
    let reply = app.call(Method::GET, "/api/openapi.json").await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-type"), "application/json");
    let doc = reply.json;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.0"));

    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            assert!(METHODS.contains(&method.as_str()), "{path}: {method}");
            documented.insert((method.to_uppercase(), path.clone()));
            check_operation(&doc, path, method, operation);
        }
    }
    let routed: BTreeSet<(String, String)> = pp_server::api_routes()
        .into_iter()
        .map(|(method, path)| (method.to_owned(), path.to_owned()))
        .collect();
    assert_eq!(documented, routed);

    // Walk the router: every listed route answers (not the "no route" fallback, not 405),
    // and a method not listed for that path is 405.
    for (method, path) in &routed {
        let concrete = path
            .replace("{id}", "x_unknown")
            .replace("{name}", "x-unknown")
            .replace("{path}", "a.md");
        let reply = app
            .call(Method::from_bytes(method.as_bytes()).unwrap(), &concrete)
            .await;
        assert_ne!(reply.status.as_u16(), 405, "{method} {path}: {reply:?}");
        let message = reply.json["error"]["message"].as_str().unwrap_or("");
        assert!(
            !message.starts_with("no route"),
            "{method} {path}: {reply:?}"
        );
        let unlisted = METHODS
            .iter()
            .map(|m| m.to_uppercase())
            .find(|m| !routed.contains(&(m.clone(), path.clone())))
            .unwrap();
        let reply = app
            .call(Method::from_bytes(unlisted.as_bytes()).unwrap(), &concrete)
            .await;
        reply.expect(405, Some("method_not_allowed"));
    }
}

fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            doc.pointer(pointer)
                .unwrap_or_else(|| panic!("dangling {reference}"))
        }
        None => value,
    }
}

fn check_operation(doc: &Value, path: &str, method: &str, operation: &Value) {
    let parameters: Vec<&Value> = operation["parameters"]
        .as_array()
        .map(|list| list.iter().map(|p| resolve(doc, p)).collect())
        .unwrap_or_default();
    // Every `{name}` in the path is a declared path parameter, and vice versa.
    let in_path: BTreeSet<&str> = path
        .split('/')
        .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
        .collect();
    let declared: BTreeSet<&str> = parameters
        .iter()
        .filter(|p| p["in"] == "path")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(in_path, declared, "{method} {path}");
    let responses = operation["responses"].as_object().unwrap();
    assert!(
        responses.keys().any(|status| status.starts_with('2')),
        "{method} {path}"
    );
    for (status, response) in responses {
        let response = resolve(doc, response);
        assert!(
            response["description"].is_string(),
            "{method} {path} {status}"
        );
        if status.starts_with('4') || status.starts_with('5') {
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error",
                "{method} {path} {status}"
            );
        }
    }
    let public = [
        "/api/health",
        "/api/channels/{name}/webhook",
        "/api/links/{token}",
        "/api/links/{token}/resolve",
        "/d/{token}",
    ]
    .contains(&path);
    assert_eq!(
        operation["security"] == serde_json::json!([]),
        public,
        "{path}"
    );
    if !public {
        assert!(responses.contains_key("401"), "{method} {path}");
    }
    assert!(responses.contains_key("403"), "{method} {path}: Host check");
    if method == "post" || method == "put" {
        let body_needed = !path.ends_with("/cancel")
            && !path.ends_with("/retry")
            && !path.ends_with("/revert")
            && !path.ends_with("/run")
            && !path.ends_with("/rotate");
        assert_eq!(
            operation["requestBody"].is_object(),
            body_needed,
            "{method} {path}"
        );
    }
    // Every schema reference resolves.
    check_refs(doc, operation);
}

fn check_refs(doc: &Value, value: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                assert!(
                    doc.pointer(reference.trim_start_matches('#')).is_some(),
                    "dangling {reference}"
                );
            }
            map.values().for_each(|v| check_refs(doc, v));
        }
        Value::Array(items) => items.iter().for_each(|v| check_refs(doc, v)),
        _ => {}
    }
}

/// The `` `code` `` names in a response description.
fn codes_in(description: &str) -> BTreeSet<String> {
    description
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

/// Fails unless `reply` (an error) is documented for `method path`: its status is one
/// of the operation's responses, and that response names its code.
pub(crate) fn assert_documented(
    doc: &Value,
    method: &str,
    path: &str,
    reply: &crate::Reply,
    what: &str,
) {
    if reply.status.is_success() || reply.status.as_u16() == 405 {
        return;
    }
    let status = reply.status.as_str();
    let operation = &doc["paths"][path][method.to_lowercase()];
    let response = operation["responses"]
        .get(status)
        .unwrap_or_else(|| panic!("{method} {path}: {status} not documented ({what}): {reply:?}"));
    let response = resolve(doc, response);
    let codes = codes_in(response["description"].as_str().unwrap());
    assert!(
        codes.contains(reply.code()),
        "{method} {path} {status}: code `{}` not in {codes:?} ({what})",
        reply.code()
    );
    let known = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
        ["enum"]
        .as_array()
        .unwrap();
    assert!(
        known.iter().any(|code| code == reply.code()),
        "{}",
        reply.code()
    );
}

/// Provokes the errors every route can return (missing token, foreign Host and Origin,
/// garbage input, unknown ids, state conflicts, jail refusals, limits) and checks that
/// each status and code is in the document for that route.
#[tokio::test]
async fn every_error_a_route_returns_is_documented() {
    use axum::body::Body;

    use crate::{anonymous, authed, json_request};

    let app = App::with_settings(pp_server::ServerSettings {
        max_download_bytes: 8,
        ..pp_server::ServerSettings::default()
    });
    app.service.start_workers();
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let (task, approval) = app.waiting_write("w.txt", "w\n").await;
    let done = app
        .create_task(serde_json::json!([{"content": "done"}]))
        .await;
    app.wait_for(&done.id, pp_types::TaskState::Completed).await;
    app.tree.file("big.txt", "more than eight bytes");

    let mut checked = BTreeSet::new();
    for (method, template) in pp_server::api_routes() {
        let http = Method::from_bytes(method.as_bytes()).unwrap();
        let mut ids = vec!["x_unknown".to_owned(), "%FF".to_owned()];
        if template.starts_with("/api/tasks/") {
            ids.push(done.id.to_string());
        }
        if template.starts_with("/api/approvals/") {
            ids.push(approval.clone());
        }
        for id in ids {
            let path = template
                .replace("{id}", &id)
                .replace("{name}", &id)
                .replace("{path}", "a.md");
            let mut replies = Vec::new();
            replies.push((
                "no token",
                app.send(anonymous(http.clone(), &path).body(Body::empty()).unwrap())
                    .await,
            ));
            replies.push((
                "foreign host",
                app.send(
                    authed(http.clone(), &path)
                        .header("host", "evil.example.com")
                        .body(Body::empty())
                        .unwrap(),
                )
                .await,
            ));
            if method != "GET" {
                replies.push((
                    "foreign origin",
                    app.send(
                        authed(http.clone(), &path)
                            .header("origin", "http://evil.example.com")
                            .body(Body::empty())
                            .unwrap(),
                    )
                    .await,
                ));
            }
            for query in [
                "",
                "?limit=0",
                "?limit=99999&state=nope&after=x&actor=robot&before=x&wait=2",
                "?path=../../etc/passwd",
                "?path=/etc/passwd",
                "?path=missing.txt&workspace=nope",
                "?path=missing.txt",
                "?path=big.txt",
            ] {
                for body in [
                    String::new(),
                    "{{".to_owned(),
                    r#"{"prompt": "p", "workspace": "nope"}"#.to_owned(),
                    r#"{"decision": "approve", "edited_arguments": {"path": "/etc/x"}}"#.to_owned(),
                    r#"{"skill_md": "no front matter"}"#.to_owned(),
                    r#"{"content": "memory"}"#.to_owned(),
                    format!(r#"{{"prompt": "{}"}}"#, "x".repeat(1 << 20)),
                ] {
                    let uri = format!("{path}{query}");
                    let request = authed(http.clone(), &uri)
                        .header("content-type", "application/json")
                        .body(Body::from(body))
                        .unwrap();
                    replies.push(("garbage", app.send(request).await));
                }
            }
            for (what, reply) in &replies {
                assert_documented(&doc, method, template, reply, what);
                checked.insert((method, template, reply.status.as_u16()));
            }
        }
    }
    // The states only a scenario reaches.
    let cancel = format!("/api/tasks/{}/cancel", done.id);
    let reply = app.call(Method::POST, &cancel).await;
    reply.expect(409, Some("invalid_state"));
    assert_documented(&doc, "POST", "/api/tasks/{id}/cancel", &reply, "ended task");
    let resolve = format!("/api/approvals/{approval}/resolve");
    app.call_json(
        Method::POST,
        &resolve,
        &serde_json::json!({"decision": "reject"}),
    )
    .await
    .expect(202, None);
    let reply = app
        .send(json_request(
            Method::POST,
            &resolve,
            &serde_json::json!({"decision": "approve"}),
        ))
        .await;
    reply.expect(409, Some("already_resolved"));
    assert_documented(&doc, "POST", "/api/approvals/{id}/resolve", &reply, "twice");
    let _ = task;

    let busy = App::with_settings(pp_server::ServerSettings {
        max_concurrent_uploads: 0,
        ..pp_server::ServerSettings::default()
    });
    let reply = busy
        .send(
            authed(Method::PUT, "/api/files/content?path=a.txt")
                .body(Body::from("a"))
                .unwrap(),
        )
        .await;
    reply.expect(429, Some("too_many_uploads"));
    assert_documented(&doc, "PUT", "/api/files/content", &reply, "busy");

    let reply = app
        .send(
            authed(Method::PUT, "/api/memory")
                .header("content-type", "application/json")
                .header("if-match", "\"sha256:stale\"")
                .body(Body::from(r#"{"content": "x"}"#))
                .unwrap(),
        )
        .await;
    reply.expect(412, Some("version_mismatch"));
    assert_documented(&doc, "PUT", "/api/memory", &reply, "stale version");

    // The battery reached the errors it is meant to reach.
    for expected in [
        ("GET", "/api/tasks/{id}", 404),
        ("GET", "/api/files/content", 403),
        ("GET", "/api/files/content", 413),
        ("PUT", "/api/files/content", 409),
        ("POST", "/api/tasks", 413),
        ("POST", "/api/tasks", 404),
        ("POST", "/api/approvals/{id}/resolve", 422),
        ("GET", "/api/audit", 400),
        ("GET", "/api/workspaces", 401),
        ("GET", "/api/sessions/{id}", 404),
        ("DELETE", "/api/sessions/{id}", 404),
        ("POST", "/api/sessions/{id}/messages", 400),
        ("PUT", "/api/skills/{name}", 422),
        ("DELETE", "/api/skills/{name}", 404),
        ("PUT", "/api/memory", 428),
        ("PUT", "/api/memory", 400),
    ] {
        assert!(checked.contains(&expected), "{expected:?} was not provoked");
    }
}

/// The document's `enum` lists are the Rust enums' names (`NAMES`, from `wire_enum!`).
#[test]
fn the_document_enums_are_the_rust_names() {
    use pp_server::ErrorCode;
    use pp_types::{
        ApprovalState, ChangeKind, ChangeRoot, EffectScope, Risk, Role, TaskState, WriteLabel,
    };

    let doc: Value = serde_json::from_str(include_str!("../../src/routes/openapi.json")).unwrap();
    let schemas = &doc["components"]["schemas"];
    let names = |value: &Value| -> Vec<String> {
        value["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no enum in {value}"))
            .iter()
            .map(|name| name.as_str().unwrap().to_owned())
            .collect()
    };
    let codes: BTreeSet<String> =
        names(&schemas["Error"]["properties"]["error"]["properties"]["code"])
            .into_iter()
            .collect();
    let rust: BTreeSet<String> = ErrorCode::NAMES.iter().map(|c| (*c).to_owned()).collect();
    assert_eq!(codes, rust, "Error.code");
    assert_eq!(names(&schemas["TaskState"]), TaskState::NAMES);
    assert_eq!(names(&schemas["ApprovalState"]), ApprovalState::NAMES);
    let change = &schemas["Change"]["properties"];
    assert_eq!(names(&change["kind"]), ChangeKind::NAMES);
    assert_eq!(names(&change["root"]), ChangeRoot::NAMES);
    let approval = &schemas["Approval"]["properties"];
    assert_eq!(names(&approval["risk"]), Risk::NAMES);
    assert_eq!(names(&approval["label"]), WriteLabel::NAMES);
    assert_eq!(names(&approval["scope"]), EffectScope::NAMES);
    let target = &schemas["MayHaveRun"]["properties"]["targets"]["items"]["properties"];
    assert_eq!(names(&target["before"]), pp_tasks::PathState::NAMES);
    assert_eq!(names(&target["now"]), pp_tasks::PathState::NAMES);
    assert_eq!(names(&target["root"]), ChangeRoot::NAMES);
    assert_eq!(names(&schemas["Me"]["properties"]["role"]), Role::NAMES);
    let result = &schemas["ChangesetResolveResult"]["properties"]["results"]["items"];
    assert_eq!(
        names(&result["properties"]["status"]),
        pp_tasks::DecisionStatus::NAMES
    );
    // The document's `Actor` predates `mcp_client`; every name it lists is still one.
    for actor in names(&schemas["Actor"]) {
        assert!(pp_types::Actor::parse(&actor).is_some(), "Actor {actor}");
    }
}
