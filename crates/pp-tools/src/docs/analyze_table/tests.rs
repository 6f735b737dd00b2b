//! `analyze_table` through a real parser child (a shell script answering what
//! `pp_docs::job::run_job` answers).

use std::path::PathBuf;

use super::*;
use pp_types::Risk;
use pretty_assertions::assert_eq;

#[test]
fn the_arguments_match_the_schema() {
    crate::args_check::assert_matches::<Arguments<'static>>("analyze_table");
}

/// A tool whose parser child is a shell script (run by the real runner) printing the
/// answer `pp_docs::job::run_job` gives for `bytes` — the real wire format and the
/// real table — and counting its runs in `runs`.
struct Fixture {
    workspace: tempfile::TempDir,
    parser_dir: tempfile::TempDir,
    tool: AnalyzeTable,
}

impl Fixture {
    fn new() -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let parser_dir = tempfile::tempdir().unwrap();
        let script = format!(
            "cat >/dev/null; echo run >> '{dir}/runs'; cat '{dir}/answer.json'",
            dir = parser_dir.path().display()
        );
        let parser = pp_docs::Parser::new(PathBuf::from("/bin/sh"), vec!["-c".into(), script]);
        let mut settings = DocsSettings::new(parser);
        settings.max_input_bytes = 1 << 20;
        let tool = AnalyzeTable::new(
            Arc::new(Jail::new(workspace.path()).unwrap()),
            Arc::new(settings),
        );
        Self {
            workspace,
            parser_dir,
            tool,
        }
    }

    /// Writes the workspace file `name`.
    fn file(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.workspace.path().join(name), bytes).unwrap();
    }

    /// Writes the answer the parser will give for this call: what
    /// `pp_docs::job::run_job` answers for the very job the tool sends.
    fn prepare_answer(&self, arguments: &Value) {
        let Ok(arguments) = parse::<Arguments<'_>>(arguments) else {
            return;
        };
        let (path, sheet) = (arguments.path, arguments.sheet);
        let (Ok(bytes), Some(format)) = (
            std::fs::read(self.workspace.path().join(path)),
            Format::from_path(path),
        ) else {
            return;
        };
        let job = analyze_job(
            format,
            sheet,
            arguments.query(),
            self.tool.settings.max_output_chars,
        );
        let answer = match pp_docs::job::run_job(&job, &bytes) {
            Ok(output) => json!({"ok": output}),
            Err(error) => json!({"error": error}),
        };
        std::fs::write(
            self.parser_dir.path().join("answer.json"),
            serde_json::to_vec(&answer).unwrap(),
        )
        .unwrap();
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.parser_dir.path().join("runs"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    #[allow(clippy::needless_pass_by_value, reason = "tests pass json! literals")]
    fn call(&self, arguments: Value) -> ToolOutput {
        self.prepare_answer(&arguments);
        self.tool.call(&ToolContext::default(), &arguments)
    }

    fn ok(&self, arguments: Value) -> Value {
        match self.call(arguments) {
            ToolOutput::Success { content } => serde_json::from_str(&content).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn error(&self, arguments: Value) -> String {
        match self.call(arguments) {
            ToolOutput::Error { message } => message,
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn null_arguments_count_as_absent_and_bad_ones_are_named() {
    let arguments = json!({"path": "x.csv", "op": "head", "limit": null, "by": null});
    let query = parse::<Arguments<'_>>(&arguments).unwrap().query();
    assert_eq!(query.limit, None);
    assert_eq!(query.by, Vec::<String>::new());
    let error = parse::<Arguments<'_>>(&json!({"path": "x.csv", "op": "pivot"})).unwrap_err();
    let ToolOutput::Error { message } = error else {
        panic!("not an error: {error:?}");
    };
    assert!(message.contains("group_by"), "{message}");
    assert!(
        message.starts_with("bad arguments: unknown variant `pivot`"),
        "{message}"
    );
    let arguments = json!({"path": "x.csv", "by": ["a", "b"], "where": null});
    let error = parse::<Arguments<'_>>(&arguments).unwrap_err();
    assert_eq!(
        error,
        ToolOutput::error("bad arguments: missing field `op`")
    );
    let arguments = json!({"path": "x.csv", "op": "group_by", "by": ["a", "b"]});
    let query = parse::<Arguments<'_>>(&arguments).unwrap().query();
    assert_eq!(query.by, ["a", "b"]);
    assert_eq!(
        query,
        serde_json::from_value(arguments).unwrap(),
        "as pp-docs reads it"
    );
}

const SALES: &[u8] =
    b"region;amount;day\nnorth;10;2024-01-03\nsouth;4.5;2024-02-01\nnorth;2;2024-02-20\n";

#[test]
fn the_spec_lists_the_ops_and_functions() {
    let fixture = Fixture::new();
    let spec = fixture.tool.spec();
    assert_eq!(spec.name, "analyze_table");
    assert_eq!(spec.capability.as_ref().unwrap().as_str(), "file:read");
    assert_eq!(spec.risk, Risk::Low);
    assert_eq!(spec.path_params, ["path"]);
    assert_eq!(spec.parameters["properties"]["op"]["enum"], json!(OPS));
    assert_eq!(
        spec.parameters["properties"]["aggregates"]["items"]["properties"]["fn"]["enum"],
        json!(["count", "sum", "mean", "min", "max"])
    );
}

#[test]
fn group_by_through_the_parser_child() {
    let fixture = Fixture::new();
    fixture.file("sales.csv", SALES);
    let value = fixture.ok(json!({
        "path": "sales.csv", "op": "group_by", "by": "region",
        "aggregates": [{"column": "amount", "fn": "sum"}],
        "order_by": "sum(amount)", "descending": true
    }));
    assert_eq!(value["columns"], json!(["region", "sum(amount)"]));
    assert_eq!(value["rows"], json!([["north", 12.0], ["south", 4.5]]));
    assert_eq!(value["table"]["delimiter"], json!(";"));
    assert_eq!(value["table"]["rows"], json!(3));
    assert_eq!(value["truncated"], json!(false));
    assert_eq!(fixture.runs(), 1);
}

#[test]
fn every_sql_call_runs_in_its_own_child_on_the_current_file() {
    let fixture = Fixture::new();
    fixture.file("sales.csv", SALES);
    let sql = json!({"path": "sales.csv", "op": "sql", "sql": "SELECT count(*) AS n FROM t"});
    assert_eq!(fixture.ok(sql.clone())["rows"], json!([[3]]));
    assert_eq!(fixture.ok(sql.clone())["rows"], json!([[3]]));
    assert_eq!(fixture.runs(), 2, "no table is kept in the service");
    fixture.file("sales.csv", b"region;amount\nwest;1\n");
    assert_eq!(fixture.ok(sql)["rows"], json!([[1]]));
    assert_eq!(fixture.runs(), 3);
}

#[test]
fn the_task_interrupt_stops_a_call_in_flight() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("sales.csv"), SALES).unwrap();
    // A child that never answers: only the interrupt (not the 30 s wall) ends it.
    let parser = pp_docs::Parser::new(
        PathBuf::from("/bin/sh"),
        vec!["-c".into(), "cat >/dev/null; exec sleep 30".into()],
    );
    let tool = AnalyzeTable::new(
        Arc::new(Jail::new(workspace.path()).unwrap()),
        Arc::new(DocsSettings::new(parser)),
    );
    let context = ToolContext::for_task("task", None);
    let interrupt = context.interrupt.clone();
    let trigger = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        interrupt.trigger();
    });
    let started = std::time::Instant::now();
    let output = tool.call(
        &context,
        &json!({"path": "sales.csv", "op": "sql", "sql": "SELECT 1"}),
    );
    trigger.join().unwrap();
    let ToolOutput::Error { message } = output else {
        panic!("not an error: {output:?}");
    };
    assert!(
        message.contains("stopped: the task was cancelled"),
        "{message}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the call ended with the interrupt, not the wall-clock limit: {:?}",
        started.elapsed()
    );
}

#[test]
fn sql_escapes_are_refused_through_the_tool_and_create_nothing() {
    let fixture = Fixture::new();
    fixture.file("sales.csv", SALES);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("out.db");
    for sql in [
        format!("ATTACH '{}' AS o", target.display()),
        format!("SELECT 1; ATTACH 'file:{}?mode=rwc' AS o", target.display()),
        format!("VACUUM INTO '{}'", target.display()),
        "SELECT load_extension('/tmp/evil.so')".to_owned(),
        "PRAGMA writable_schema = 1".to_owned(),
    ] {
        let message = fixture.error(json!({"path": "sales.csv", "op": "sql", "sql": sql}));
        assert!(
            message.starts_with("`sales.csv`: sql: "),
            "{sql}: {message}"
        );
    }
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn bad_requests_are_clear_errors() {
    let fixture = Fixture::new();
    fixture.file("sales.csv", SALES);
    let message = fixture.error(json!({"path": "sales.csv", "op": "sql"}));
    assert!(message.contains("needs `sql`"), "{message}");
    let message = fixture.error(json!({"path": "sales.csv", "op": "sort", "order_by": "price"}));
    assert!(message.contains("region, amount, day"), "{message}");
    let message = fixture.error(json!({"path": "sales.csv", "op": "explode"}));
    assert!(message.contains("group_by"), "{message}");
    std::fs::write(fixture.workspace.path().join("notes.pdf"), "%PDF").unwrap();
    let message = fixture.error(json!({"path": "notes.pdf", "op": "schema"}));
    assert!(message.contains("not a table"), "{message}");
}

#[test]
fn path_escapes_are_denied() {
    let fixture = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.csv"), "a\n1\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.csv"),
        fixture.workspace.path().join("link.csv"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), fixture.workspace.path().join("dir")).unwrap();
    let absolute = outside.path().join("secret.csv");
    for path in [
        "../secret.csv",
        absolute.to_str().unwrap(),
        "link.csv",
        "dir/secret.csv",
    ] {
        let output = fixture.call(json!({"path": path, "op": "head"}));
        assert!(
            matches!(output, ToolOutput::Denied(_)),
            "{path}: {output:?}"
        );
    }
    assert_eq!(fixture.runs(), 0, "nothing was parsed");
}

#[test]
fn a_parser_error_names_the_file() {
    let fixture = Fixture::new();
    fixture.file("broken.json", b"[{\"a\": ");
    let message = fixture.error(json!({"path": "broken.json", "op": "schema"}));
    assert!(
        message.starts_with("`broken.json`: the file cannot be read"),
        "{message}"
    );
}
