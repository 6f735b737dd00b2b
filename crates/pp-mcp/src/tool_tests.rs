use std::collections::BTreeMap;
use std::sync::Mutex;

use pp_agent::{Interrupt, check_edit};
use pp_gate::Gate;
use pp_types::{Decision, DenyRule, Policy, Risk};
use serde_json::json;

use super::*;
use crate::backend::{CallOutput, ListedTool, McpError};
use crate::config::{ServerConfig, Start, ToolConfig, Transport};
use crate::resolve::resolve;

/// Records every call; answers with `answer`.
struct Fake {
    calls: Mutex<Vec<(String, Value)>>,
    answer: Result<CallOutput, McpError>,
}

impl Fake {
    fn new(answer: Result<CallOutput, McpError>) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(Vec::new()),
            answer,
        })
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

impl Backend for Fake {
    fn server(&self) -> &str {
        "fs"
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>> {
        Box::pin(async { Ok(vec![write_tool()]) })
    }

    fn instructions(&self) -> Option<String> {
        None
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        _interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_owned(), arguments));
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn ok(text: &str) -> Result<CallOutput, McpError> {
    Ok(CallOutput {
        text: text.to_owned(),
        is_error: false,
    })
}

fn write_tool() -> ListedTool {
    ListedTool {
        name: "write_file".to_owned(),
        description: Some("Write a file. ".repeat(200)),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "sources": {"type": "array", "items": {"type": "string"}},
                "content": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}]}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        annotations: None,
    }
}

