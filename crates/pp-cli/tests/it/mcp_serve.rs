//! `pocketpilot mcp serve`, driven by an MCP client on the same SDK (`pp_mcp::testing`):
//! reads run at once; a write waits for `approvals approve` in another process and then
//! answers; a rejection reaches the client; escapes are denied; after the wait limit the
//! call answers "pending approval" and a later approval runs exactly once.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use pp_mcp::testing::{Launch, TestClient};
use pp_store::Store;

use crate::Wait as _;
use pp_test_support::TempTree;
use pp_types::{Actor, ApprovalState, TaskRecord, TaskState};
use serde_json::json;

use crate::{pocketpilot_in, text};

const CLIENT: (&str, &str) = ("test-client", "9.9.1");

fn home(tree: &TempTree) -> PathBuf {
    tree.base().join("home")
}

async fn connect(tree: &TempTree, wait_limit: u64) -> TestClient {
    let home = home(tree);
    let launch = Launch {
        program: env!("CARGO_BIN_EXE_pocketpilot").into(),
        args: vec![
            "mcp".into(),
            "serve".into(),
            "--workspace".into(),
            tree.workspace().into(),
            "--wait-limit".into(),
            wait_limit.to_string().into(),
        ],
        env: vec![
            ("POCKETPILOT_HOME".into(), home.clone().into()),
            ("XDG_CONFIG_HOME".into(), home.join("config").into()),
        ],
        client: (CLIENT.0.to_owned(), CLIENT.1.to_owned()),
    };
    TestClient::start(launch).await.unwrap()
}

/// `pocketpilot approvals <args>` in another process.
async fn approvals(tree: &TempTree, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = pocketpilot_in(&home(tree));
    command
        .arg("approvals")
        .args(args)
        .current_dir(tree.base())
        .stdin(Stdio::null());
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

fn store(tree: &TempTree) -> Store {
    Store::open(&home(tree).join("pocketpilot.db")).unwrap()
}

async fn client_tasks(tree: &TempTree) -> Vec<TaskRecord> {
    store(tree)
        .list_tasks(None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|task| task.created_by == Actor::McpClient)
        .collect()
}

/// The approval id the first progress notification names ("waiting for approval <id>
/// ..."), once it arrived.
async fn approval_from_progress(client: &TestClient) -> String {
    let arrived = pp_test_support::wait_until_async(Duration::from_secs(30), async || {
        !client.progress().is_empty()
    })
    .await;
    assert!(arrived, "no progress notification arrived");
    let message = client.progress().first().cloned().unwrap();
    message
        .strip_prefix("waiting for approval ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected progress message {message:?}"))
        .to_owned()
}

fn write_call(
    client: &Arc<TestClient>,
    path: &str,
    content: &str,
) -> tokio::task::JoinHandle<pp_mcp::testing::Answer> {
    let (client, path, content) = (Arc::clone(client), path.to_owned(), content.to_owned());
    tokio::spawn(async move {
        client
            .call(
                "write_file",
                json!({"path": path, "content": content}),
                true,
            )
            .await
            .unwrap()
    })
}

