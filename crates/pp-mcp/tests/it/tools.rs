//! `McpTool` over the real filesystem server (`@modelcontextprotocol/server-filesystem`,
//! started through `pp_mcp::Connection`): path arguments reach the server absolute and
//! inside the workspace, an escape never reaches it, its full input schema is enforced,
//! and the per-call overhead of the tool against calling the connection directly.
//!
//! The server's own allowed root is the temp folder holding both `workspace/` and
//! `outside/`: the server itself would write outside, so what stays absent there shows
//! our side kept the call from it.
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    clippy::print_stderr,
    reason = "test fixtures with std::fs; the overhead is printed, never asserted"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_agent::{Interrupt, Tool, ToolContext};
use pp_gate::Jail;
use pp_mcp::config::defaults;
use pp_mcp::{Backend, Connection, McpTool, ServerConfig, Start, ToolConfig, Transport, resolve};
use pp_test_support::mcp_servers::{filesystem, installed};
use pp_types::ToolOutput;
use serde_json::json;

fn config(servers: &Path, root: &Path) -> ServerConfig {
    let (command, args) = filesystem(servers, root);
    let mut tools = BTreeMap::new();
    for (tool, action, pointer) in [
        ("write_file", "write", "path"),
        ("read_text_file", "read", "path"),
        ("read_multiple_files", "read", "paths[]"),
    ] {
        tools.insert(
            tool.to_owned(),
            ToolConfig {
                action: Some(action.to_owned()),
                path_args: vec![pointer.to_owned()],
            },
        );
    }
    ServerConfig {
        name: "fs".to_owned(),
        transport: Transport::Stdio {
            command,
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        allow: Vec::new(),
        default_action: None,
        trust_annotations: false,
        start: Start::Lazy,
        call_timeout: Duration::from_secs(60),
        max_output_bytes: defaults::MAX_OUTPUT_BYTES,
        include_instructions: false,
        tools,
        sandbox: pp_mcp::config::SandboxConfig::unconfined(),
    }
}

struct Setup {
    base: tempfile::TempDir,
    connection: Arc<Connection>,
    tools: BTreeMap<String, McpTool>,
}

async fn setup(servers: &Path) -> Setup {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("workspace")).unwrap();
    std::fs::create_dir(base.path().join("outside")).unwrap();
    let config = config(servers, base.path());
    let connection = Arc::new(Connection::new(config.clone()));
    let listed = connection.list_tools().await.unwrap();
    let resolution = resolve(&config, &listed);
    assert!(resolution.warnings.is_empty(), "{:?}", resolution.warnings);
    let jail = Arc::new(Jail::new(&base.path().join("workspace")).unwrap());
    let backend: Arc<dyn Backend> = connection.clone();
    let tools = resolution
        .tools
        .into_iter()
        .map(|tool| {
            (
                tool.listed.name.clone(),
                McpTool::new(tool, Arc::clone(&backend), Arc::clone(&jail)),
            )
        })
        .collect();
    Setup {
        base,
        connection,
        tools,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_reach_the_real_server_absolute_and_escapes_never_do() {
    let Some(servers) = installed() else {
        return;
    };
    let setup = setup(&servers).await;
    assert_eq!(
        setup.tools.keys().collect::<Vec<_>>(),
        ["read_multiple_files", "read_text_file", "write_file"]
    );
    let context = ToolContext::default();
    let write = &setup.tools["write_file"];
    // A relative path (with a `..` inside) is written where the jail resolves it.
    std::fs::create_dir(setup.base.path().join("workspace/notes")).unwrap();
    let output = write
        .execute(
            &context,
            &json!({"path": "notes/../notes/a.txt", "content": "hello\n"}),
        )
        .await;
    assert!(matches!(output, ToolOutput::Success { .. }), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(setup.base.path().join("workspace/notes/a.txt")).unwrap(),
        "hello\n"
    );
    let read = &setup.tools["read_multiple_files"];
    let output = read
        .execute(&context, &json!({"paths": ["notes/a.txt"]}))
        .await;
    assert!(
        matches!(&output, ToolOutput::Success { content } if content.contains("hello")),
        "{output:?}"
    );

    // Escapes are denied before the server is asked: it would have written them.
    std::os::unix::fs::symlink(
        setup.base.path().join("outside"),
        setup.base.path().join("workspace/out"),
    )
    .unwrap();
    let outside = setup.base.path().join("outside/pwned.txt");
    for path in [
        "../outside/pwned.txt".to_owned(),
        outside.display().to_string(),
        "out/pwned.txt".to_owned(),
    ] {
        let output = write
            .execute(&context, &json!({"path": path, "content": "x"}))
            .await;
        assert!(
            matches!(output, ToolOutput::Denied(_)),
            "{path}: {output:?}"
        );
    }
    assert!(!outside.exists(), "the server never saw an escaping call");

    // The server's full schema: `content` is required.
    let error = write.validate(&json!({"path": "b.txt"})).unwrap_err();
    assert!(error.contains("content"), "{error}");
    setup.connection.shutdown().await;
}

/// What the tool adds to a call (validation, the jail, the absolute path) against the
/// connection alone; printed for the notes, never asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_call_overhead_against_the_connection() {
    let Some(servers) = installed() else {
        return;
    };
    let setup = setup(&servers).await;
    let workspace = setup.base.path().join("workspace");
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    let absolute = workspace.canonicalize().unwrap().join("a.txt");
    let tool = &setup.tools["read_text_file"];
    let context = ToolContext::default();
    let interrupt = Interrupt::default();
    let rounds = 200;
    // Warm up both paths.
    let _ = tool.execute(&context, &json!({"path": "a.txt"})).await;
    let direct_started = Instant::now();
    for _ in 0..rounds {
        let output = setup
            .connection
            .call(
                "read_text_file",
                json!({"path": absolute.display().to_string()}),
                &interrupt,
            )
            .await
            .unwrap();
        assert!(!output.is_error);
    }
    let direct = direct_started.elapsed();
    let tool_started = Instant::now();
    for _ in 0..rounds {
        let arguments = json!({"path": "a.txt"});
        tool.validate(&arguments).unwrap();
        let output = tool.execute(&context, &arguments).await;
        assert!(matches!(output, ToolOutput::Success { .. }));
    }
    let through_tool = tool_started.elapsed();
    eprintln!(
        "read_text_file x{rounds}: connection {:?}/call, McpTool (validate + jail + call) {:?}/call",
        direct / rounds,
        through_tool / rounds
    );
    setup.connection.shutdown().await;
}
