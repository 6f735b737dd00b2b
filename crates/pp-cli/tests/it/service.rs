//! The store-backed CLI and `serve`: approvals from another process, restarts, crashes.

use std::process::Stdio;
use std::time::Duration;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::{Server, request};
use crate::{pocketpilot_in, text, write_script};

/// A script that writes `a.txt` (asking first), then answers "written".
fn write_a_script(tree: &TempTree) -> std::path::PathBuf {
    write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
                {"content": "written"}]),
    )
}

fn json_out(output: &std::process::Output) -> Value {
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{}", text(output).0))
}

#[test]
fn a_run_that_waits_is_resolved_from_another_process() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_a_script(&tree);
    let run = pocketpilot_in(&home)
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(&script)
        .arg("write a")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "{}", text(&run).1);
    let pending = json_out(&run);
    let approval = pending["approval_id"].as_str().unwrap().to_owned();
    assert!(
        text(&run)
            .1
            .contains(&format!("pocketpilot approvals approve {approval}"))
    );

    let list = pocketpilot_in(&home)
        .args(["tasks", "list", "--json"])
        .output()
        .unwrap();
    let tasks = json_out(&list);
    assert_eq!(tasks["tasks"][0]["state"], "waiting_approval");
    assert!(
        tasks["tasks"][0]["created_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let approvals = json_out(
        &pocketpilot_in(&home)
            .args(["approvals", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(approvals["approvals"][0]["id"], approval.as_str());
    assert_eq!(approvals["approvals"][0]["state"], "pending");
    let shown = json_out(
        &pocketpilot_in(&home)
            .args(["approvals", "show", &approval, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(shown["label"], "create");

    // An escaping edit is refused and the approval stays pending.
    let refused = pocketpilot_in(&home)
        .args([
            "approvals",
            "approve",
            &approval,
            "--edit",
            r#"{"path": "../escape.txt", "content": "x"}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused).1);
    assert!(text(&refused).1.contains("still pending"));

    let approve = pocketpilot_in(&home)
        .args(["approvals", "approve", &approval])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve).1);
    assert_eq!(text(&approve).0.trim(), "written");
    assert_eq!(tree.read("a.txt"), "x");

    let again = pocketpilot_in(&home)
        .args(["approvals", "reject", &approval])
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(5),
        "a second resolve is a conflict"
    );
    assert!(text(&again).1.contains("already approved"));

    let events = json_out(
        &pocketpilot_in(&home)
            .args([
                "tasks",
                "events",
                tasks["tasks"][0]["id"].as_str().unwrap(),
                "--json",
            ])
            .output()
            .unwrap(),
    );
    let types: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.last(), Some(&"task_completed"));
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "approval_edit_rejected")
            .count(),
        1
    );
}

#[test]
fn a_waiting_task_survives_kill_9_of_the_server() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "done\n"}}]},
                {"content": "finished"}]),
    );
    let server = Server::start(&home, tree.workspace(), Some(&script));
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "write out"})));
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    server.wait_for_state(&id, "waiting_approval");
    server.kill();

    let server = Server::start(&home, tree.workspace(), Some(&script));
    let (_, approvals) = server.call("GET", "/api/approvals", None);
    let approval = approvals["approvals"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = server.call(
        "POST",
        &format!("/api/approvals/{approval}/resolve?wait=true"),
        Some(&json!({"decision": "approve"})),
    );
    assert!(status == 200 || status == 202, "{status}");
    let task = server.wait_for_state(&id, "completed");
    assert_eq!(task["final_text"], "finished");
    assert_eq!(tree.read("out.txt"), "done\n");
}

