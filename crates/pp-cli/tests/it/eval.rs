//! `pocketpilot eval`: the shipped cases pass, and a wrong expectation fails.

use crate::{pocketpilot, repo_root, text};

#[test]
fn the_shipped_cases_all_pass() {
    let output = pocketpilot()
        .arg("eval")
        .arg(repo_root().join("evals/cases"))
        .output()
        .unwrap();
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let last = stdout.lines().last().unwrap();
    let passed: usize = last.split(' ').next().unwrap().parse().unwrap();
    assert!(passed >= 30, "{last}");
    assert_eq!(last, format!("{passed} passed, 0 failed"));
}

#[test]
fn wrong_expectations_and_typos_fail() {
    let dir = tempfile::tempdir().unwrap();
    let base = serde_json::json!({
        "name": "wrong",
        "workspace": {"files": {"notes.txt": "hi\n"}},
        "prompt": "read",
        "script": [{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                   {"content": "done"}],
        "expect": {"status": "failed", "events": {"tool_result": 2}}
    });
    std::fs::write(dir.path().join("a-wrong.json"), base.to_string()).unwrap();
    let mut typo = base.clone();
    typo["name"] = "typo".into();
    typo["expect"] = serde_json::json!({"statsu": "completed"});
    std::fs::write(dir.path().join("b-typo.json"), typo.to_string()).unwrap();
    let mut bad_event = base;
    bad_event["name"] = "bad-event".into();
    bad_event["expect"] = serde_json::json!({"events": {"tool_reslt": 1}});
    std::fs::write(dir.path().join("c-event.json"), bad_event.to_string()).unwrap();

    let output = pocketpilot().arg("eval").arg(dir.path()).output().unwrap();
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("status: expected failed, got completed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("events.tool_result: expected 2, got 1"),
        "{stdout}"
    );
    assert!(stdout.contains("unknown field `statsu`"), "{stdout}");
    assert!(
        stdout.contains("unknown event type `tool_reslt`"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last().unwrap(), "0 passed, 3 failed");
}
