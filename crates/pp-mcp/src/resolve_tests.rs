use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::config::{Start, ToolConfig, Transport};

fn server(allow: &[&str]) -> ServerConfig {
    ServerConfig {
        name: "fs".to_owned(),
        transport: Transport::Stdio {
            command: "node".to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        allow: allow.iter().map(|name| (*name).to_owned()).collect(),
        default_action: None,
        trust_annotations: false,
        start: Start::Lazy,
        call_timeout: crate::config::defaults::CALL_TIMEOUT,
        max_output_bytes: crate::config::defaults::MAX_OUTPUT_BYTES,
        include_instructions: false,
        tools: BTreeMap::new(),
        sandbox: crate::config::SandboxConfig::unconfined(),
    }
}

fn listed(name: &str, annotations: Option<ToolAnnotations>) -> ListedTool {
    ListedTool {
        name: name.to_owned(),
        description: Some(format!("the {name} tool")),
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}}
        }),
        annotations,
    }
}

fn hints(
    read_only: Option<bool>,
    destructive: Option<bool>,
    open_world: Option<bool>,
) -> Option<ToolAnnotations> {
    Some(ToolAnnotations {
        read_only,
        destructive,
        idempotent: None,
        open_world,
    })
}

fn action(config: &ServerConfig, tool: ListedTool) -> Result<(String, &'static str), String> {
    let resolution = resolve(config, &[tool]);
    match (resolution.tools.first(), resolution.unregistered.first()) {
        (Some(tool), None) => Ok((tool.action.clone(), tool.decided_by.as_str())),
        (None, Some(unregistered)) => Err(unregistered.reason.clone()),
        other => panic!("one tool, one verdict: {other:?}"),
    }
}

/// What, under which config, with which hints, gives which (action, level) or error prefix.
type Case<'a> = (
    &'a str,
    &'a ServerConfig,
    Option<ToolAnnotations>,
    Result<(&'a str, &'a str), &'a str>,
);

#[test]
fn priority_levels_decide_in_order() {
    let tool_action = |action: &str| ToolConfig {
        action: Some(action.to_owned()),
        path_args: Vec::new(),
    };
    let mut p0 = server(&["*"]);
    p0.default_action = Some("write".to_owned());
    p0.trust_annotations = true;
    p0.tools.insert("t".to_owned(), tool_action("read"));
    let mut p1 = server(&["*"]);
    p1.default_action = Some("write".to_owned());
    p1.trust_annotations = true;
    let mut p2 = server(&["*"]);
    p2.trust_annotations = true;
    let p3 = server(&["*"]);
    let read_only = hints(Some(true), None, Some(false));
    let cases: Vec<Case<'_>> = vec![
        (
            "P0 beats P1 and P2",
            &p0,
            hints(Some(false), None, None),
            Ok(("read", "P0")),
        ),
        ("P1 beats P2", &p1, read_only, Ok(("write", "P1"))),
        (
            "P2 read-only closed world",
            &p2,
            read_only,
            Ok(("read", "P2")),
        ),
        (
            "P2 read-only open world (default)",
            &p2,
            hints(Some(true), None, None),
            Ok(("network", "P2")),
        ),
        (
            "P2 no annotations at all: spec defaults",
            &p2,
            None,
            Ok(("network", "P2")),
        ),
        (
            "P2 destructive closed world",
            &p2,
            hints(None, None, Some(false)),
            Ok(("delete", "P2")),
        ),
        (
            "P2 not destructive closed world",
            &p2,
            hints(Some(false), Some(false), Some(false)),
            Ok(("execute", "P2")),
        ),
        ("P3 annotations not trusted", &p3, read_only, Err("P3")),
    ];
    for (what, config, annotations, expected) in cases {
        let got = action(config, listed("t", annotations));
        match expected {
            Ok((action, level)) => assert_eq!(got, Ok((action.to_owned(), level)), "{what}"),
            Err(prefix) => assert!(
                got.as_ref().is_err_and(|reason| reason.starts_with(prefix)),
                "{what}: {got:?}"
            ),
        }
    }
}

#[test]
fn capability_risk_and_model_name() {
    let mut config = server(&["read_file", "write_file"]);
    config.default_action = Some("write".to_owned());
    config.tools.insert(
        "read_file".to_owned(),
        ToolConfig {
            action: Some("read".to_owned()),
            path_args: vec!["path".to_owned()],
        },
    );
    let resolution = resolve(
        &config,
        &[listed("read_file", None), listed("write_file", None)],
    );
    let summary: Vec<(&str, &str, Risk, Vec<String>)> = resolution
        .tools
        .iter()
        .map(|t| {
            (
                t.model_name.as_str(),
                t.capability.as_str(),
                t.risk,
                t.path_args.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "fs__read_file",
                "mcp:fs:read_file:read",
                Risk::Low,
                vec!["path".to_owned()]
            ),
            (
                "fs__write_file",
                "mcp:fs:write_file:write",
                Risk::High,
                vec![]
            ),
        ]
    );
    assert!(resolution.warnings.is_empty(), "{:?}", resolution.warnings);
}

#[test]
fn unlisted_tools_are_never_offered_and_not_warned_about() {
    let mut config = server(&["read_file"]);
    config.default_action = Some("read".to_owned());
    let resolution = resolve(
        &config,
        &[listed("read_file", None), listed("delete_all", None)],
    );
    assert_eq!(resolution.tools.len(), 1);
    assert_eq!(
        resolution.unregistered,
        vec![Unregistered {
            name: "delete_all".to_owned(),
            reason: NOT_WHITELISTED.to_owned()
        }]
    );
    assert!(resolution.warnings.is_empty());
}