fn config() -> ServerConfig {
    let mut tools = BTreeMap::new();
    tools.insert(
        "write_file".to_owned(),
        ToolConfig {
            action: Some("write".to_owned()),
            path_args: vec!["path".to_owned(), "sources[]".to_owned()],
        },
    );
    ServerConfig {
        name: "fs".to_owned(),
        transport: Transport::Stdio {
            command: "node".to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        allow: Vec::new(),
        default_action: None,
        trust_annotations: false,
        start: Start::Lazy,
        call_timeout: crate::config::defaults::CALL_TIMEOUT,
        max_output_bytes: crate::config::defaults::MAX_OUTPUT_BYTES,
        include_instructions: false,
        tools,
        sandbox: crate::config::SandboxConfig::unconfined(),
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    jail: Arc<Jail>,
    tool: McpTool,
    fake: Arc<Fake>,
}

fn setup(answer: Result<CallOutput, McpError>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let jail = Arc::new(Jail::new(dir.path()).unwrap());
    let resolution = resolve(&config(), &[write_tool()]);
    let resolved = resolution.tools.into_iter().next().unwrap();
    let fake = Fake::new(answer);
    let backend: Arc<dyn Backend> = fake.clone();
    let tool = McpTool::new(resolved, backend, Arc::clone(&jail));
    Setup {
        _dir: dir,
        jail,
        tool,
        fake,
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn spec_names_capability_and_marks_the_description() {
    let setup = setup(ok("done"));
    let spec = setup.tool.spec();
    assert_eq!(spec.name, "fs__write_file");
    assert_eq!(
        spec.capability.as_ref().map(|c| c.as_str()),
        Some("mcp:fs:write_file:write")
    );
    assert_eq!(spec.risk, Risk::High);
    assert_eq!(spec.path_params, vec!["path", "sources[]"]);
    assert!(
        spec.description
            .starts_with("[tool `write_file` of MCP server `fs`")
    );
    assert!(spec.description.contains("untrusted"));
    let shown = spec.description.split_once("] ").unwrap().1;
    assert_eq!(
        shown.chars().count(),
        MAX_DESCRIPTION_CHARS + 1,
        "capped with a marker"
    );
}

#[test]
fn full_schema_validation_applies_to_calls_and_edits() {
    let setup = setup(ok("done"));
    let gate = Gate::new(Arc::clone(&setup.jail));
    assert_eq!(
        setup
            .tool
            .validate(&json!({"path": "a.txt", "content": null})),
        Ok(())
    );
    // `anyOf` with `maxLength`: the hand-written subset validator ignores both.
    let long = json!({"path": "a.txt", "content": "x".repeat(30)});
    assert!(pp_agent::schema::validate(&setup.tool.spec().parameters, &long).is_ok());
    let error = setup.tool.validate(&long).unwrap_err();
    assert!(error.starts_with("arguments/content"), "{error}");
    assert!(check_edit(&setup.tool, &gate, &long).is_err_and(|e| e == error));
    // An edit that escapes the workspace is refused by the gate.
    let escape = json!({"path": "../outside.txt"});
    let refusal = check_edit(&setup.tool, &gate, &escape).unwrap_err();
    assert!(refusal.starts_with("denied by policy"), "{refusal}");
    let array_escape = json!({"path": "a.txt", "sources": ["b", "/etc/passwd"]});
    assert!(matches!(
        gate.evaluate(setup.tool.spec(), &array_escape),
        Decision::Deny(denial) if denial.rule == DenyRule::AbsolutePath
    ));
    assert!(matches!(
        gate.evaluate(setup.tool.spec(), &json!({"path": "a.txt"})),
        Decision::Ask { .. }
    ));
    assert!(setup.fake.calls().is_empty());
}

#[test]
fn path_arguments_reach_the_server_absolute_and_inside() {
    let setup = setup(ok("written"));
    std::fs::create_dir(setup.jail.root().join("notes")).unwrap();
    let output = run(setup.tool.execute(
        &ToolContext::default(),
        &json!({"path": "notes/../notes/a.txt", "sources": ["b.txt", "notes"], "content": "hi"}),
    ));
    assert_eq!(output, ToolOutput::success("written"));
    let root = setup.jail.root().display().to_string();
    assert_eq!(
        setup.fake.calls(),
        vec![(
            "write_file".to_owned(),
            json!({
                "path": format!("{root}/notes/a.txt"),
                "sources": [format!("{root}/b.txt"), format!("{root}/notes")],
                "content": "hi"
            })
        )]
    );
}

#[test]
fn an_escaping_path_is_denied_and_the_server_never_called() {
    let setup = setup(ok("written"));
    std::os::unix::fs::symlink("/etc", setup.jail.root().join("link")).unwrap();
    for arguments in [
        json!({"path": "../x"}),
        json!({"path": "/etc/passwd"}),
        json!({"path": "a", "sources": ["link/passwd"]}),
    ] {
        let output = run(setup.tool.execute(&ToolContext::default(), &arguments));
        assert!(
            matches!(output, ToolOutput::Denied(_)),
            "{arguments}: {output:?}"
        );
    }
    assert!(setup.fake.calls().is_empty());
}

#[test]
fn server_errors_are_tool_errors() {
    let failed = setup(Ok(CallOutput {
        text: "no such file".to_owned(),
        is_error: true,
    }));
    let output = run(failed
        .tool
        .execute(&ToolContext::default(), &json!({"path": "a"})));
    assert_eq!(
        output,
        ToolOutput::error("MCP server `fs` reported an error: no such file")
    );
    let timeout = setup(Err(McpError::Timeout {
        server: "fs".to_owned(),
        secs: 3,
    }));
    let output = run(timeout
        .tool
        .execute(&ToolContext::default(), &json!({"path": "a"})));
    assert!(matches!(output, ToolOutput::Error { message } if message.contains("within 3 s")));
}

#[test]
fn a_cancelled_task_does_not_call() {
    let setup = setup(ok("written"));
    let context = ToolContext::default();
    context.interrupt.trigger();
    let output = run(setup.tool.execute(&context, &json!({"path": "a"})));
    assert!(matches!(output, ToolOutput::Error { .. }));
    assert!(setup.fake.calls().is_empty());
}

#[test]
fn the_preview_names_server_tool_and_action() {
    let setup = setup(ok("written"));
    let preview = run(setup
        .tool
        .preview(&ToolContext::default(), &json!({"path": "x/../a.txt"})))
    .unwrap();
    assert_eq!(
        preview.mcp,
        Some(McpCallPreview {
            server: "fs".to_owned(),
            tool: "write_file".to_owned(),
            action: "write".to_owned(),
            sandbox: None,
        })
    );
    assert_eq!(preview.target, "x/../a.txt");
    assert_eq!(preview.resolved.as_deref(), Some("a.txt"));
}

#[test]
fn an_approved_call_is_never_stale() {
    let setup = setup(ok("written"));
    let context = ToolContext::default();
    let arguments = json!({"path": "x/../a.txt"});
    let preview = run(setup.tool.preview(&context, &arguments)).unwrap();
    let state = run(setup.tool.target_state(&context, &arguments)).unwrap();
    assert_eq!(state.fingerprint, preview.fingerprint);
    assert_eq!(state.identity, "a.txt");
}
