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
        "expect": {"status": "failed", "events": {"tool_result": 2},
                   "result_contains": ["hi", "NOT-IN-ANY-RESULT"]}
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
    assert!(
        stdout.contains("no tool result contains \"NOT-IN-ANY-RESULT\""),
        "{stdout}"
    );
    assert!(
        !stdout.contains("no tool result contains \"hi\""),
        "{stdout}"
    );
    assert!(stdout.contains("unknown field `statsu`"), "{stdout}");
    assert!(
        stdout.contains("unknown event type `tool_reslt`"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last().unwrap(), "0 passed, 3 failed");
}

/// Everything under `dir`, as relative paths.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_case_never_creates_anything_outside_its_temp_dir() {
    let root = tempfile::tempdir().unwrap();
    // The harness makes `$TMPDIR/pocketpilot-eval-*/workspace`: four `..` from the
    // workspace lead to `root`, two levels above TMPDIR.
    let tmpdir = root.path().join("l1/l2");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let cases = tempfile::tempdir().unwrap();
    let absolute = root.path().join("abs.txt");
    let base = |name: &str| {
        serde_json::json!({
            "name": name, "prompt": "p", "script": [{"content": "done"}],
            "expect": {"status": "completed"}
        })
    };
    let mut escaping_files = base("escaping-files");
    escaping_files["workspace"] = serde_json::json!({"files": {
        "../../../../tmp/x.txt": "x",
        absolute.to_str().unwrap(): "y",
    }});
    let mut escaping_link = base("escaping-link");
    escaping_link["workspace"] =
        serde_json::json!({"symlinks": {"../../../../passwd-link": "/etc/passwd"}});
    let mut escaping_outside = base("escaping-outside");
    escaping_outside["outside"] = serde_json::json!({"../../../../out.txt": "z"});
    // Each location is plain, but the second goes through the link the first makes.
    let mut through_link = base("through-link");
    through_link["workspace"] = serde_json::json!({"symlinks": {
        "a": "$OUTSIDE/../../..",
        "a/escaped-link": "/etc/passwd",
    }});
    for (file, case) in [
        ("a.json", escaping_files),
        ("b.json", escaping_link),
        ("c.json", escaping_outside),
        ("d.json", through_link),
    ] {
        std::fs::write(cases.path().join(file), case.to_string()).unwrap();
    }

    let output = pocketpilot()
        .arg("eval")
        .arg(cases.path())
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("workspace.files: `../../../../tmp/x.txt` contains `..`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("workspace.symlinks: `../../../../passwd-link` contains `..`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("outside: `../../../../out.txt`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`a/escaped-link` goes through a link the case created"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last().unwrap(), "0 passed, 4 failed");
    assert_eq!(
        listing(root.path()),
        ["l1", "l1/l2"],
        "nothing was created outside the case's temp dirs (which are removed)"
    );
}