#[test]
fn kill_9_during_a_write_leaves_no_half_written_file_and_the_task_interrupted() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::create_dir_all(home.join("config/pocketpilot")).unwrap();
    std::fs::write(
        home.join("config/pocketpilot/pocketpilot.toml"),
        "[tasks]\nlease_secs = 1\n",
    )
    .unwrap();
    let original = "the original content, intact\n".repeat(100);
    tree.file("failpoint-crash-report.txt", &original);
    let replacement = "REPLACEMENT ".repeat(1000);
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "failpoint-crash-report.txt", "content": replacement}}]},
                {"content": "never"}]),
    );
    let server = Server::start(&home, tree.workspace(), Some(&script));
    let (_, task) = server.call(
        "POST",
        "/api/tasks",
        Some(&json!({"prompt": "rewrite the report"})),
    );
    let id = task["id"].as_str().unwrap().to_owned();
    server.wait_for_state(&id, "waiting_approval");
    let (_, approvals) = server.call("GET", "/api/approvals", None);
    let approval = approvals["approvals"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = server.call(
        "POST",
        &format!("/api/approvals/{approval}/resolve"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 202);
    // Wait until the write is half-way (the failpoint holds it there), then crash.
    let temp_exists = || {
        std::fs::read_dir(tree.workspace()).unwrap().any(|entry| {
            entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".pocketpilot-tmp-")
        })
    };
    assert!(
        pp_test_support::wait_until(Duration::from_secs(5), temp_exists),
        "the failpoint stalled the write half-way"
    );
    server.kill();
    assert_eq!(
        tree.read("failpoint-crash-report.txt"),
        original,
        "never half-written"
    );

    let server = Server::start(&home, tree.workspace(), Some(&script));
    assert!(!temp_exists(), "the stray temp file was swept at start");
    // Its runner is gone: once the heartbeat lease (1 s here) runs out it is interrupted.
    let task = server.wait_for_state(&id, "interrupted");
    assert!(
        task["error"].as_str().unwrap().contains("stopped"),
        "{task}"
    );
    // Retrying asks for the approval again instead of re-running the write blind.
    let (status, task) = server.call("POST", &format!("/api/tasks/{id}/retry"), None);
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["state"], "waiting_approval");
    assert_eq!(tree.read("failpoint-crash-report.txt"), original);
}

#[test]
fn without_a_model_serve_starts_and_tasks_fail_fast() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::create_dir_all(home.join("config/pocketpilot")).unwrap();
    std::fs::write(
        home.join("config/pocketpilot/pocketpilot.toml"),
        format!("[discovery]\nlocal_ports = [{closed}]\nprobe_timeout_ms = 100\n"),
    )
    .unwrap();
    let server = Server::start(&home, tree.workspace(), None);
    let (status, health) = request(server.port, "GET", "/api/health", None, None);
    assert_eq!(status, 200);
    assert!(
        health["model"]
            .as_str()
            .unwrap()
            .contains("no model is configured"),
        "{health}"
    );
    let (_, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "hello"})));
    let id = task["id"].as_str().unwrap().to_owned();
    let task = server.wait_for_state(&id, "failed");
    assert_eq!(task["failure_reason"], "model_error");
    assert!(
        task["error"]
            .as_str()
            .unwrap()
            .contains("no model is configured")
    );
}

#[test]
fn token_rotate_takes_effect_on_a_running_server() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let server = Server::start(&home, tree.workspace(), None);
    let token_file = home.join("token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let (status, _) = request(server.port, "GET", "/api/tasks", None, None);
    assert_eq!(status, 401, "no token, no access");
    let (status, _) = server.call("GET", "/api/tasks", None);
    assert_eq!(status, 200);

    let rotate = pocketpilot_in(&home)
        .args(["token", "rotate"])
        .output()
        .unwrap();
    assert_eq!(rotate.status.code(), Some(0));
    let fresh = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(fresh, server.token);
    let old_refused = pp_test_support::wait_until(Duration::from_secs(5), || {
        server.call("GET", "/api/tasks", None).0 == 401
    });
    assert!(old_refused, "the old token stops working");
    let (status, _) = request(server.port, "GET", "/api/tasks", Some(&fresh), None);
    assert_eq!(status, 200, "the new token works");
}

#[test]
fn a_relative_workspace_resumes_from_another_directory() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_a_script(&tree);
    let run = pocketpilot_in(&home)
        .current_dir(tree.base())
        .args(["run", "--workspace", "workspace", "--script"])
        .arg(&script)
        .arg("write a")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "{}", text(&run).1);
    let approval = json_out(&run)["approval_id"].as_str().unwrap().to_owned();
    let approve = pocketpilot_in(&home)
        .current_dir(tree.outside())
        .args(["approvals", "approve", &approval])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve).1);
    assert_eq!(tree.read("a.txt"), "x");
    assert!(!tree.outside().join("workspace").exists());
}

