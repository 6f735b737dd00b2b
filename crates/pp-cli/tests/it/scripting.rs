//! What scripts and people read without a terminal: the live view's tables, folds and
//! summary (times redacted), `run --json`, completions and the man page.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::json;

use crate::run::run_in;
use crate::{pocketpilot, pocketpilot_in, text, write_script};

#[test]
fn without_a_terminal_there_is_no_spinner_no_colour_and_a_summary() {
    let tree = TempTree::new();
    tree.file(
        "notes.txt",
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n",
    );
    tree.file("会议记录.md", "x");
    let output = run_in(
        &tree,
        &json!([{"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                {"content": "Read."}]),
        "read",
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Read.\n");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "{stderr:?}"
    );
    assert!(
        !stderr.contains('⠋') && !stderr.contains("waiting for the model"),
        "{stderr}"
    );
    // The listing is a table, the read is folded.
    let redacted: Vec<String> = stderr
        .lines()
        .skip_while(|line| !line.starts_with("[step 1]"))
        .map(|line| {
            let line = regex_free_redact(line);
            line.trim_end().to_owned()
        })
        .collect();
    assert_eq!(
        redacted,
        [
            "[step 1] → list_files {\"path\":\".\"}",
            "         type  size  modified          name",
            "         file  40 B  TIME              notes.txt",
            "         file   1 B  TIME              会议记录.md",
            "[step 2] → read_file {\"path\":\"notes.txt\"}",
            "         one",
            "         two",
            "         three",
            "         four",
            "         five",
            "         six",
            "         … 2 more lines",
            "[step 3] model:",
            "         Read.",
            "[step 3] completed",
            "completed · 3 steps · 2 tool calls · 0 denied · 0 approvals · 0 files changed · TIME",
        ],
        "{stderr}"
    );
}

/// Replaces `YYYY-MM-DD HH:MM` and `N.Ns` with `TIME`.
fn regex_free_redact(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut index = 0;
    while index < chars.len() {
        let rest: String = chars[index..].iter().take(16).collect();
        let is_date = rest.len() == 16
            && rest.chars().enumerate().all(|(at, c)| match at {
                4 | 7 => c == '-',
                10 => c == ' ',
                13 => c == ':',
                _ => c.is_ascii_digit(),
            });
        if is_date {
            out.push_str("TIME            ");
            index += 16;
            continue;
        }
        out.push(chars[index]);
        index += 1;
    }
    match out.rsplit_once(" · ") {
        Some((head, tail))
            if tail.ends_with('s') && tail[..tail.len() - 1].parse::<f64>().is_ok() =>
        {
            format!("{head} · TIME")
        }
        _ => out,
    }
}

#[test]
fn run_json_prints_one_event_per_line_then_the_result() {
    let tree = TempTree::new();
    tree.file("notes.txt", "hi\n");
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
                {"content": "done"}]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--json")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("go")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = lines
        .iter()
        .map(|line| line["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "task_started",
            "model_request",
            "assistant_message",
            "tool_call",
            "tool_result",
            "model_request",
            "assistant_message",
            "tool_call",
            "approval_required",
            "result"
        ],
        "{stdout}"
    );
    let task_id = lines[0]["task_id"].as_str().unwrap();
    let mut seqs = Vec::new();
    for event in &lines[..lines.len() - 1] {
        assert_eq!(event["task_id"], task_id);
        assert!(
            event["at"].is_number() || event["at"].is_string(),
            "{event}"
        );
        seqs.push(event["seq"].as_i64().unwrap());
    }
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
    let result = lines.last().unwrap();
    assert_eq!(result["task_id"], task_id);
    assert_eq!(result["state"], "waiting_approval");
    assert!(result["approval_id"].is_string(), "{result}");
    assert!(!tree.exists("a.txt"));

    // Resolving it from anywhere finishes the task.
    let approve = pocketpilot_in(&tree.base().join("home"))
        .args([
            "approvals",
            "approve",
            result["approval_id"].as_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve).1);
    assert_eq!(tree.read("a.txt"), "x\n");
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let output = pocketpilot().args(["completions", shell]).output().unwrap();
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stdout.contains("pocketpilot"), "{shell}: {stdout}");
        assert!(stdout.contains("approvals"), "{shell}: {stdout}");
        assert!(stdout.contains("workspace"), "{shell}: {stdout}");
    }
    let output = pocketpilot().args(["man"]).output().unwrap();
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stdout.starts_with(".ie") || stdout.contains(".TH pocketpilot"),
        "{stdout}"
    );
    assert!(stdout.contains("completions"), "{stdout}");
    let output = pocketpilot()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "unknown shells are a usage error"
    );
}
