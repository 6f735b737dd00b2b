//! Real providers end to end: `run` and `doctor` against an OpenAI-compatible server the
//! test starts on 127.0.0.1, config layering errors, and the no-model message.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text};

/// The fake server process (tests/it/fixtures/fake_openai.py); killed on drop.
pub(crate) struct FakeServer {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl FakeServer {
    /// Serves `turns` in order, one per request.
    pub(crate) fn start(dir: &Path, turns: &Value) -> Self {
        let turns_file = dir.join("turns.json");
        std::fs::write(&turns_file, turns.to_string()).unwrap();
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("port");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/fake_openai.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&turns_file)
            .arg(&log)
            .arg(&port_file)
            .stdin(Stdio::piped())
            .spawn()
            .expect("python3 runs the fake server");
        let mut port = None;
        pp_test_support::wait_until(Duration::from_secs(5), || {
            port = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|text| text.trim().parse().ok());
            port.is_some()
        });
        if let Some(port) = port {
            return Self { child, port, log };
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the fake server did not start");
    }

    /// Every request body so far, as `{"auth", "body"}`.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `pocketpilot.toml` in the tree's base.
pub(crate) fn write_config(tree: &TempTree, body: &str) -> PathBuf {
    let path = tree.base().join("pocketpilot.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// A config for the fake server on `port` (key in `PP_TEST_KEY`).
pub(crate) fn config_for(port: u16) -> String {
    format!(
        "[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
         model = \"fake-model\"\napi_key_env = \"PP_TEST_KEY\"\nretry_backoff_ms = 1\n"
    )
}

/// `pocketpilot` with its own data dir (and no provider keys leaking in).
fn isolated(tree: &TempTree) -> Command {
    pocketpilot_in(&tree.base().join("home"))
}

#[test]
fn run_against_a_real_openai_compatible_server() {
    let tree = TempTree::new();
    tree.file("notes.txt", "hi from the notes\n");
    let server = FakeServer::start(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "The notes say hi."}
        ]),
    );
    let config = write_config(&tree, &config_for(server.port));
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("what do my notes say?")
        .env("PP_TEST_KEY", "sk-test-123")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The notes say hi.\n");
    assert!(!stderr.contains("sk-test-123"), "the key is never printed");
    // The answer streamed in as it arrived (in 4-character pieces), shown once.
    assert!(stderr.contains("model › The notes say hi.\n"), "{stderr}");
    assert!(
        !stderr.contains("[step 2] model:"),
        "not repeated: {stderr}"
    );
    // The summary counts the provider's tokens (15 per call).
    assert!(
        stderr.contains("completed · 2 steps · 1 tool call · 0 denied · 0 approvals · 0 files changed · 30 tokens · "),
        "{stderr}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["auth"], "Bearer sk-test-123");
    let first = &requests[0]["body"];
    assert_eq!(first["model"], "fake-model");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"write_file"),
        "{tools:?}"
    );
    let second = requests[1]["body"]["messages"].as_array().unwrap();
    let assistant = &second[second.len() - 2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"], "",
        "a tool-only turn is sent with empty content, not null"
    );
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    let tool = &second[second.len() - 1];
    assert_eq!(tool["role"], "tool");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("hi from the notes")
    );
}

/// In a terminal, a spinner with the elapsed time runs while the model thinks, and is
/// cleared before the streamed answer.
#[test]
fn in_a_terminal_a_spinner_runs_while_the_model_thinks() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        // The pause is what the spinner fills; no assertion depends on its length.
        &json!([{"content": "Thought about it.", "delay_ms": 1500}]),
    );
    let config = write_config(&tree, &config_for(server.port));
    let command = format!(
        "exec {} --config '{}' run --workspace '{}' 'think'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        config.display(),
        tree.workspace().display()
    );
    let mut child = Command::new("script");
    child.args(["-qefc", &command, "/dev/null"]);
    crate::isolate(&mut child, &tree.base().join("home"));
    let mut child = child
        .env("PP_TEST_KEY", "sk-test-123")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut screen = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut screen)
        .unwrap();
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0), "{screen}");
    assert!(screen.contains("waiting for the model"), "{screen}");
    assert!(screen.contains("⠋ waiting for the model "), "{screen}");
    // Cleared (carriage return, erase line) before the answer streams in.
    assert!(
        screen.contains("\r\u{1b}[2Kmodel › Thought about it."),
        "{screen:?}"
    );
}

#[test]
fn doctor_reaches_the_model_and_reports_tool_calling() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([{"tool_calls": [{"name": "ping", "arguments": {"message": "pong"}}]}]),
    );
    let config = write_config(
        &tree,
        &format!(
            "{}\n[[workspace]]\nname = \"w\"\npath = \"{}\"\n",
            config_for(server.port),
            tree.workspace().display()
        ),
    );
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .env("PP_TEST_KEY", "sk-test")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("[ok  ] model reachable: fake-model"),
        "{stdout}"
    );
    assert!(stdout.contains("[ok  ] tool calling: works"), "{stdout}");
    assert!(stdout.contains("[ok  ] workspace w"), "{stdout}");
    assert!(stdout.contains("verdict: ready"), "{stdout}");
}

