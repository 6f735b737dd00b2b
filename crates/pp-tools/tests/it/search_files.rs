//! `search_files`: output format, options, ignore files, binary and size skips, caps with
//! their cut markers, and escapes (links out, `..`, absolute paths).

use std::sync::Arc;
use std::time::Duration;

use pp_agent::{Tool, ToolContext};
use pp_gate::Jail;
use pp_test_support::TempTree;
use pp_tools::SearchLimits;
use pp_types::{DenyRule, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A temporary tree and `search_files` working in its `workspace/`.
struct Search {
    tree: TempTree,
    tool: Arc<dyn Tool>,
}

impl Search {
    fn new() -> Self {
        Self::with_limits(SearchLimits::default())
    }

    fn with_limits(limits: SearchLimits) -> Self {
        let tree = TempTree::new();
        let jail = Arc::new(Jail::new(tree.workspace()).expect("jail"));
        let tool = pp_tools::search_tool(jail, limits);
        Self { tree, tool }
    }

    async fn call_in(&self, context: &ToolContext, arguments: Value) -> ToolOutput {
        self.tool.execute(context, &arguments).await
    }

    async fn ok(&self, arguments: Value) -> String {
        match self.call_in(&ToolContext::default(), arguments).await {
            ToolOutput::Success { content } => content,
            other => panic!("expected success, got {other:?}"),
        }
    }

    async fn err(&self, arguments: Value) -> String {
        match self.call_in(&ToolContext::default(), arguments).await {
            ToolOutput::Error { message } => message,
            other => panic!("expected an ordinary error, got {other:?}"),
        }
    }

    async fn denied(&self, arguments: Value) -> DenyRule {
        match self.call_in(&ToolContext::default(), arguments).await {
            ToolOutput::Denied(denial) => denial.rule,
            other => panic!("expected a denial, got {other:?}"),
        }
    }
}

fn notes() -> Search {
    let search = Search::new();
    search.tree.file(
        "notes/march.md",
        "Paid on the 4th.\nInvoice 2025-031 is open.\n\nend\n",
    );
    search.tree.file("notes/april.md", "nothing here\n");
    search.tree.file("b.txt", "an INVOICE in capitals\n");
    search
        .tree
        .file("src/main.rs", "// invoice\nfn main() {}\n");
    search
}

#[tokio::test(flavor = "current_thread")]
async fn matches_are_path_line_text_sorted_by_path() {
    let search = notes();
    assert_eq!(
        search.ok(json!({"pattern": "invoice"})).await,
        "b.txt:1: an INVOICE in capitals\n\
         notes/march.md:2: Invoice 2025-031 is open.\n\
         src/main.rs:1: // invoice\n"
    );
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "case_sensitive": true}))
            .await,
        "src/main.rs:1: // invoice\n"
    );
    assert_eq!(
        search.ok(json!({"pattern": "nowhere"})).await,
        "(no matches for `nowhere` in `.`)\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn literal_by_default_regex_on_request() {
    let search = Search::new();
    search.tree.file("a.txt", "cost: 1+1\ncost: 11\n");
    assert_eq!(
        search.ok(json!({"pattern": "1+1"})).await,
        "a.txt:1: cost: 1+1\n"
    );
    assert_eq!(
        search.ok(json!({"pattern": "1+1", "regex": true})).await,
        "a.txt:2: cost: 11\n"
    );
    let error = search.err(json!({"pattern": "(", "regex": true})).await;
    assert!(error.starts_with("invalid pattern"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn context_lines_and_group_separators() {
    let search = Search::new();
    search.tree.file("a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
    search.tree.file("b.txt", "hit\n");
    assert_eq!(
        search.ok(json!({"pattern": "hit", "context": 1})).await,
        "a.txt-2- 2\na.txt:3: hit\na.txt-4- 4\n--\n\
         a.txt-7- 7\na.txt:8: hit\na.txt-9- 9\n--\nb.txt:1: hit\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn path_narrows_to_a_folder_or_a_file() {
    let search = notes();
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "path": "notes"}))
            .await,
        "notes/march.md:2: Invoice 2025-031 is open.\n"
    );
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "path": "./src/../b.txt"}))
            .await,
        "b.txt:1: an INVOICE in capitals\n"
    );
    let missing = search.err(json!({"pattern": "x", "path": "nope"})).await;
    assert!(missing.contains("no such file"), "{missing}");
}

