//! `schedules add --workspace DIR` with a folder no workspace is configured for: outside
//! team mode it is stored as its canonical path and resolves in every later command and
//! process (`schedules run` from the CLI, the scheduler inside `serve`), and the task
//! runs in that folder; in team mode `--workspace` must name a configured workspace.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::json;

use crate::schedules::{cli, config, json_of, serve};
use crate::team_key::team_config;
use crate::{pocketpilot_in, text, write_script};

#[test]
fn a_folder_schedule_runs_from_another_command_and_process_in_that_folder() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree, "");
    let ws = tree.base().join("ws");
    let cwd = tree.base().join("elsewhere");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let real_ws = std::fs::canonicalize(&ws).unwrap();

    // Added from one folder with a relative path.
    let output = pocketpilot_in(&home)
        .current_dir(&cwd)
        .arg("--config")
        .arg(&config)
        .args([
            "schedules",
            "add",
            "--name",
            "weekly",
            "--cron",
            "0 9 * * 1",
        ])
        .args([
            "--prompt",
            "write the report",
            "--workspace",
            "../ws",
            "--json",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let real = real_ws.display().to_string();
    assert_eq!(json_of(&stdout)["workspace"], real.as_str());

    // A later command, from another folder, resolves it.
    let (code, stdout, stderr) = cli(
        &home,
        Some(&config),
        &["schedules", "run", "weekly", "--json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let fired = json_of(&stdout);
    assert_eq!(fired["task"]["workspace"], "ws");
    assert_eq!(fired["task"]["workspace_path"], real.as_str(), "{fired}");

    // A `serve` that knows only `main` fires it too, and the task writes into `ws`.
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "report.txt", "content": "total: 3\n"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let server = serve(&home, &config, &script, &log);
    let (status, fired) = server.call("POST", "/api/schedules/weekly/run", None);
    assert_eq!(status, 202, "{fired}");
    let task_id = fired["task_id"].as_str().unwrap().to_owned();
    server.wait_for_state(&task_id, "waiting_approval");
    let (code, stdout, _) = cli(&home, Some(&config), &["approvals", "list", "--json"]);
    assert_eq!(code, Some(0));
    let approvals = json_of(&stdout);
    let approval = approvals["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == task_id.as_str())
        .unwrap_or_else(|| panic!("{approvals}"));
    let id = approval["id"].as_str().unwrap();
    let (code, _, stderr) = cli(&home, Some(&config), &["approvals", "approve", id]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.join("report.txt")).unwrap(),
        "total: 3\n"
    );
    assert!(
        !tree.exists("report.txt"),
        "written into the configured workspace"
    );
    server.kill();
}

#[test]
fn in_team_mode_a_schedule_must_name_a_configured_workspace() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = team_config(&tree, "team.toml", "", None);
    let ws = tree.base().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let (code, _, stderr) = cli(
        &home,
        Some(&config),
        &[
            "schedules",
            "add",
            "--name",
            "weekly",
            "--cron",
            "@daily",
            "--prompt",
            "p",
            "--workspace",
            ws.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("in team mode a schedule names a configured workspace"),
        "{stderr}"
    );
}