async fn close(client: Arc<TestClient>) {
    let client = Arc::into_inner(client).expect("no call is running");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_run_at_once_and_the_task_records_the_client() {
    let tree = TempTree::new();
    tree.file("notes.txt", "hello from the workspace\n");
    let client = connect(&tree, 600).await;
    assert_eq!(client.server().map(|s| s.0), Some("pocketpilot".to_owned()));

    let tools = client.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    for name in [
        "list_files",
        "read_file",
        "write_file",
        "edit_file",
        "move_file",
        "delete_file",
        "make_dir",
        "search_files",
        "extract_document",
        "analyze_table",
        "extract_invoice",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for absent in ["run_command", "memory_write", "read_skill_file"] {
        assert!(!names.contains(&absent), "{absent} offered: {names:?}");
    }
    let read = tools.iter().find(|tool| tool.name == "read_file").unwrap();
    assert_eq!(read.read_only, Some(true));
    assert_eq!(read.input_schema["required"], json!(["path"]));
    let write = tools.iter().find(|tool| tool.name == "write_file").unwrap();
    assert_eq!(
        (write.read_only, write.destructive),
        (Some(false), Some(true))
    );

    let answer = client
        .call("read_file", json!({"path": "notes.txt"}), false)
        .await
        .unwrap();
    assert!(!answer.is_error, "{answer:?}");
    assert!(
        answer.text.contains("hello from the workspace"),
        "{answer:?}"
    );
    let answer = client
        .call("list_files", json!({"path": "."}), false)
        .await
        .unwrap();
    assert!(answer.text.contains("notes.txt"), "{answer:?}");
    // A document tool, parsing in a child of the served binary like any task's call.
    tree.file("sales.csv", "region;amount\nnorth;5\nsouth;4.5\nnorth;7\n");
    let answer = client
        .call(
            "analyze_table",
            json!({"path": "sales.csv", "op": "group_by", "by": "region",
                   "aggregates": [{"column": "amount", "fn": "sum"}]}),
            false,
        )
        .await
        .unwrap();
    assert!(!answer.is_error, "{answer:?}");
    assert!(answer.text.contains("north"), "{answer:?}");

    // One task for the connection's calls, created by the MCP client, naming it.
    let tasks = client_tasks(&tree).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert!(
        tasks[0].prompt.contains("`test-client 9.9.1`"),
        "{}",
        tasks[0].prompt
    );
    assert_eq!(tasks[0].origin.as_deref(), Some("test-client 9.9.1"));
    assert_eq!(tasks[0].state, TaskState::Running);

    client.close().await.unwrap();
    // Closing stdin ends the task cleanly: nothing is left running.
    let task = store(&tree).task(&tasks[0].id).await.unwrap();
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    let events = store(&tree).task_events(&task.id, 0).await.unwrap();
    let results = events
        .iter()
        .filter(|event| event.event.type_name() == "tool_result")
        .count();
    assert_eq!(results, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_approve_in_another_process_then_answers() {
    let tree = TempTree::new();
    let client = Arc::new(connect(&tree, 600).await);
    let call = write_call(&client, "draft.md", "# written once\n");

    let approval = approval_from_progress(&client).await;
    assert!(
        !tree.exists("draft.md"),
        "nothing is written before the decision"
    );
    let (code, listed, stderr) = approvals(&tree, &["list", "--json"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(listed.contains(&approval), "{listed}");

    let (code, _, stderr) = approvals(&tree, &["approve", &approval]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let answer = call.await.unwrap();
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(tree.read("draft.md"), "# written once\n");

    let store = store(&tree);
    let record = store
        .approval(&pp_types::ApprovalId(approval.clone()))
        .await
        .unwrap();
    assert_eq!(record.state, ApprovalState::Approved);
    assert_eq!(store.task_changes(&record.task_id).await.unwrap().len(), 1);
    // The resumed task ended in the approving process, after the approved call.
    assert_eq!(
        store.task(&record.task_id).await.unwrap().state,
        TaskState::Completed
    );

    // The connection goes on in a new task.
    let answer = client
        .call("read_file", json!({"path": "draft.md"}), false)
        .await
        .unwrap();
    assert!(answer.text.contains("# written once"), "{answer:?}");
    assert_eq!(client_tasks(&tree).await.len(), 2);
    close(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_reaches_the_client_with_its_reason() {
    let tree = TempTree::new();
    let client = Arc::new(connect(&tree, 600).await);
    let call = write_call(&client, "plan.md", "no\n");
    let approval = approval_from_progress(&client).await;
    let (code, _, stderr) =
        approvals(&tree, &["reject", &approval, "--reason", "not this file"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let answer = call.await.unwrap();
    assert!(answer.is_error, "{answer:?}");
    assert!(
        answer
            .text
            .contains("rejected by the operator: not this file"),
        "{answer:?}"
    );
    assert!(!tree.exists("plan.md"));
    close(client).await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_are_denied_and_nothing_is_written() {
    let tree = TempTree::new();
    tree.outside_file("secret.txt", "TOP-SECRET\n");
    tree.symlink("out", tree.outside());
    let before = tree.outside_snapshot();
    let client = connect(&tree, 600).await;
    let absolute = tree.outside().join("new.txt");
    for path in ["../escaped.txt", absolute.to_str().unwrap(), "out/new.txt"] {
        let answer = client
            .call("write_file", json!({"path": path, "content": "x"}), true)
            .await
            .unwrap();
        assert!(answer.is_error, "{path}: {answer:?}");
        assert!(client.progress().is_empty(), "a denied call never waits");
    }
    let answer = client
        .call("read_file", json!({"path": "out/secret.txt"}), false)
        .await
        .unwrap();
    assert!(answer.is_error, "{answer:?}");
    assert!(!answer.text.contains("TOP-SECRET"), "{answer:?}");
    assert_eq!(tree.outside_snapshot(), before);
    assert!(!tree.base().join("escaped.txt").exists());
    let (_, pending, _) = approvals(&tree, &["list", "--json"]).await;
    let pending: serde_json::Value = serde_json::from_str(&pending).unwrap();
    assert_eq!(pending["approvals"], json!([]), "no approval was asked");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_wait_limit_the_call_is_pending_and_a_later_approval_runs_once() {
    let tree = TempTree::new();
    let client = Arc::new(connect(&tree, 2).await);
    let answer = write_call(&client, "later.md", "approved later\n")
        .await
        .unwrap();
    assert!(!answer.is_error, "{answer:?}");
    let approval = answer
        .text
        .strip_prefix("pending approval ")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("{answer:?}"))
        .to_owned();
    assert!(
        !client.progress().is_empty(),
        "progress arrived while it waited"
    );
    let id = pp_types::ApprovalId(approval.clone());
    assert_eq!(
        store(&tree).approval(&id).await.unwrap().state,
        ApprovalState::Pending
    );

    // The client goes away; the approval stays open.
    close(client).await;
    assert_eq!(
        store(&tree).approval(&id).await.unwrap().state,
        ApprovalState::Pending
    );
    assert!(!tree.exists("later.md"));

    let (code, _, stderr) = approvals(&tree, &["approve", &approval]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(tree.read("later.md"), "approved later\n");
    let (code, _, _) = approvals(&tree, &["approve", &approval]).await;
    assert_ne!(code, Some(0), "a second approval runs nothing");
    let store = store(&tree);
    let task = store.approval(&id).await.unwrap().task_id;
    assert_eq!(store.task_changes(&task).await.unwrap().len(), 1);
    assert_eq!(tree.read("later.md"), "approved later\n");
    assert!(
        client_tasks(&tree)
            .await
            .iter()
            .all(|task| task.state != TaskState::Running)
    );
}

/// SIGTERM (a client stopping its server, or the person) ends the running task cleanly
/// too: `completed`, nothing left running.
#[cfg(unix)]
#[test]
fn sigterm_ends_the_running_task_cleanly() {
    use std::io::{BufRead, BufReader, Write};

    let tree = TempTree::new();
    tree.file("n.txt", "hi\n");
    let mut child = pocketpilot_in(&home(&tree))
        .args(["mcp", "serve", "--workspace"])
        .arg(tree.workspace())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "n.txt"}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
        if message.get("id").is_some() {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert!(answer.get("result").is_some(), "{line}");
        }
    }
    assert!(line.contains("hi\\n"), "{line}");
    assert_eq!(client_tasks(&tree).wait()[0].state, TaskState::Running);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(client_tasks(&tree).wait()[0].state, TaskState::Completed);
    drop(stdin);
}