#[test]
fn with_nothing_configured_run_exits_4_and_says_what_to_do() {
    let tree = TempTree::new();
    // A port with nothing listening: discovery must not find whatever runs on 11434.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = write_config(
        &tree,
        &format!("[discovery]\nlocal_ports = [{closed}]\nprobe_timeout_ms = 200\n"),
    );
    let started = std::time::Instant::now();
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("hello")
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    for hint in [
        "OPENAI_API_KEY",
        "Ollama",
        "pocketpilot init",
        "pocketpilot demo",
        &closed.to_string(),
    ] {
        assert!(stderr.contains(hint), "missing {hint}: {stderr}");
    }
    assert!(started.elapsed() < Duration::from_secs(10), "fails at once");

    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output)
            .0
            .contains("[FAIL] model: no model is configured")
    );
}

/// `doctor` runs every check even after a `[FAIL]`: a config file it cannot use is
/// reported, and the data directory and the database are still checked (on the
/// defaults), then the verdict; exit 1.
#[test]
fn doctor_reports_every_check_after_a_failed_config() {
    let tree = TempTree::new();
    let config = write_config(&tree, "[approvals]\nexpire_after_secs = 0\n");
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("[FAIL] config: `[approvals] expire_after_secs` must be at least 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[warn] config: the checks below use the defaults"),
        "{stdout}"
    );
    assert!(stdout.contains("[ok  ] data directory"), "{stdout}");
    assert!(stdout.contains("[ok  ] database"), "{stdout}");
    assert!(stdout.contains("] model"), "{stdout}");
    assert!(
        stdout.contains("verdict: something needs fixing"),
        "{stdout}"
    );
}

#[test]
fn config_errors_name_the_key_and_the_file() {
    let tree = TempTree::new();
    let config = write_config(&tree, "[tasks]\nworkerz = 3\n");
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .args(["tasks", "list"])
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("workerz") && stderr.contains("pocketpilot.toml"),
        "{stderr}"
    );

    let config = write_config(&tree, &config_for(9));
    let output = isolated(&tree)
        .arg("--config")
        .arg(&config)
        .args(["run", "--workspace"])
        .arg(tree.workspace())
        .arg("hi")
        .env_remove("PP_TEST_KEY")
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("api_key_env names `PP_TEST_KEY`, which is not set"),
        "{stderr}"
    );

    // The environment names the config file; a flag wins over it.
    let output = isolated(&tree)
        .env("POCKETPILOT_CONFIG", tree.base().join("missing.toml"))
        .args(["tasks", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("missing.toml"));
    let good = write_config(&tree, "[tasks]\nworkers = 1\n");
    let output = isolated(&tree)
        .env("POCKETPILOT_CONFIG", tree.base().join("missing.toml"))
        .arg("--config")
        .arg(&good)
        .args(["tasks", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
}

#[test]
fn init_writes_a_valid_config_and_never_overwrites_silently() {
    let tree = TempTree::new();
    let path = tree.base().join("conf/pocketpilot.toml");
    let output = isolated(&tree)
        .arg("--config")
        .arg(&path)
        .args([
            "init",
            "--provider",
            "openai",
            "--model",
            "qwen2.5",
            "--base-url",
            "http://127.0.0.1:11434/v1",
            "--api-key-env",
            "MY_KEY",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.contains("model = \"qwen2.5\"") && written.contains("api_key_env = \"MY_KEY\"")
    );
    assert!(!written.contains("sk-"), "no key is ever written");

    let again = isolated(&tree)
        .arg("--config")
        .arg(&path)
        .arg("init")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again).1.contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        written,
        "left untouched"
    );

    // The written file loads: doctor names the missing key variable.
    let doctor = isolated(&tree)
        .arg("--config")
        .arg(&path)
        .arg("doctor")
        .env_remove("MY_KEY")
        .output()
        .unwrap();
    assert!(text(&doctor).0.contains("MY_KEY"), "{}", text(&doctor).0);
}

#[test]
fn the_demo_runs_to_the_end_without_a_terminal() {
    let tree = TempTree::new();
    let mut child = isolated(&tree)
        .arg("demo")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stdout}");
    for expected in [
        "1/4  A read",
        "rule: escapes",
        "Demo-only scripted decision: rejecting",
        "create todo.md",
        "files written: none",
        "4/4  Invoices",
        "extract_invoice: 3 invoice(s), total 4710.00 (tax 326.98)",
        "finding total_mismatch in invoices/2024-07-ops.xml: amount 3000.00 + tax 180.00 = \
         3180.00, but the total says 3280.00",
        "create summary.csv",
        "summary.csv written: no",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?}:\n{stdout}");
    }
}
