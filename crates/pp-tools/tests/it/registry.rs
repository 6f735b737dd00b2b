//! Schemas, specs and registration.

use std::sync::Arc;

use pp_agent::{ToolRegistry, schema};
use pp_gate::Jail;
use pp_types::{Capability, Risk};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::Fixture;

#[test]
fn specs_declare_capability_risk_and_path_params() {
    let fixture = Fixture::new();
    let expected = [
        ("list_files", "file:read", Risk::Low),
        ("read_file", "file:read", Risk::Low),
        ("write_file", "file:write", Risk::High),
        ("edit_file", "file:update", Risk::High),
        ("delete_file", "file:delete", Risk::High),
        ("make_dir", "file:create", Risk::Medium),
    ];
    let moves = fixture.tool("move_file").spec();
    assert_eq!(moves.capability, Some(Capability::new("file:update")));
    assert_eq!(moves.risk, Risk::High);
    assert_eq!(moves.path_params, ["from", "to"], "both paths are jailed");
    assert_eq!(moves.parameters["required"], json!(["from", "to"]));
    for (name, capability, risk) in expected {
        let spec = fixture.tool(name).spec();
        assert_eq!(spec.capability, Some(Capability::new(capability)), "{name}");
        assert_eq!(spec.risk, risk, "{name}");
        assert_eq!(spec.path_params, ["path"], "{name}");
        assert!(
            !spec.description.is_empty() && spec.description.len() < 400,
            "{name}"
        );
        assert_eq!(
            spec.parameters["additionalProperties"],
            json!(false),
            "{name}"
        );
        assert!(
            spec.parameters["required"]
                .as_array()
                .is_some_and(|required| required.contains(&json!("path")))
        );
    }
}

fn check(fixture: &Fixture, name: &str, arguments: &Value) -> Result<(), String> {
    schema::validate(&fixture.tool(name).spec().parameters, arguments)
}

#[test]
fn schemas_accept_valid_arguments() {
    let fixture = Fixture::new();
    let valid = [
        ("list_files", json!({"path": "."})),
        (
            "list_files",
            json!({"path": "src", "recursive": true, "pattern": "**/*.rs"}),
        ),
        ("read_file", json!({"path": "a.txt"})),
        (
            "read_file",
            json!({"path": "a.txt", "offset": 0, "limit": 1}),
        ),
        ("write_file", json!({"path": "a.txt", "content": ""})),
        (
            "edit_file",
            json!({"path": "a.txt", "old_text": "a", "new_text": ""}),
        ),
    ];
    for (name, arguments) in valid {
        assert_eq!(
            check(&fixture, name, &arguments),
            Ok(()),
            "{name} {arguments}"
        );
    }
}

#[test]
fn schemas_reject_missing_extra_and_mistyped_fields() {
    let fixture = Fixture::new();
    let invalid = [
        ("list_files", json!({})),
        ("list_files", json!({"path": ".", "depth": 2})),
        ("list_files", json!({"path": ".", "recursive": "yes"})),
        ("read_file", json!({"offset": 1})),
        ("read_file", json!({"path": "a.txt", "offset": -1})),
        ("read_file", json!({"path": "a.txt", "limit": 0})),
        ("read_file", json!({"path": "a.txt", "encoding": "latin1"})),
        ("write_file", json!({"path": "a.txt"})),
        ("write_file", json!({"content": "x"})),
        (
            "write_file",
            json!({"path": "a.txt", "content": "x", "mode": "append"}),
        ),
        ("edit_file", json!({"path": "a.txt", "old_text": "a"})),
        (
            "edit_file",
            json!({"path": "a.txt", "old_text": "", "new_text": "b"}),
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_text": "a", "new_text": "b", "all": true}),
        ),
    ];
    for (name, arguments) in invalid {
        assert!(
            check(&fixture, name, &arguments).is_err(),
            "{name} {arguments}"
        );
    }
}

#[test]
fn all_file_tools_register_into_a_registry() {
    let fixture = Fixture::new();
    let jail = Arc::new(Jail::new(fixture.tree.workspace()).expect("jail"));
    let mut registry = ToolRegistry::new();
    pp_tools::register_file_tools(&mut registry, Arc::clone(&jail)).expect("register");
    let names: Vec<&str> = registry.specs().map(|spec| spec.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "delete_file",
            "edit_file",
            "list_files",
            "make_dir",
            "move_file",
            "read_file",
            "write_file"
        ]
    );
    // A second registration collides by name instead of silently replacing.
    assert!(pp_tools::register_file_tools(&mut registry, jail).is_err());
}

#[test]
fn default_limits() {
    assert_eq!(
        pp_tools::Limits::default(),
        pp_tools::Limits {
            max_read_bytes: 10 * 1024 * 1024,
            max_output_chars: 64 * 1024,
            max_list_entries: 1000,
            max_scan_entries: 20_000,
            hash_max_bytes: 64 * 1024 * 1024,
        }
    );
}
