//! `run_command` through the real sandbox child: the answer's exit code and streams, the
//! truncation marker, the wall clock, the task's interrupt, stdin, a working directory.
//!
//! This binary is its own sandbox child: started as `shell_child __sandbox SPEC` it runs
//! [`pp_sandbox::child::main`]. Where the kernel lacks Landlock the commands run
//! unconfined (`allow_unconfined`), since these checks are about the tool, not the
//! confinement (`pp-sandbox`'s `confinement` test proves that).
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a hand-rolled test harness (no #[test]): it reports on stdout, makes its own \
              workspace with std::fs and fails a check by panicking"
)]

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use pp_agent::{Tool, ToolContext};
use pp_gate::Jail;
use pp_tools::shell::{ShellProvider, ShellSettings};
use pp_tools::{Limits, Toolbox};
use pp_types::ToolOutput;
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: std::path::PathBuf,
    tool: Arc<dyn Tool>,
    runtime: tokio::runtime::Runtime,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(workspace.join("sub")).unwrap();
        let sandbox = pp_sandbox::Sandbox::new(
            std::env::current_exe().unwrap(),
            vec!["__sandbox".to_owned()],
        );
        let mut settings = ShellSettings::new(sandbox, dir.path().join("data"));
        settings.allow_unconfined = true;
        settings.output_bytes = 1000;
        let jail = Arc::new(Jail::new(&workspace).unwrap());
        let equipment = Toolbox::new()
            .with(Arc::new(ShellProvider::new(settings)))
            .equip(&jail, Limits::default())
            .unwrap();
        let tool = Arc::clone(equipment.registry.get("run_command").unwrap());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        Self {
            _dir: dir,
            workspace,
            tool,
            runtime,
        }
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        self.runtime.block_on(self.tool.execute(context, arguments))
    }
}

fn success(output: ToolOutput) -> String {
    match output {
        ToolOutput::Success { content } => content,
        other => panic!("not a success: {other:?}"),
    }
}

fn failure(output: ToolOutput) -> String {
    match output {
        ToolOutput::Error { message } => message,
        other => panic!("not an error: {other:?}"),
    }
}

fn exit_code_and_streams(fixture: &Fixture) {
    let text = success(fixture.call(
        &ToolContext::default(),
        &json!({"command": "sh", "args": ["-c", "echo out; echo err >&2"]}),
    ));
    assert!(text.starts_with("exit code 0 ("), "{text}");
    assert!(text.contains("\nstdout:\nout\nstderr:\nerr\n"), "{text}");
    let message = failure(fixture.call(
        &ToolContext::default(),
        &json!({"command": "sh", "args": ["-c", "exit 3"]}),
    ));
    assert!(message.starts_with("exit code 3 ("), "{message}");
    assert!(
        message.contains("stdout: (empty)\nstderr: (empty)\n"),
        "{message}"
    );
}

fn output_is_cut_with_a_marker(fixture: &Fixture) {
    let text = success(fixture.call(
        &ToolContext::default(),
        &json!({"command": "sh", "args": ["-c", "yes | head -c 200000"]}),
    ));
    assert!(
        text.contains("[… stdout cut: 200000 bytes in all, the first 1000 shown]"),
        "{text}"
    );
}

fn stdin_and_cwd_are_given(fixture: &Fixture) {
    let text = success(fixture.call(
        &ToolContext::default(),
        &json!({"command": "sh", "args": ["-c", "cat > got.txt; pwd"], "cwd": "sub",
                "stdin": "from the model\n"}),
    ));
    assert!(text.contains("/workspace/sub\n"), "{text}");
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("sub/got.txt")).unwrap(),
        "from the model\n"
    );
    let missing = failure(fixture.call(
        &ToolContext::default(),
        &json!({"command": "ls", "cwd": "nowhere"}),
    ));
    assert!(missing.contains("does not exist"), "{missing}");
}

fn the_wall_clock_kills_it(fixture: &Fixture) {
    let message = failure(fixture.call(
        &ToolContext::default(),
        &json!({"command": "sleep", "args": ["60"], "timeout_secs": 1}),
    ));
    assert!(
        message.starts_with("killed: still running after 1 s"),
        "{message}"
    );
}

fn the_tasks_interrupt_kills_it(fixture: &Fixture) {
    let context = ToolContext::default();
    let interrupt = context.interrupt.clone();
    let started = fixture.workspace.join("started");
    let watcher = {
        std::thread::spawn(move || {
            // Interrupt once the command is surely running.
            while !Path::new(&started).exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
            interrupt.trigger();
        })
    };
    let message = failure(fixture.call(
        &context,
        &json!({"command": "sh", "args": ["-c", "touch started; sleep 60"]}),
    ));
    watcher.join().unwrap();
    assert!(
        message.starts_with("killed: the task was cancelled or ran out of time"),
        "{message}"
    );
    // An interrupt that came before the call: nothing runs.
    let message = failure(fixture.call(
        &context,
        &json!({"command": "sh", "args": ["-c", "touch ran"]}),
    ));
    assert!(message.starts_with("not run"), "{message}");
    assert!(!fixture.workspace.join("ran").exists());
}

/// A named check.
type Check = (&'static str, fn(&Fixture));

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__sandbox") {
        return ExitCode::from(pp_sandbox::child::main(
            args.get(2).map_or("", String::as_str),
        ));
    }
    let fixture = Fixture::new();
    let checks: [Check; 5] = [
        ("exit_code_and_streams", exit_code_and_streams),
        ("output_is_cut_with_a_marker", output_is_cut_with_a_marker),
        ("stdin_and_cwd_are_given", stdin_and_cwd_are_given),
        ("the_wall_clock_kills_it", the_wall_clock_kills_it),
        ("the_tasks_interrupt_kills_it", the_tasks_interrupt_kills_it),
    ];
    for (name, check) in &checks {
        check(&fixture);
        println!("test {name} ... ok");
    }
    println!("{} passed, 0 failed", checks.len());
    ExitCode::SUCCESS
}