#[tokio::test(flavor = "current_thread")]
async fn glob_matches_names_or_paths() {
    let search = notes();
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "glob": "*.md"}))
            .await,
        "notes/march.md:2: Invoice 2025-031 is open.\n"
    );
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "glob": "src/**/*.rs"}))
            .await,
        "src/main.rs:1: // invoice\n"
    );
    // Relative to the searched folder too.
    assert_eq!(
        search
            .ok(json!({"pattern": "invoice", "path": "notes", "glob": "./march.*"}))
            .await,
        "notes/march.md:2: Invoice 2025-031 is open.\n"
    );
    let error = search.err(json!({"pattern": "x", "glob": "a[b"})).await;
    assert!(error.starts_with("invalid glob"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn ignore_files_nested_negated_and_from_above() {
    let search = Search::new();
    let tree = &search.tree;
    tree.file(".gitignore", "*.log\n/build/\n");
    tree.file("build/out.txt", "needle");
    tree.file("a.log", "needle");
    tree.file("kept.txt", "needle");
    tree.file("sub/.gitignore", "!keep.log\nlocal.txt\n");
    tree.file("sub/keep.log", "needle");
    tree.file("sub/drop.log", "needle");
    tree.file("sub/local.txt", "needle");
    tree.file("sub/build/x.txt", "needle");
    tree.file("sub/deep/.ignore", "*.md\n");
    tree.file("sub/deep/.gitignore", "!*.md\n");
    tree.file("sub/deep/a.md", "needle");
    tree.file(".git/config", "needle");
    tree.file("sub/.git", "needle");
    let expected = "kept.txt:1: needle\nsub/build/x.txt:1: needle\nsub/keep.log:1: needle\n";
    assert_eq!(search.ok(json!({"pattern": "needle"})).await, expected);
    // Searching a subfolder still honours the root's `.gitignore`.
    assert_eq!(
        search.ok(json!({"pattern": "needle", "path": "sub"})).await,
        "sub/build/x.txt:1: needle\nsub/keep.log:1: needle\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn binary_files_are_skipped_and_counted() {
    let search = Search::new();
    search.tree.file("data.bin", "needle\0needle\n");
    search.tree.file("text.txt", "needle\n");
    let late = format!("needle\n{}\0", "x".repeat(200_000));
    search.tree.file("late.bin", &late);
    assert_eq!(
        search.ok(json!({"pattern": "needle"})).await,
        "text.txt:1: needle\n(not searched: 2 binary files)\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn results_are_capped_with_a_marker() {
    let search = Search::new();
    search.tree.file("a.txt", &"hit\n".repeat(5));
    search.tree.file("b.txt", "hit\n");
    let capped = search.ok(json!({"pattern": "hit", "max_results": 3})).await;
    assert_eq!(
        capped.lines().collect::<Vec<_>>(),
        [
            "a.txt:1: hit",
            "a.txt:2: hit",
            "a.txt:3: hit",
            "[truncated: stopped at 3 matches (max_results); more exist — narrow the pattern, \
             path or glob, or raise max_results]",
        ]
    );
    // Exactly as many as allowed: no marker.
    let exact = search.ok(json!({"pattern": "hit", "max_results": 6})).await;
    assert_eq!(exact.lines().count(), 6, "{exact}");
    assert!(!exact.contains("[truncated"));
}

#[tokio::test(flavor = "current_thread")]
async fn bytes_and_file_size_are_capped_and_long_lines_cut() {
    let search = Search::with_limits(SearchLimits {
        max_output_bytes: 100,
        max_file_bytes: 1000,
        ..SearchLimits::default()
    });
    search.tree.file("a.txt", &"needle line\n".repeat(50));
    search.tree.file("0big.txt", &"needle\n".repeat(200));
    let output = search.ok(json!({"pattern": "needle"})).await;
    let lines: Vec<&str> = output.lines().collect();
    assert!(lines.len() > 2 && lines.len() < 10, "{output}");
    assert_eq!(lines[0], "a.txt:1: needle line");
    assert_eq!(
        lines[lines.len() - 2],
        "(not searched: 1 file over 1000 bytes)"
    );
    assert!(
        lines[lines.len() - 1].starts_with("[truncated: results reached the 100-byte limit"),
        "{output}"
    );

    let wide = Search::new();
    wide.tree.file(
        "min.js",
        &format!("{}needle{}", "a".repeat(400), "b".repeat(400)),
    );
    let output = wide.ok(json!({"pattern": "needle"})).await;
    assert_eq!(
        output.chars().count(),
        "min.js:1: ".len() + 300 + 2,
        "{output}"
    );
    assert!(output.ends_with("…\n"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_large_tree_is_cut_by_the_time_budget() {
    let search = Search::with_limits(SearchLimits {
        max_duration: Duration::ZERO,
        ..SearchLimits::default()
    });
    for index in 0..2000 {
        search
            .tree
            .file(&format!("d{}/f{index}.txt", index % 20), "needle\n");
    }
    let output = search.ok(json!({"pattern": "needle"})).await;
    let last = output.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "[truncated: search stopped after 0 s; files not reached were not searched"
        ),
        "{output}"
    );
    assert!(!output.contains("needle"), "{output}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_interrupted_task_stops_the_search() {
    let search = notes();
    let context = ToolContext::default();
    context.interrupt.trigger();
    match search
        .call_in(&context, json!({"pattern": "invoice"}))
        .await
    {
        ToolOutput::Success { content } => assert_eq!(
            content,
            "[truncated: the task was stopped; the search did not finish]\n"
        ),
        other => panic!("{other:?}"),
    }
}

fn escaping() -> Search {
    let search = notes();
    search.tree.outside_file("secret.txt", "TOP-SECRET invoice");
    search
        .tree
        .outside_file("dir/inner.txt", "TOP-SECRET invoice");
    search
}

#[tokio::test(flavor = "current_thread")]
async fn dot_dot_absolute_and_invalid_paths_are_denied() {
    let search = escaping();
    let absolute = search.tree.outside().join("secret.txt");
    let cases = [
        ("../outside/secret.txt", DenyRule::Escapes),
        ("notes/../../outside", DenyRule::Escapes),
        ("..", DenyRule::Escapes),
        (absolute.to_str().expect("utf-8"), DenyRule::AbsolutePath),
        ("a\\..\\..\\outside", DenyRule::InvalidPath),
        ("bad\0name", DenyRule::InvalidPath),
    ];
    for (path, rule) in cases {
        assert_eq!(
            search
                .denied(json!({"pattern": "invoice", "path": path}))
                .await,
            rule,
            "{path}"
        );
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn links_out_are_never_followed() {
    let search = escaping();
    let tree = &search.tree;
    tree.symlink("out-file", tree.outside().join("secret.txt"));
    tree.symlink("out-dir", "../outside/dir");
    tree.symlink("notes/deep-out", "../../outside");
    tree.symlink("chain", "out-file");
    tree.symlink("in-link.md", "notes/march.md");
    let before = tree.outside_snapshot();
    let everything = search
        .ok(json!({"pattern": "invoice", "regex": false}))
        .await;
    assert!(!everything.contains("TOP-SECRET"), "{everything}");
    // Inside links are not followed either: march.md is found once, under its own name.
    assert_eq!(
        everything.matches("Invoice 2025-031").count(),
        1,
        "{everything}"
    );
    for glob in ["**", "*.txt", "out-*/**"] {
        let output = search.ok(json!({"pattern": "SECRET", "glob": glob})).await;
        assert!(!output.contains("TOP-SECRET"), "{glob}: {output}");
    }
    for path in [
        "out-file",
        "out-dir",
        "out-dir/inner.txt",
        "chain",
        "notes/deep-out",
    ] {
        assert_eq!(
            search
                .denied(json!({"pattern": "invoice", "path": path}))
                .await,
            DenyRule::SymlinkEscape,
            "{path}"
        );
    }
    assert_eq!(tree.outside_snapshot(), before);
}

#[tokio::test(flavor = "current_thread")]
async fn arguments_of_the_wrong_type_are_errors() {
    let search = notes();
    assert!(
        search
            .err(json!({"pattern": "x", "context": "two"}))
            .await
            .contains("context")
    );
    assert!(search.err(json!({"pattern": 3})).await.contains("pattern"));
}

/// The policy table's row: `file:read`, risk low, allowed; `path` checked by the gate.
#[test]
fn the_files_provider_offers_it_and_the_gate_allows_it() {
    use pp_types::{Decision, Policy, Risk};
    let tree = TempTree::new();
    let jail = Arc::new(Jail::new(tree.workspace()).expect("jail"));
    let equipment = pp_tools::Toolbox::files()
        .equip(&jail, pp_tools::Limits::default())
        .expect("equipped");
    let spec = equipment
        .registry
        .specs()
        .find(|spec| spec.name == "search_files")
        .expect("search_files is offered")
        .clone();
    assert_eq!(
        spec.capability.as_ref().map(|c| c.as_str()),
        Some("file:read")
    );
    assert_eq!(spec.risk, Risk::Low);
    assert_eq!(spec.path_params, ["path"]);
    let decide = |arguments: Value| equipment.gate.evaluate(&spec, &arguments);
    assert_eq!(decide(json!({"pattern": "x"})), Decision::Allow);
    assert_eq!(
        decide(json!({"pattern": "x", "path": "src"})),
        Decision::Allow
    );
    for (path, rule) in [
        ("../outside", DenyRule::Escapes),
        ("/etc", DenyRule::AbsolutePath),
    ] {
        match decide(json!({"pattern": "x", "path": path})) {
            Decision::Deny(denial) => assert_eq!(denial.rule, rule, "{path}"),
            other => panic!("{path}: {other:?}"),
        }
    }
}
