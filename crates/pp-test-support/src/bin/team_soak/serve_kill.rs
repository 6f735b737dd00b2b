//! The serve-kill round of `--kill` (issue 29, item 3): serve B is SIGKILLed right after
//! an approved write. The round takes the next pending write approval out of the race,
//! approves it alone through B (so B runs the call: a decision runs where it is made),
//! waits until the file is on disk and kills B at once — between the write and its
//! recorded result, or just after. The retry must continue from the recorded result, or
//! ask again a cut call as a new approval saying "this call may already have run";
//! never ask again for a write that ran (`verify.rs` checks it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pp_test_support::http::Endpoint;
use serde_json::{Value, json};

use crate::{
    Process, REQUEST_LIMIT, Shared, lock, outcome, output_name, shared_workspace, workspace_name,
};

/// How long the round waits for the approved write's file before killing B anyway.
const FILE_WAIT: Duration = Duration::from_secs(10);

/// What the round did.
#[derive(Debug, Clone)]
pub(crate) struct ServeKill {
    /// The approval approved alone through B.
    pub(crate) approval: String,
    /// Its task.
    pub(crate) task: String,
    /// How the approve through B answered (`2xx`, …).
    pub(crate) answer: String,
    /// Whether the file was on disk when B was killed.
    pub(crate) file_seen: bool,
    /// Tasks running (anywhere) at the kill.
    pub(crate) running: usize,
}

/// The pending write approval the round takes, from a `GET /api/approvals` page: its
/// id, task and file, if there is one not yet `sent`.
pub(crate) fn pick<'a>(
    pending: &'a Value,
    sent: &std::collections::BTreeSet<String>,
) -> Option<(&'a str, &'a str)> {
    pending["approvals"]
        .as_array()?
        .iter()
        .filter(|card| card["tool"] == "write_file")
        .find_map(|card| {
            let id = card["id"].as_str()?;
            (!sent.contains(id)).then_some((id, card["task_id"].as_str()?))
        })
}

/// Approves `approval` (of `task`) alone through B (`bob`), waits for its file in the
/// shared folder, and SIGKILLs `serve_b` right then. `root` is the soak's tree.
pub(crate) async fn approve_then_kill(
    bob: &Endpoint,
    admin: &Endpoint,
    serve_b: Process,
    approval: &str,
    task: &str,
    root: &Path,
    shared: &Shared,
) {
    let index = lock(shared).tasks.get(task).copied();
    let file: Option<PathBuf> =
        index.map(|index| shared_workspace(root, &workspace_name(index)).join(output_name(index)));
    let answer = bob
        .request(
            "POST",
            &format!("/api/approvals/{approval}/resolve"),
            Some(&json!({"decision": "approve"})),
            REQUEST_LIMIT,
        )
        .await;
    let answer = outcome(answer);
    let file_seen = match (&file, answer.as_str()) {
        (Some(file), "2xx") => wait_for(file.clone()).await,
        _ => false,
    };
    let killed = serve_b.kill();
    let running = crate::task_states(admin)
        .await
        .map(|states| states.values().filter(|state| *state == "running").count())
        .unwrap_or(0);
    println!(
        "killed B (SIGKILL) right after approving {approval} through it ({answer}; its file \
         {}), {running} task(s) running",
        if file_seen { "written" } else { "not seen" }
    );
    let mut record = lock(shared);
    if let Err(error) = killed {
        record.notes.push(format!("killing B: {error}"));
    }
    record
        .races
        .insert(approval.to_owned(), vec![answer.clone(), SOLO.to_owned()]);
    record.serve_kill = Some(ServeKill {
        approval: approval.to_owned(),
        task: task.to_owned(),
        answer,
        file_seen,
        running,
    });
}

/// The second outcome recorded for the round's approval (it raced no one).
pub(crate) const SOLO: &str = "approved alone by the serve-kill round";

/// Whether `file` appears within [`FILE_WAIT`], polled every millisecond off the async
/// threads.
async fn wait_for(file: PathBuf) -> bool {
    tokio::task::spawn_blocking(move || {
        let until = Instant::now() + FILE_WAIT;
        while Instant::now() < until {
            if file.exists() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    })
    .await
    .unwrap_or(false)
}