#[test]
fn a_p3_tool_is_warned_about_by_name() {
    let config = server(&["*"]);
    let resolution = resolve(&config, &[listed("echo", None)]);
    assert!(resolution.tools.is_empty());
    assert_eq!(resolution.warnings.len(), 1);
    let warning = &resolution.warnings[0];
    assert!(
        warning.contains("`echo`") && warning.contains("P3"),
        "{warning}"
    );
}

#[test]
fn configured_but_unlisted_tools_are_warned_about() {
    let mut config = server(&["ghost_allowed"]);
    config
        .tools
        .insert("ghost".to_owned(), ToolConfig::default());
    let resolution = resolve(&config, &[]);
    assert_eq!(resolution.warnings.len(), 2, "{:?}", resolution.warnings);
    assert!(resolution.warnings.iter().any(|w| w.contains("`ghost`")));
    assert!(
        resolution
            .warnings
            .iter()
            .any(|w| w.contains("`ghost_allowed`"))
    );
}

#[test]
fn names_are_cleaned_and_clashes_unregister_the_later_tool() {
    let mut config = server(&["*"]);
    config.default_action = Some("read".to_owned());
    let resolution = resolve(
        &config,
        &[
            listed("a.b", None),
            listed("a:b", None),
            listed(&"x".repeat(100), None),
        ],
    );
    let names: Vec<&str> = resolution
        .tools
        .iter()
        .map(|t| t.model_name.as_str())
        .collect();
    assert_eq!(
        names,
        vec!["fs__a_b".to_owned(), format!("fs__{}", "x".repeat(60))]
    );
    assert_eq!(resolution.unregistered.len(), 1);
    assert_eq!(resolution.unregistered[0].name, "a:b");
    assert!(
        resolution.unregistered[0]
            .reason
            .contains("clashes with tool `a.b`")
    );
}

#[test]
fn path_args_must_name_fitting_properties() {
    let mut config = server(&["*"]);
    config.default_action = Some("write".to_owned());
    for (pointer, ok) in [
        ("path", true),
        ("paths[]", true),
        ("missing", false),
        ("n", false),
        ("path[]", false),
    ] {
        config.tools.insert(
            "t".to_owned(),
            ToolConfig {
                action: None,
                path_args: vec![pointer.to_owned()],
            },
        );
        let resolution = resolve(&config, &[listed("t", None)]);
        assert_eq!(
            resolution.tools.len() == 1,
            ok,
            "{pointer}: {:?}",
            resolution.unregistered
        );
    }
}

#[test]
fn unknown_actions_and_unusable_schemas_are_not_registered() {
    let mut config = server(&["*"]);
    config.default_action = Some("frobnicate".to_owned());
    assert!(action(&config, listed("t", None)).is_err_and(|r| r.contains("frobnicate")));
    config.default_action = Some("read".to_owned());
    let mut remote = listed("t", None);
    remote.input_schema = json!({"$ref": "https://example.com/schema.json"});
    let reason = action(&config, remote).unwrap_err();
    assert!(reason.contains("input schema"), "{reason}");
}

#[test]
fn full_schemas_validate_refs_one_of_and_formats() {
    let schema = json!({
        "type": "object",
        "$defs": {"when": {"type": "string", "format": "date"}},
        "properties": {
            "when": {"$ref": "#/$defs/when"},
            "target": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        },
        "required": ["when"]
    });
    let validator = compile(&schema).unwrap();
    assert!(validator.is_valid(&json!({"when": "2026-12-01", "target": 3})));
    assert!(!validator.is_valid(&json!({"when": "yesterday"})));
    assert!(!validator.is_valid(&json!({"when": "2026-12-01", "target": 1.5})));
}

fn arb_annotations() -> impl Strategy<Value = Option<ToolAnnotations>> {
    proptest::option::of(
        (
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(r, d, o)| ToolAnnotations {
                read_only: r,
                destructive: d,
                idempotent: None,
                open_world: o,
            }),
    )
}

proptest! {
    #[test]
    fn every_listed_tool_gets_one_known_capability_or_is_unregistered(
        names in proptest::collection::vec("[a-zA-Z0-9_.:/ é-]{1,80}", 0..12),
        annotations in proptest::collection::vec(arb_annotations(), 12),
        trust in any::<bool>(),
        default_action in proptest::option::of(proptest::sample::select(vec!["read", "write", "network", "bogus"])),
        allow_all in any::<bool>(),
    ) {
        let mut config = server(if allow_all { &["*"] } else { &[] });
        if !allow_all {
            config.allow = names.iter().step_by(2).cloned().collect();
        }
        config.trust_annotations = trust;
        config.default_action = default_action.map(str::to_owned);
        let tools: Vec<ListedTool> = names
            .iter()
            .zip(&annotations)
            .map(|(name, annotations)| listed(name, *annotations))
            .collect();
        let resolution = resolve(&config, &tools);
        prop_assert_eq!(resolution.tools.len() + resolution.unregistered.len(), tools.len());
        let regex_ok = |name: &str| {
            !name.is_empty()
                && name.len() <= 64
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        let mut seen = std::collections::BTreeSet::new();
        for tool in &resolution.tools {
            prop_assert!(regex_ok(&tool.model_name), "{}", tool.model_name);
            prop_assert!(seen.insert(tool.model_name.clone()), "duplicate {}", tool.model_name);
            let capability = tool.capability.as_str();
            let expected = format!("mcp:fs:{}:{}", tool.listed.name, tool.action);
            prop_assert_eq!(capability, expected.as_str());
            prop_assert!(ACTIONS.contains(&tool.action.as_str()));
            prop_assert_eq!(tool.capability.action(), Some(tool.action.as_str()));
        }
    }
}
