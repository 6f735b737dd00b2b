//! Token usage from the command line: `[tasks] max_tokens` stops a `run`, `tasks show`
//! prints the usage (text and `--json`), and a bad `[model] prices` table is refused.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text, write_script};

fn reading() -> Value {
    json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
           "usage": {"prompt_tokens": 10000, "completion_tokens": 1000, "cached_tokens": 6000,
                     "reasoning_tokens": 200}})
}

fn with_config(tree: &TempTree, config: &str, args: &[&str]) -> std::process::Output {
    let path = tree.base().join("pocketpilot.toml");
    std::fs::write(&path, config).unwrap();
    pocketpilot_in(&tree.base().join("home"))
        .arg("--config")
        .arg(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn max_tokens_stops_a_run_and_tasks_show_gives_the_usage() {
    let tree = TempTree::new();
    tree.file("notes.txt", "hi\n");
    let script = write_script(
        tree.base(),
        &json!([reading(), reading(), reading(), {"content": "done"}]),
    );
    // Budgets well above the first call's estimate (its request and every tool's
    // definition at 4 characters a token), so only the third call is stopped.
    let config = "[tasks]\nmax_tokens = 30000\n";
    let workspace = tree.workspace().to_str().unwrap().to_owned();
    let script = script.to_str().unwrap().to_owned();
    let output = with_config(
        &tree,
        config,
        &[
            "run",
            "--workspace",
            &workspace,
            "--script",
            &script,
            "read my notes",
        ],
    );
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("token_budget"), "{stderr}");

    let output = with_config(&tree, config, &["tasks", "list", "--json"]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let listed: Value = serde_json::from_str(stdout.trim()).unwrap();
    let id = listed["tasks"][0]["id"].as_str().unwrap().to_owned();

    let output = with_config(&tree, config, &["tasks", "show", &id, "--json"]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(shown["failure_reason"], "token_budget");
    assert_eq!(
        shown["usage"],
        json!({"prompt_tokens": 20000, "completion_tokens": 2000, "cached_tokens": 12000,
               "reasoning_tokens": 400, "total_tokens": 22000, "model_calls": 2})
    );

    let output = with_config(&tree, config, &["tasks", "show", &id]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(
            "usage: 22,000 tokens of a 30,000 budget (prompt 20,000, 12,000 cached; \
             completion 2,000, 400 reasoning) over 2 model calls; cost unknown"
        ),
        "{stdout}"
    );
}

#[test]
fn bad_prices_and_budgets_are_refused_at_start() {
    let tree = TempTree::new();
    for (config, expected) in [
        (
            "[model.prices.m]\nprompt = -1\ncompletion = 1\n",
            "`[model] prices` for `m`: `prompt` must be a number of at least 0",
        ),
        (
            "[model.prices.m]\nprompt = 1\ncompletion = 1\ncurrency = \"usd$\"\n",
            "three-letter code",
        ),
        ("[model.prices.m]\nprompt = 1\n", "completion"),
        (
            "[tasks]\nmax_tokens = 0\n",
            "`[tasks] max_tokens` must be at least 1",
        ),
        ("[tasks]\nmax_tokens = -5\n", "max_tokens"),
    ] {
        let output = with_config(&tree, config, &["tasks", "list"]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains(expected), "{config}: {stderr}");
    }
}
