//! Stdio MCP servers run confined, through the same `pocketpilot __sandbox` as
//! `run_command` (docs/mcp.md, "The server's sandbox"): a server written with the
//! official Python SDK (`crates/pp-mcp/tests/servers/python/probe_server.py`, in the venv
//! `scripts/test.sh` makes) cannot read a file outside what it may read (a stand-in for
//! `$HOME`), nor a file in the data directory, nor connect to a loopback listener; with
//! `network = true` it connects. The official filesystem server (npm) and the Python
//! server keep listing and calling tools under the defaults. `mcp list --json` and `GET
//! /api/mcp/servers` show each server's sandbox; a card of a server with the network
//! shows it, and one of a server with `confined = false` says "NOT confined"; a sandbox
//! that cannot be set up says why in the start error.
//!
//! Skipped (with a message) where the kernel has no usable Landlock or the servers are
//! not installed; under CI (`CI=true`) either is a failure.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pp_test_support::{TempTree, mcp_servers};
use serde_json::{Value, json};

use crate::mcp_tools::{array, quoted};
use crate::shell::landlock_or_skip;
use crate::{pocketpilot_in, text, write_script};

/// `[[mcp.server]]` for the Python probe server, with `extra` lines.
fn probe_server(command: &str, args: &[String], extra: &str) -> String {
    format!(
        "[[mcp.server]]\nname = \"probe\"\ncommand = {}\nargs = {}\n{extra}\n",
        quoted(command),
        array(args),
    )
}

/// The data directory of the tree's runs.
fn data_dir(tree: &TempTree) -> PathBuf {
    tree.base().join("home")
}

