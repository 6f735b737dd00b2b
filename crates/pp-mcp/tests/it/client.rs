//! `pp_mcp::client` against real MCP servers started as child processes: the npm
//! `server-everything` and `server-filesystem`, and our own misbehaving SDK server
//! (`tests/servers/misbehaving.mjs`), over stdio and streamable HTTP.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use pp_agent::Interrupt;
use pp_mcp::config::defaults;
use pp_mcp::{Backend, Connection, McpClients, McpError, ServerConfig, Start, Transport};
use pp_test_support::mcp_servers::{everything, filesystem, installed};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

fn config(name: &str, transport: Transport) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        transport,
        allow: vec!["*".to_owned()],
        default_action: None,
        trust_annotations: false,
        start: Start::Lazy,
        call_timeout: Duration::from_secs(60),
        max_output_bytes: defaults::MAX_OUTPUT_BYTES,
        include_instructions: false,
        tools: BTreeMap::new(),
        sandbox: pp_mcp::config::SandboxConfig::unconfined(),
    }
}

/// The server's count of cancelled calls once it reads `expected` (or after 10 s, to
/// fail with what it says): `notifications/cancelled` is a notification, sent without an
/// answer, so the next request may reach the server first.
async fn cancellations_seen(connection: &Connection, expected: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = call(connection, "cancelled", json!({})).await.unwrap();
        if seen == expected || std::time::Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn stdio(command: String, args: Vec<String>) -> Transport {
    Transport::Stdio {
        command,
        args,
        env: BTreeMap::new(),
        cwd: None,
    }
}

/// Our misbehaving server over stdio, started in `mode`.
fn misbehaving(dir: &Path, mode: &str) -> Transport {
    stdio(
        "node".to_owned(),
        vec![
            dir.join("misbehaving.mjs").display().to_string(),
            mode.to_owned(),
        ],
    )
}

async fn call(connection: &Connection, tool: &str, arguments: Value) -> Result<String, McpError> {
    let output = connection
        .call(tool, arguments, &Interrupt::default())
        .await?;
    assert!(!output.is_error, "{tool} failed: {}", output.text);
    Ok(output.text)
}

/// Whether `pid` is still a process (a zombie waiting for its reaper counts as gone).
fn process_exists(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
    match stat {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (boundedly) for `pid` to be gone; whether it is.
async fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !process_exists(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_lists_its_tools_with_annotations_and_echoes() {
    let Some(dir) = installed() else { return };
    let (command, args) = everything(&dir);
    let connection = Connection::new(config("everything", stdio(command, args)));
    assert_eq!(
        connection.instructions(),
        None,
        "nothing runs before first use"
    );
    assert_eq!(connection.pid().await, None);

    let tools = connection.list_tools().await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(
        echo.description.as_deref(),
        Some("Echoes back the input string")
    );
    let hints = echo.annotations.unwrap();
    assert_eq!(hints.read_only, Some(true));
    assert_eq!(hints.destructive, Some(false));
    assert_eq!(hints.open_world, Some(false));
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    assert!(
        connection
            .instructions()
            .is_some_and(|text| !text.is_empty())
    );

    assert_eq!(
        call(&connection, "echo", json!({"message": "hi"}))
            .await
            .unwrap(),
        "Echo: hi"
    );
    // The list is cached: the same answer without asking again.
    assert_eq!(connection.list_tools().await.unwrap(), tools);
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_reads_a_text_file_in_its_root() {
    let Some(dir) = installed() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("notes.txt"), "hello from the file").unwrap();
    let (command, args) = filesystem(&dir, &root_path);
    let connection = Connection::new(config("files", stdio(command, args)));

    let tools = connection.list_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "read_text_file"));
    let path = root_path.join("notes.txt").display().to_string();
    let text = call(&connection, "read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert_eq!(text, "hello from the file");
    connection.shutdown().await;
}

/// Set by [`the_environment_is_cleared_to_the_listed_variables`] for its re-run of itself.
const SECRET: &str = "POCKETPILOT_SECRET_TEST";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_cleared_to_the_listed_variables() {
    let Some(dir) = installed() else { return };
    #[expect(
        clippy::disallowed_methods,
        reason = "the test reads the secret it set"
    )]
    let secret = std::env::var_os(SECRET);
    if secret.is_none() {
        // Run this very test again with a secret in its environment (never set in ours).
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "client::the_environment_is_cleared_to_the_listed_variables",
                "--nocapture",
            ])
            .env(SECRET, "x")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let Transport::Stdio { command, args, .. } = misbehaving(&dir, "stdio") else {
        unreachable!()
    };
    let transport = Transport::Stdio {
        command,
        args,
        env: BTreeMap::from([("PP_LISTED".to_owned(), "yes".to_owned())]),
        cwd: None,
    };
    let connection = Connection::new(config("env", transport));
    let keys = call(&connection, "env", json!({})).await.unwrap();
    assert_eq!(keys, r#"["PP_LISTED"]"#);
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_in_its_configured_directory() {
    let Some(dir) = installed() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let Transport::Stdio { command, args, .. } = misbehaving(&dir, "stdio") else {
        unreachable!()
    };
    let transport = Transport::Stdio {
        command,
        args,
        env: BTreeMap::new(),
        cwd: Some(cwd.path().to_owned()),
    };
    let connection = Connection::new(config("cwd", transport));
    let reported = call(&connection, "cwd", json!({})).await.unwrap();
    assert_eq!(
        PathBuf::from(reported).canonicalize().unwrap(),
        cwd.path().canonicalize().unwrap()
    );
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_reported_and_the_server_restarts() {
    let Some(dir) = installed() else { return };
    let connection = Connection::new(config("crashy", misbehaving(&dir, "stdio")));
    connection.connect().await.unwrap();
    let first_pid = connection.pid().await.unwrap();

    let error = call(&connection, "crash", json!({})).await.unwrap_err();
    let McpError::Crashed { server, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(server, "crashy");
    assert!(reason.contains("exit status: 7"), "{reason}");
    assert!(reason.contains("crashing on purpose"), "{reason}");

    // The next uses restart it once the backoff has passed.
    let mut restarted = None;
    for _ in 0..50 {
        match call(&connection, "echo", json!({"message": "back"})).await {
            Ok(text) => {
                restarted = Some(text);
                break;
            }
            Err(McpError::Restarting { retry_in_ms, .. }) => {
                assert!(retry_in_ms <= 250, "{retry_in_ms}");
                tokio::time::sleep(Duration::from_millis(retry_in_ms + 10)).await;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(restarted.as_deref(), Some("Echo: back"));
    let second_pid = connection.pid().await.unwrap();
    assert_ne!(first_pid, second_pid);
    // The restarted server is listed afresh.
    let tools = connection.list_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "crash"));
    assert!(gone(first_pid).await);
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_uses_start_the_server_once() {
    let Some(dir) = installed() else { return };
    let starts = tempfile::tempdir().unwrap();
    let Transport::Stdio { command, args, .. } = misbehaving(&dir, "stdio") else {
        unreachable!()
    };
    let transport = Transport::Stdio {
        command,
        args,
        env: BTreeMap::from([(
            "PP_STARTS_DIR".to_owned(),
            starts.path().display().to_string(),
        )]),
        cwd: None,
    };
    let connection = Connection::new(config("shared", transport));
    let (one, two, tools) = tokio::join!(
        call(&connection, "echo", json!({"message": "one"})),
        call(&connection, "echo", json!({"message": "two"})),
        connection.list_tools(),
    );
    assert_eq!(one.unwrap(), "Echo: one");
    assert_eq!(two.unwrap(), "Echo: two");
    assert!(tools.unwrap().iter().any(|tool| tool.name == "hang"));
    let started: Vec<_> = std::fs::read_dir(starts.path()).unwrap().collect();
    assert_eq!(started.len(), 1, "{started:?}");
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_at_start_is_retried_with_backoff() {
    let Some(dir) = installed() else { return };
    let connection = Connection::new(config("broken", misbehaving(&dir, "crash-on-start")));

    let error = connection.connect().await.unwrap_err();
    let McpError::Start { server, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(server, "broken");
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(reason.contains("refusing to start"), "{reason}");

    // Every later use fails at once with Restarting until the backoff has passed, then
    // tries again; the wait doubles with each failure in a row.
    let mut failures = 1_u64;
    let mut waits = Vec::new();
    while failures < 3 {
        match connection.list_tools().await.unwrap_err() {
            McpError::Start { reason, .. } => {
                assert!(reason.contains("refusing to start"), "{reason}");
                failures += 1;
            }
            McpError::Restarting { retry_in_ms, .. } => {
                assert!(
                    retry_in_ms <= 250 << (failures - 1),
                    "{retry_in_ms} after {failures}"
                );
                waits.push(retry_in_ms);
                tokio::time::sleep(Duration::from_millis(retry_in_ms + 10)).await;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(!waits.is_empty(), "no Restarting seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_times_out_and_the_connection_stays_usable() {
    let Some(dir) = installed() else { return };
    let mut hanging = config("hangs", misbehaving(&dir, "stdio"));
    hanging.call_timeout = Duration::from_secs(2);
    let connection = Connection::new(hanging);

    let error = call(&connection, "hang", json!({})).await.unwrap_err();
    assert_eq!(
        error,
        McpError::Timeout {
            server: "hangs".to_owned(),
            secs: 2
        }
    );
    assert_eq!(
        call(&connection, "echo", json!({"message": "still here"}))
            .await
            .unwrap(),
        "Echo: still here"
    );
    // The server was told the call was cancelled.
    assert_eq!(cancellations_seen(&connection, "1").await, "1");
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_a_waiting_call() {
    let Some(dir) = installed() else { return };
    let marks = tempfile::tempdir().unwrap();
    let Transport::Stdio { command, args, .. } = misbehaving(&dir, "stdio") else {
        unreachable!()
    };
    let transport = Transport::Stdio {
        command,
        args,
        env: BTreeMap::from([("PP_MARK_DIR".to_owned(), marks.path().display().to_string())]),
        cwd: None,
    };
    let connection = Arc::new(Connection::new(config("slow", transport)));
    connection.connect().await.unwrap();
    let interrupt = Interrupt::default();
    let trigger = {
        // The task is cancelled once the server is inside the call.
        let interrupt = interrupt.clone();
        let hanging = marks.path().join("hanging");
        tokio::spawn(async move {
            while !hanging.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            interrupt.trigger();
        })
    };
    let error = connection
        .call("hang", json!({}), &interrupt)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        McpError::Cancelled {
            server: "slow".to_owned()
        }
    );
    trigger.await.unwrap();
    assert_eq!(cancellations_seen(&connection, "1").await, "1");
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_capped_with_a_marker() {
    let Some(dir) = installed() else { return };
    let mut flooding = config("floods", misbehaving(&dir, "stdio"));
    flooding.max_output_bytes = 1000;
    let connection = Connection::new(flooding);
    let text = call(&connection, "flood", json!({"bytes": 10 * 1024 * 1024}))
        .await
        .unwrap();
    assert_eq!(
        text,
        format!(
            "{}\n[… output cut at 1000 bytes of {}]",
            "x".repeat(1000),
            10 * 1024 * 1024
        )
    );
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_children_are_gone_after_shutdown() {
    let Some(dir) = installed() else { return };
    let connection = Connection::new(config("parent", misbehaving(&dir, "stdio")));
    let child: u32 = call(&connection, "spawn_child", json!({}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    let server = connection.pid().await.unwrap();
    assert!(process_exists(child));
    connection.shutdown().await;
    assert!(gone(server).await, "the server {server} outlived shutdown");
    assert!(gone(child).await, "its child {child} outlived shutdown");
    // A shut-down connection does not start again.
    let error = connection.connect().await.unwrap_err();
    assert!(matches!(error, McpError::Start { .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_connection_kills_the_process_group() {
    let Some(dir) = installed() else { return };
    let connection = Connection::new(config("dropped", misbehaving(&dir, "stdio")));
    let child: u32 = call(&connection, "spawn_child", json!({}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    let server = connection.pid().await.unwrap();
    drop(connection);
    assert!(gone(server).await, "the server {server} outlived the drop");
    assert!(gone(child).await, "its child {child} outlived the drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_a_start_error_naming_it() {
    let connection = Connection::new(config(
        "ghost",
        stdio("/nonexistent".to_owned(), Vec::new()),
    ));
    let error = connection.list_tools().await.unwrap_err();
    let McpError::Start { server, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(server, "ghost");
    assert!(reason.contains("/nonexistent"), "{reason}");
    assert!(error.to_string().contains("`ghost`"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_start_the_startup_servers_and_shut_all_down() {
    let Some(dir) = installed() else { return };
    let mut eager = config("eager", misbehaving(&dir, "stdio"));
    eager.start = Start::Startup;
    let mut broken = config("broken", stdio("/nonexistent".to_owned(), Vec::new()));
    broken.start = Start::Startup;
    let lazy = config("lazy", misbehaving(&dir, "stdio"));
    let clients = McpClients::new(vec![eager, broken, lazy]);

    let names: Vec<String> = clients
        .servers()
        .into_iter()
        .map(|(config, backend)| {
            assert_eq!(config.name, backend.server());
            config.name
        })
        .collect();
    assert_eq!(names, ["eager", "broken", "lazy"]);

    let errors = clients.start_eager().await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(matches!(&errors[0], McpError::Start { server, .. } if server == "broken"));
    let eager = clients.connection("eager").unwrap();
    let pid = eager.pid().await.unwrap();
    assert_eq!(clients.connection("lazy").unwrap().pid().await, None);
    assert!(clients.connection("nobody").is_none());

    clients.shutdown().await;
    assert!(gone(pid).await);
}

/// A server process a test started for HTTP: killed when dropped.
struct HttpServer {
    _child: tokio::process::Child,
    url: String,
}

/// `server-everything streamableHttp` on a free loopback port (it takes `PORT`).
async fn everything_over_http(dir: &Path) -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (command, mut args) = everything(dir);
    args[1] = "streamableHttp".to_owned();
    let mut child = tokio::process::Command::new(command)
        .args(args)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("listening on port") {
            break;
        }
    }
    HttpServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// Our misbehaving server over HTTP (it picks its port and prints it).
async fn misbehaving_over_http(dir: &Path) -> HttpServer {
    let mut child = tokio::process::Command::new("node")
        .arg(dir.join("misbehaving.mjs"))
        .arg("http")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let port = serde_json::from_str::<Value>(&line).unwrap()["port"]
        .as_u64()
        .unwrap();
    HttpServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_lists_and_echoes() {
    let Some(dir) = installed() else { return };
    let server = everything_over_http(&dir).await;
    let connection = Connection::new(config(
        "remote",
        Transport::Http {
            url: server.url.clone(),
            headers: BTreeMap::new(),
        },
    ));
    let tools = connection.list_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    assert_eq!(
        call(&connection, "echo", json!({"message": "over http"}))
            .await
            .unwrap(),
        "Echo: over http"
    );
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_headers_go_with_every_request() {
    let Some(dir) = installed() else { return };
    let server = misbehaving_over_http(&dir).await;
    let connection = Connection::new(config(
        "remote",
        Transport::Http {
            url: server.url.clone(),
            headers: BTreeMap::from([
                ("X-PocketPilot-Test".to_owned(), "yes".to_owned()),
                ("Authorization".to_owned(), "Bearer token-1".to_owned()),
            ]),
        },
    ));
    let seen: Value =
        serde_json::from_str(&call(&connection, "headers", json!({})).await.unwrap()).unwrap();
    assert_eq!(seen["x-pocketpilot-test"], "yes");
    assert_eq!(seen["authorization"], "Bearer token-1");
    connection.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_is_not_there_is_a_start_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let connection = Connection::new(config(
        "offline",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::new(),
        },
    ));
    let error = connection.connect().await.unwrap_err();
    assert!(
        matches!(&error, McpError::Start { server, .. } if server == "offline"),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_goes_away_fails_the_call_instead_of_hanging() {
    let Some(dir) = installed() else { return };
    let server = misbehaving_over_http(&dir).await;
    let connection = Connection::new(config(
        "remote",
        Transport::Http {
            url: server.url.clone(),
            headers: BTreeMap::new(),
        },
    ));
    assert_eq!(
        call(&connection, "echo", json!({"message": "up"}))
            .await
            .unwrap(),
        "Echo: up"
    );
    let HttpServer {
        _child: mut child, ..
    } = server;
    child.kill().await.unwrap();
    let error = call(&connection, "echo", json!({"message": "down"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, McpError::Crashed { server, .. } if server == "remote"),
        "{error:?}"
    );
    // It is restarted (and, the server being gone, fails to start) after the backoff.
    let error = connection.connect().await.unwrap_err();
    assert!(
        matches!(&error, McpError::Restarting { .. } | McpError::Start { .. }),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_runs_once_per_workspace_and_an_http_server_once() {
    let Some(dir) = installed() else { return };
    let stdio_server = config("local", misbehaving(&dir, "stdio"));
    let http_server = config(
        "remote",
        Transport::Http {
            url: "http://127.0.0.1:9/mcp".to_owned(),
            headers: BTreeMap::new(),
        },
    );
    let clients = McpClients::new(vec![stdio_server, http_server]);
    let (one, two) = (Path::new("/work/one"), Path::new("/work/two"));
    let pointer = |servers: &[(ServerConfig, Arc<dyn Backend>)], index: usize| {
        Arc::as_ptr(&servers[index].1).cast::<()>()
    };
    let first = clients.servers_for(Some(one));
    let again = clients.servers_for(Some(one));
    let other = clients.servers_for(Some(two));
    assert_eq!(
        pointer(&first, 0),
        pointer(&again, 0),
        "the same workspace's process"
    );
    assert_ne!(
        pointer(&first, 0),
        pointer(&other, 0),
        "another workspace, another process"
    );
    assert_eq!(
        pointer(&first, 1),
        pointer(&other, 1),
        "one HTTP connection"
    );

    // Each workspace's process is its own, and shutdown ends them all.
    let (a, b) = (first[0].1.list_tools().await, other[0].1.list_tools().await);
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    clients.shutdown().await;
    // Nothing starts once the clients are shut down, not even for a new workspace.
    let late = clients.servers_for(Some(Path::new("/work/three")));
    let refused = late[0].1.list_tools().await;
    assert!(
        matches!(refused, Err(McpError::Start { .. })),
        "{refused:?}"
    );
}
