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
        let concrete = path.replace("{id}", "x_unknown");
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
    let public = path == "/api/health";
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
        let body_needed = !path.ends_with("/cancel") && !path.ends_with("/retry");
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