/// Writes `body` as the config file and returns its path.
fn config(tree: &TempTree, body: &str) -> PathBuf {
    let path = tree.base().join("config.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// Runs `pocketpilot --config CONFIG ARGS…` without a terminal.
fn cli(tree: &TempTree, config: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = pocketpilot_in(&data_dir(tree))
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(tree.workspace())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

/// Runs a scripted task with `--json` in the tree's workspace; the exit code, the
/// events and stderr.
fn run_json(tree: &TempTree, config: &Path, turns: &Value) -> (Option<i32>, Vec<Value>, String) {
    let script = write_script(tree.base(), turns).display().to_string();
    let workspace = tree.workspace().display().to_string();
    let (code, stdout, stderr) = cli(
        tree,
        config,
        &[
            "run",
            "--json",
            "--workspace",
            &workspace,
            "--script",
            &script,
            "probe",
        ],
    );
    let events = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (code, events, stderr)
}

/// The contents of the task's tool results, in order.
fn results(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["type"] == "tool_result")
        .map(|event| event["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A loopback listener counting the connections it accepts.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let mut buffer = [0_u8; 64];
            let _ = stream.read(&mut buffer);
        }
    });
    (port, accepted)
}

/// A file standing for the user's home: outside the workspace, the data directory and
/// everything the server needs to start.
fn home_canary(tree: &TempTree) -> String {
    tree.outside_file(".ssh/id_canary", "home secret\n")
        .display()
        .to_string()
}

/// A file in the data directory.
fn data_canary(tree: &TempTree) -> String {
    let dir = data_dir(tree);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("canary.txt");
    std::fs::write(&path, "data secret\n").unwrap();
    path.display().to_string()
}

#[test]
fn a_confined_python_server_reads_neither_home_nor_the_data_directory_nor_connects() {
    if !landlock_or_skip("a_confined_python_server_reads_neither_home_nor_the_data_directory") {
        return;
    }
    let Some((python, args)) = mcp_servers::python_probe() else {
        return;
    };
    let tree = TempTree::new();
    tree.file("notes.txt", "workspace text\n");
    let (home, data) = (home_canary(&tree), data_canary(&tree));
    let inside = tree.workspace().join("notes.txt").display().to_string();
    let (port, accepted) = listener();
    let config = config(
        &tree,
        &probe_server(&python, &args, "allow = [\"*\"]\ndefault_action = \"read\""),
    );
    let (code, events, stderr) = run_json(
        &tree,
        &config,
        &json!([
            {"tool_calls": [{"name": "probe__read_path", "arguments": {"path": home}}]},
            {"tool_calls": [{"name": "probe__read_path", "arguments": {"path": data}}]},
            {"tool_calls": [{"name": "probe__connect", "arguments": {"port": port}}]},
            {"tool_calls": [{"name": "probe__read_path", "arguments": {"path": inside}}]},
            {"tool_calls": [{"name": "probe__echo", "arguments": {"message": "still answering"}}]},
            {"content": "done"}
        ]),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let results = results(&events);
    assert_eq!(results.len(), 5, "{results:?}\n{stderr}");
    assert!(
        results[0].starts_with("DENIED PermissionError"),
        "home: {results:?}"
    );
    assert!(
        results[1].starts_with("DENIED PermissionError"),
        "data: {results:?}"
    );
    assert!(
        results[2].starts_with("DENIED PermissionError"),
        "connect: {results:?}"
    );
    assert!(results.iter().all(|r| !r.contains("secret")), "{results:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "nothing connected");
    // The workspace is readable (every tool reads: the default is `workspace = "read"`)
    // and the SDK's server keeps working.
    assert_eq!(results[3], "READ workspace text\n");
    assert_eq!(results[4], "still answering");
}

#[test]
fn with_network_true_the_server_connects_and_its_card_shows_the_sandbox() {
    if !landlock_or_skip("with_network_true_the_server_connects") {
        return;
    }
    let Some((python, args)) = mcp_servers::python_probe() else {
        return;
    };
    let tree = TempTree::new();
    let home = home_canary(&tree);
    let (port, accepted) = listener();
    let config = config(
        &tree,
        &probe_server(
            &python,
            &args,
            "[mcp.server.tools.connect]\naction = \"network\"\n\
             [mcp.server.tools.read_path]\naction = \"read\"\n\
             [mcp.server.sandbox]\nnetwork = true\n",
        ),
    );
    let report = list_json(&tree, &config);
    assert_eq!(
        report["servers"][0]["sandbox"],
        json!({"confined": true, "workspace": "write", "read": [], "write": [], "network": true})
    );
    let (code, events, stderr) = run_json(
        &tree,
        &config,
        &json!([
            {"tool_calls": [{"name": "probe__read_path", "arguments": {"path": home}}]},
            {"tool_calls": [{"name": "probe__connect", "arguments": {"port": port}}]},
            {"content": "done"}
        ]),
    );
    assert_eq!(code, Some(3), "the connect waits for approval: {stderr}");
    assert!(
        results(&events)[0].starts_with("DENIED PermissionError"),
        "the network opens no file: {events:?}"
    );
    assert!(
        stderr.contains("│ sandbox:    workspace write, network"),
        "the card shows the wider sandbox: {stderr}"
    );
    let pending = events
        .iter()
        .find(|event| event["approval_id"].is_string())
        .unwrap_or_else(|| panic!("no pending approval: {events:?}"));
    let id = pending["approval_id"].as_str().unwrap();
    let (code, stdout, _) = cli(&tree, &config, &["approvals", "show", id, "--json"]);
    assert_eq!(code, Some(0));
    let card: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(card["mcp"]["sandbox"]["network"], true, "{card}");
    let (code, stdout, stderr) = cli(&tree, &config, &["approvals", "approve", id]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        pp_test_support::wait_until(Duration::from_secs(5), || accepted.load(Ordering::SeqCst)
            > 0),
        "the approved connect reached the listener: {stdout}{stderr}"
    );
}

#[test]
fn a_server_with_confined_false_is_not_confined_and_every_card_says_so() {
    let Some((python, args)) = mcp_servers::python_probe() else {
        return;
    };
    let tree = TempTree::new();
    let config = config(
        &tree,
        &probe_server(
            &python,
            &args,
            "[mcp.server.tools.echo]\naction = \"write\"\n\
             [mcp.server.sandbox]\nconfined = false\n",
        ),
    );
    let report = list_json(&tree, &config);
    assert_eq!(
        report["servers"][0]["sandbox"]["confined"], false,
        "{report}"
    );
    let (code, stdout, _) = cli(&tree, &config, &["mcp", "list"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("sandbox: NOT confined"), "{stdout}");
    let (code, events, stderr) = run_json(
        &tree,
        &config,
        &json!([
            {"tool_calls": [{"name": "probe__echo", "arguments": {"message": "hi"}}]},
            {"content": "done"}
        ]),
    );
    assert_eq!(code, Some(3), "{events:?}{stderr}");
    assert!(stderr.contains("!! NOT confined !!"), "{stderr}");
}

fn list_json(tree: &TempTree, config: &Path) -> Value {
    let (code, stdout, stderr) = cli(tree, config, &["mcp", "list", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

#[test]
fn the_official_filesystem_server_works_confined_to_the_workspace() {
    if !landlock_or_skip("the_official_filesystem_server_works_confined_to_the_workspace") {
        return;
    }
    let Some(servers) = mcp_servers::installed() else {
        return;
    };
    let tree = TempTree::new();
    tree.file("a.txt", "alpha\n");
    let (command, args) = mcp_servers::filesystem(&servers, tree.workspace());
    let body = format!(
        "[[mcp.server]]\nname = \"fs\"\ncommand = {}\nargs = {}\nenv = {{ PATH = {} }}\n\
         allow = [\"list_directory\", \"read_text_file\"]\ndefault_action = \"read\"\n\
         [mcp.server.tools.write_file]\naction = \"write\"\npath_args = [\"path\"]\n",
        quoted(&command),
        array(&args),
        quoted("/usr/local/bin:/usr/bin:/bin"),
    );
    let config = config(&tree, &body);
    let report = list_json(&tree, &config);
    let fs = &report["servers"][0];
    assert_eq!(fs["error"], Value::Null, "{fs}");
    assert_eq!(
        fs["sandbox"],
        json!({"confined": true, "workspace": "write", "read": [], "write": [], "network": false})
    );
    let path = tree.workspace().display().to_string();
    let (code, events, stderr) = run_json(
        &tree,
        &config,
        &json!([
            {"tool_calls": [{"name": "fs__list_directory", "arguments": {"path": path}}]},
            {"tool_calls": [{"name": "fs__write_file", "arguments": {"path": "b.txt", "content": "beta\n"}}]},
            {"content": "done"}
        ]),
    );
    assert_eq!(code, Some(3), "the write waits: {events:?}{stderr}");
    assert!(results(&events)[0].contains("a.txt"), "{events:?}");
    assert!(
        !stderr.contains("│ sandbox:"),
        "the default sandbox is not repeated on the card: {stderr}"
    );
    let id = events
        .iter()
        .find_map(|event| event["approval_id"].as_str())
        .unwrap()
        .to_owned();
    let (code, stdout, stderr) = cli(&tree, &config, &["approvals", "approve", &id]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(tree.read("b.txt"), "beta\n");
}

#[test]
fn a_sandbox_that_cannot_be_set_up_says_why_in_the_start_error() {
    if !landlock_or_skip("a_sandbox_that_cannot_be_set_up_says_why_in_the_start_error") {
        return;
    }
    let Some((python, args)) = mcp_servers::python_probe() else {
        return;
    };
    let tree = TempTree::new();
    let missing = tree.outside().join("no-such-cache").display().to_string();
    let config = config(
        &tree,
        &probe_server(
            &python,
            &args,
            &format!(
                "allow = [\"*\"]\ndefault_action = \"read\"\n[mcp.server.sandbox]\nwrite = [{}]\n",
                quoted(&missing)
            ),
        ),
    );
    let (code, stdout, _) = cli(&tree, &config, &["mcp", "check", "--json"]);
    assert_eq!(code, Some(1), "{stdout}");
    let checked: Value = serde_json::from_str(&stdout).unwrap();
    let error = checked["servers"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the sandbox could not start it") && error.contains("no-such-cache"),
        "{checked}"
    );
}

#[test]
fn get_api_mcp_servers_shows_each_servers_sandbox() {
    let Some((python, args)) = mcp_servers::python_probe() else {
        return;
    };
    let tree = TempTree::new();
    let home = data_dir(&tree);
    let dir = home.join("config/pocketpilot");
    std::fs::create_dir_all(&dir).unwrap();
    let cache = tree.outside().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let body = format!(
        "{}[[mcp.server]]\nname = \"remote\"\nurl = \"http://127.0.0.1:9/mcp\"\nallow = [\"*\"]\n",
        probe_server(
            &python,
            &args,
            &format!(
                "allow = [\"*\"]\ndefault_action = \"read\"\n[mcp.server.sandbox]\nconfined = false\nwrite = [{}]\n",
                quoted(&cache.display().to_string())
            ),
        )
    );
    std::fs::write(dir.join("pocketpilot.toml"), body).unwrap();
    let server = crate::http::Server::start(&home, tree.workspace(), None);
    let (status, report) = server.call("GET", "/api/mcp/servers", None);
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["servers"][0]["sandbox"],
        json!({"confined": false, "workspace": "read", "read": [],
               "write": [cache.display().to_string()], "network": false}),
        "{report}"
    );
    assert_eq!(report["servers"][1]["sandbox"], Value::Null, "{report}");
}

#[test]
fn sandbox_tables_are_checked_when_the_config_is_read() {
    let tree = TempTree::new();
    let data = data_dir(&tree);
    for (table, needle) in [
        ("workspace = \"all\"", "sandbox.workspace `all`"),
        (
            "read = [\"cache\"]",
            "sandbox.read path `cache` must be absolute",
        ),
        (
            &format!(
                "write = [{}]",
                quoted(&data.join("x").display().to_string())
            ) as &str,
            "PocketPilot's own data",
        ),
        ("netwrok = true", "netwrok"),
    ] {
        let config = config(
            &tree,
            &format!(
                "[[mcp.server]]\nname = \"a\"\ncommand = \"x\"\n[mcp.server.sandbox]\n{table}\n"
            ),
        );
        let (code, _, stderr) = cli(&tree, &config, &["mcp", "list"]);
        assert_ne!(code, Some(0), "{table}");
        assert!(stderr.contains(needle), "{table}: {stderr}");
    }
}
