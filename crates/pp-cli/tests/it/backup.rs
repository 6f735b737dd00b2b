//! `backup`, `restore` and `prune` against a real data directory and a running `serve`.

use crate::Wait as _;
use std::ffi::OsStr;
use std::path::Path;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::Server;
use crate::{pocketpilot_in, text, write_script};

fn prompts(home: &Path) -> Vec<String> {
    let output = pocketpilot_in(home)
        .args(["tasks", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let list: Value = serde_json::from_str(text(&output).0.trim()).unwrap();
    let mut prompts: Vec<String> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["prompt"].as_str().unwrap().to_owned())
        .collect();
    prompts.sort();
    prompts
}

/// Runs `pocketpilot ARGS` on `home`; its exit code and standard error.
fn cli(home: &Path, args: &[&OsStr]) -> (Option<i32>, String) {
    let output = pocketpilot_in(home).args(args).output().unwrap();
    (output.status.code(), text(&output).1)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run_task(server: &Server, prompt: &str) {
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({ "prompt": prompt })));
    assert_eq!(status, 201, "{task}");
    server.wait_for_state(task["id"].as_str().unwrap(), "completed");
}

#[test]
fn backup_while_serving_restore_only_once_the_server_is_gone() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(tree.base(), &json!([{ "content": "done" }]));
    let backup = tree.base().join("backup.db");
    let server = Server::start(&home, tree.workspace(), Some(&script));
    run_task(&server, "first");
    let session = pp_store::Store::open(&home.join("pocketpilot.db"))
        .unwrap()
        .create_login(std::time::Duration::from_secs(3600))
        .wait()
        .unwrap();

    let (code, stderr) = cli(&home, &[OsStr::new("backup"), backup.as_os_str()]);
    assert_eq!(code, Some(0), "{stderr}");
    run_task(&server, "second");

    let (code, stderr) = cli(&home, &[OsStr::new("restore"), backup.as_os_str()]);
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("a server is running"), "{stderr}");
    assert_eq!(prompts(&home), ["first", "second"], "nothing was replaced");

    // kill -9: the operating system releases the server's lock.
    server.kill();
    let (code, stderr) = cli(&home, &[OsStr::new("restore"), backup.as_os_str()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("1 task(s)"), "{stderr}");
    assert_eq!(prompts(&home), ["first"]);
    let restored = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    assert!(
        !restored.login_valid(&session).wait().unwrap(),
        "console sessions from the backup do not come back"
    );
    drop(restored);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(home.join("pocketpilot.db"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A server starts on the restored database.
    let server = Server::start(&home, tree.workspace(), Some(&script));
    run_task(&server, "third");
    drop(server);
    assert_eq!(prompts(&home), ["first", "third"]);
}

#[test]
fn restoring_a_file_that_is_not_a_store_changes_nothing() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(tree.base(), &json!([{ "content": "done" }]));
    let server = Server::start(&home, tree.workspace(), Some(&script));
    run_task(&server, "kept");
    drop(server);
    let database = home.join("pocketpilot.db");
    let not_a_store = tree.base().join("notes.txt");
    std::fs::write(&not_a_store, "just some notes\n".repeat(500)).unwrap();
    let before = names(&home);
    let (code, stderr) = cli(&home, &[OsStr::new("restore"), not_a_store.as_os_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not a PocketPilot database"), "{stderr}");
    assert_eq!(names(&home), before, "no temporary file left behind");
    assert!(database.is_file());
    assert_eq!(prompts(&home), ["kept"]);
}

#[test]
fn prune_needs_a_window_and_reports_what_it_removed() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(tree.base(), &json!([{ "content": "done" }]));
    let server = Server::start(&home, tree.workspace(), Some(&script));
    run_task(&server, "recent");
    drop(server);
    let (code, stderr) = cli(&home, &[OsStr::new("prune")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("retain_days"), "{stderr}");

    let config = tree.base().join("pocketpilot.toml");
    std::fs::write(&config, "[store]\nretain_days = 30\n").unwrap();
    let (code, stderr) = cli(
        &home,
        &[
            OsStr::new("--config"),
            config.as_os_str(),
            OsStr::new("prune"),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("pruned the history of 0 finished task(s)"),
        "{stderr}"
    );
    assert_eq!(prompts(&home), ["recent"]);
    std::fs::write(&config, "[store]\nretain_days = 0\n").unwrap();
    let (code, stderr) = cli(
        &home,
        &[
            OsStr::new("--config"),
            config.as_os_str(),
            OsStr::new("prune"),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn serve_with_retain_days_prunes_old_history_at_start() {
    use std::sync::Arc;
    use std::time::Duration;

    use pp_store::{NewTask, Store, TaskChange};
    use pp_types::{Actor, Event, EventKind, ManualClock, TaskState, Timestamp};

    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::create_dir_all(home.join("config/pocketpilot")).unwrap();
    std::fs::write(
        home.join("config/pocketpilot/pocketpilot.toml"),
        "[store]\nretain_days = 30\n",
    )
    .unwrap();
    let database = home.join("pocketpilot.db");
    let long_ago = Timestamp::now().saturating_sub(Duration::from_secs(40 * 86_400));
    let old = {
        let store =
            Store::open_with_clock(&database, Arc::new(ManualClock::new(long_ago))).unwrap();
        let task = store
            .create_task(NewTask {
                prompt: "long ago".into(),
                workspace: "workspace".into(),
                workspace_path: tree.workspace().display().to_string(),
                created_by: Actor::Operator,
                origin: None,
                script: None,
            })
            .wait()
            .unwrap();
        store
            .claim(&task.id, &[TaskState::Running, TaskState::Queued])
            .wait()
            .unwrap();
        let started = Event {
            step: 0,
            kind: EventKind::TaskStarted {
                prompt: "long ago".into(),
            },
        };
        store
            .transition(
                &task.id,
                &[TaskState::Running],
                TaskChange {
                    events: vec![started],
                    ..TaskChange::to(TaskState::Completed)
                },
            )
            .wait()
            .unwrap();
        assert_eq!(store.task_events(&task.id, 0).wait().unwrap().len(), 1);
        task
    };
    let script = write_script(tree.base(), &json!([{ "content": "done" }]));
    let server = Server::start(&home, tree.workspace(), Some(&script));
    let store = Store::open(&database).unwrap();
    let pruned = pp_test_support::wait_until(Duration::from_secs(10), || {
        store.task_events(&old.id, 0).wait().unwrap().is_empty()
    });
    assert!(pruned, "serve never pruned the old history");
    // The server survived a second connection opening and closing in its process
    // (this crashed it with SIGBUS while opening a store closed descriptors of a file
    // SQLite had open, dropping its locks).
    assert_eq!(
        store.task(&old.id).wait().unwrap().state,
        TaskState::Completed
    );
    run_task(&server, "new");
    drop(server);
    assert_eq!(prompts(&home), ["long ago", "new"]);
}

/// Item 7: on a PostgreSQL store `backup` and `restore` say, in plain words, which tool
/// to use instead ("back it up with pg_dump", never "back up it").
#[test]
fn on_postgres_backup_and_restore_name_the_tool_to_use() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = tree.base().join("pg.toml");
    std::fs::write(
        &config,
        "[store]\nurl = \"postgres://pp@127.0.0.1:1/pocketpilot\"\n",
    )
    .unwrap();
    let copy = tree.base().join("copy.db");
    for (command, says) in [
        ("backup", "back it up with pg_dump"),
        ("restore", "restore it with pg_restore"),
    ] {
        let (code, stderr) = cli(
            &home,
            &[
                OsStr::new("--config"),
                config.as_os_str(),
                OsStr::new(command),
                copy.as_os_str(),
            ],
        );
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(stderr.contains(says), "{command}: {stderr}");
        assert!(!stderr.contains("up it"), "{command}: {stderr}");
    }
}