#[test]
fn token_rotate_ends_console_sessions() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let server = Server::start(&home, tree.workspace(), None);
    // Log in like a browser and keep the session cookie.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    std::io::Write::write_all(
        &mut stream,
        format!(
            "GET /login?token={} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            server.token, server.port
        )
        .as_bytes(),
    )
    .unwrap();
    let mut response = String::new();
    std::io::Read::read_to_string(&mut stream, &mut response).unwrap();
    let cookie = response
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: pp_session="))
        .map(|rest| rest.split(';').next().unwrap().to_owned())
        .expect("a session cookie");
    let with_cookie = || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        std::io::Write::write_all(
            &mut stream,
            format!(
                "GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: pp_session={cookie}\r\nConnection: close\r\n\r\n",
                server.port
            )
            .as_bytes(),
        )
        .unwrap();
        let mut response = String::new();
        std::io::Read::read_to_string(&mut stream, &mut response).unwrap();
        response.split(' ').nth(1).unwrap().to_owned()
    };
    assert_eq!(with_cookie(), "200");
    let rotate = pocketpilot_in(&home)
        .args(["token", "rotate"])
        .output()
        .unwrap();
    assert!(
        text(&rotate).0.contains("1 console session(s) ended"),
        "{}",
        text(&rotate).0
    );
    assert_eq!(with_cookie(), "401", "the old session is gone");
}

#[test]
fn a_workspace_holding_the_data_directory_is_refused() {
    let tree = TempTree::new();
    // The data directory inside the workspace: the model could read the API token.
    let home = tree.workspace().join(".local/share/pocketpilot");
    let script = write_script(tree.base(), &json!([{"content": "hi"}]));
    let output = pocketpilot_in(&home)
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(&script)
        .arg("read the token")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output).1);
    assert!(
        text(&output)
            .1
            .contains("contains PocketPilot's data directory"),
        "{}",
        text(&output).1
    );
    let serve = pocketpilot_in(&home)
        .args(["serve", "--port", "0", "--workspace"])
        .arg(tree.workspace())
        .output()
        .unwrap();
    assert_eq!(serve.status.code(), Some(2));
    assert!(!home.join("token").exists(), "nothing was created");
}

#[cfg(unix)]
#[test]
fn a_weak_token_file_or_data_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(home.join("token"), "known-token\n").unwrap();
    std::fs::set_permissions(home.join("token"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let serve = |home: &std::path::Path| {
        pocketpilot_in(home)
            .args(["serve", "--port", "0", "--workspace"])
            .arg(tree.workspace())
            .output()
            .unwrap()
    };
    let output = serve(&home);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).1.contains("readable by other users"),
        "{}",
        text(&output).1
    );
    std::fs::set_permissions(home.join("token"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let output = serve(&home);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("too short"), "{}", text(&output).1);

    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = serve(&home);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).1.contains("writable by other users"),
        "{}",
        text(&output).1
    );
}

/// `serve` starts itself again (same process, same name) with at most two malloc
/// arenas, unless the operator's `GLIBC_TUNABLES` names a limit already.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn serve_runs_with_two_malloc_arenas_unless_told_otherwise() {
    use std::io::BufRead as _;

    let tree = TempTree::new();
    let home = tree.base().join("home");
    let environ = |tunables: Option<&str>| {
        let mut command = pocketpilot_in(&home);
        command
            .args(["serve", "--port", "0", "--workspace"])
            .arg(tree.workspace())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        match tunables {
            Some(value) => command.env("GLIBC_TUNABLES", value),
            None => command.env_remove("GLIBC_TUNABLES"),
        };
        let mut child = command.spawn().unwrap();
        // The console line comes once the restarted process listens.
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("PocketPilot console:"), "{line}");
        let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
        // The process started again under its own name, not `exe`.
        let name = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap();
        assert_eq!(name.trim_end(), "pocketpilot");
        let _ = child.kill();
        let _ = child.wait();
        // glibc ends each tunable's value in place with a NUL as it reads them, so the
        // process's environment shows `a=1\0b=2` where `a=1:b=2` was passed.
        String::from_utf8_lossy(&environ)
            .replace("\0glibc.", ":glibc.")
            .split('\0')
            .filter(|entry| {
                entry.starts_with("GLIBC_TUNABLES=") || entry.starts_with("POCKETPILOT_ARENAS_SET=")
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        environ(None),
        [
            "GLIBC_TUNABLES=glibc.malloc.arena_max=2",
            "POCKETPILOT_ARENAS_SET=1"
        ]
    );
    assert_eq!(
        environ(Some("glibc.malloc.tcache_count=0")),
        [
            "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2",
            "POCKETPILOT_ARENAS_SET=1"
        ]
    );
    // The operator's own limit stands, and nothing starts again.
    assert_eq!(
        environ(Some("glibc.malloc.arena_max=8")),
        ["GLIBC_TUNABLES=glibc.malloc.arena_max=8"]
    );
}
