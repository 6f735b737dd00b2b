//! Slow and numerous clients against a real `pocketpilot serve` started under the common
//! 1024 open-file soft limit: `/api/health` answers while 1,100 half-sent requests are
//! held, and the server closes them after the header timeout; the server raises its own
//! soft limit and its children get 1024 back; connections over `[server]
//! max_connections` get 503 with `Retry-After: 1`; a burst of 600 new connections while
//! the server takes none waits in its listen queue instead of being dropped.

use std::io::{BufRead as _, BufReader, ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pp_test_support::TempTree;
use serde_json::json;

use crate::http::Server;
use crate::{isolate, write_script};

/// The soft limit the server is started with: the common default.
const SOFT_LIMIT: u64 = 1024;

/// The hard limit the tests need to be meaningful (the server raises its soft limit to
/// it, and must be able to hold well over 1,100 connections).
const NEEDED_HARD_LIMIT: u64 = 4096;

/// `(soft, hard)` open-file limits of process `pid` (`self` for this one), from
/// `/proc/PID/limits`; `None` for unlimited.
fn open_file_limits(pid: &str) -> (Option<u64>, Option<u64>) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    let mut values = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .map(|value| value.parse::<u64>().ok());
    (values.next().flatten(), values.next().flatten())
}

/// Whether this machine's hard limit lets the tests run; prints why not.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
fn hard_limit_allows(test: &str) -> bool {
    let (_, hard) = open_file_limits("self");
    if hard.is_some_and(|hard| hard < NEEDED_HARD_LIMIT) {
        eprintln!(
            "skipped {test}: the hard RLIMIT_NOFILE is {} here, below {NEEDED_HARD_LIMIT} \
             (raise it with `ulimit -Hn` as root or LimitNOFILE=)",
            hard.unwrap_or_default()
        );
        return false;
    }
    // This process holds the client ends: give it room too.
    pp_types::open_files::raise().unwrap();
    true
}

fn config(tree: &TempTree, extra: &str) -> PathBuf {
    let path = tree.base().join("pocketpilot.toml");
    let workspace = tree.workspace().display().to_string();
    std::fs::write(
        &path,
        format!("[[workspace]]\nname = \"main\"\npath = \"{workspace}\"\n\n{extra}"),
    )
    .unwrap();
    path
}

/// `serve --port 0 --config CONFIG [--script SCRIPT]` in `tree` (its home `home/`, its
/// config one workspace plus `extra`), started by a shell that first lowers the soft
/// open-file limit to 1024 (then `exec`s it: same pid); the server and the file its
/// stderr goes to (`serve.log`).
fn serve_at_1024(tree: &TempTree, extra: &str, script: Option<&Path>) -> (Server, PathBuf) {
    let home = tree.base().join("home");
    let config = config(tree, extra);
    let log = tree.base().join("serve.log");
    let mut command = Command::new("/bin/sh");
    isolate(&mut command, &home);
    command
        .arg("-c")
        .arg(format!("ulimit -S -n {SOFT_LIMIT} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_pocketpilot"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--port", "0"]);
    if let Some(script) = script {
        command.arg("--script").arg(script);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("PocketPilot console: http://127.0.0.1:")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let (port, token) = url.split_once("/login?token=").unwrap();
    let server = Server {
        child,
        port: port.parse().unwrap(),
        token: token.to_owned(),
    };
    (server, log)
}

/// `GET /api/health` over a fresh connection with a 5 s client timeout: the status line
/// and how long the answer took.
fn health(port: u16) -> (Result<String, std::io::Error>, Duration) {
    let started = Instant::now();
    let answer = (|| {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5))?;
        let left = Duration::from_secs(5).saturating_sub(started.elapsed());
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        write!(
            stream,
            "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response)
    })();
    (answer, started.elapsed())
}

/// Opens `count` connections that each send half a request (the request line and one
/// header, never the blank line); when each was sent.
fn hold_half_sent(port: u16, count: usize) -> Vec<(TcpStream, Instant)> {
    (0..count)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(
                stream,
                "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            )
            .unwrap();
            (stream, Instant::now())
        })
        .collect()
}

/// Reads `stream` until the server closes it or `deadline` passes; `true` when closed.
fn closed_by(stream: &mut TcpStream, deadline: Instant) -> bool {
    let mut buffer = [0_u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            // A reset is a close too.
            Err(_) => return true,
        }
    }
}

#[test]
fn health_answers_while_1100_half_sent_requests_are_held_and_they_are_closed() {
    if !hard_limit_allows("health_answers_while_1100_half_sent_requests_are_held") {
        return;
    }
    let tree = TempTree::new();
    let (server, log) = serve_at_1024(&tree, "", None);

    // It was started at 1024 and raised its own soft limit to the hard one.
    let (soft, hard) = open_file_limits(&server.child.id().to_string());
    assert_eq!(soft, hard, "the server's soft limit was not raised");
    assert!(
        std::fs::read_to_string(&log).unwrap().contains(&format!(
            "open files: soft limit raised from {SOFT_LIMIT} to "
        )),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );

    let (answer, idle_latency) = health(server.port);
    assert!(answer.unwrap().starts_with("HTTP/1.1 200"));

    let held = hold_half_sent(server.port, 1100);
    let (answer, loaded_latency) = health(server.port);
    let answer = answer.unwrap_or_else(|error| {
        panic!("health did not answer within 5 s with 1,100 half-sent requests held: {error}")
    });
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Closed after the 10 s header timeout (with 5 s of slack for a loaded machine).
    let mut slowest = Duration::ZERO;
    let mut still_open = 0;
    for (mut stream, sent) in held {
        if closed_by(&mut stream, sent + Duration::from_secs(15)) {
            slowest = slowest.max(sent.elapsed());
        } else {
            still_open += 1;
        }
    }
    assert_eq!(still_open, 0, "half-sent requests still open after 15 s");
    assert!(
        slowest >= Duration::from_secs(9),
        "closed too early: {slowest:?}"
    );
    eprintln!(
        "health: {idle_latency:?} idle, {loaded_latency:?} with 1,100 half-sent requests \
         held; the last held connection was closed {slowest:?} after its bytes were sent"
    );
    let (answer, _) = health(server.port);
    assert!(answer.unwrap().starts_with("HTTP/1.1 200"));
}

#[test]
fn connections_over_the_cap_get_503_with_retry_after_and_are_closed() {
    let tree = TempTree::new();
    let (server, _) = serve_at_1024(
        &tree,
        "[server]\nmax_connections = 16\nheader_timeout_secs = 60\n",
        None,
    );
    let mut held = hold_half_sent(server.port, 16);

    let (answer, latency) = health(server.port);
    let answer = answer.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nRetry-After: 1\r\n"), "{answer}");
    assert!(
        answer.ends_with(r#"{"error":{"code":"too_many_connections","message":"too many open connections; retry in a second"}}"#),
        "{answer}"
    );
    eprintln!("503 over the cap in {latency:?}");

    // One held connection closes: its slot is free again.
    drop(held.pop());
    assert!(
        pp_test_support::wait_until(Duration::from_secs(5), || {
            let (answer, _) = health(server.port);
            answer.is_ok_and(|answer| answer.starts_with("HTTP/1.1 200"))
        }),
        "no slot came free"
    );
}

/// The burst of new connections the listen-queue test opens while the server accepts
/// none: well over the 128 a listener bound by `tokio::net::TcpListener::bind` queues.
const BURST: usize = 600;

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

#[test]
fn a_burst_of_600_connections_waits_in_the_listen_queue_and_each_is_answered() {
    if !hard_limit_allows("a_burst_of_600_connections_waits_in_the_listen_queue") {
        return;
    }
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if somaxconn <= BURST {
        eprintln!("skipped: net.core.somaxconn is {somaxconn} here, at most the {BURST} queued");
        return;
    }
    let tree = TempTree::new();
    let (server, _) = serve_at_1024(&tree, "", None);
    let (answer, _) = health(server.port);
    assert!(answer.unwrap().starts_with("HTTP/1.1 200"));

    // Stopped, the server accepts nothing: every handshake the kernel completes waits in
    // the listen queue. A full queue drops the SYN, and that connect would wait a second
    // for its retry (here: time out).
    signal(server.child.id(), "STOP");
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], server.port));
    let mut streams = Vec::new();
    let mut dropped = None;
    for index in 0..BURST {
        match TcpStream::connect_timeout(&address, Duration::from_millis(500)) {
            Ok(stream) => streams.push(stream),
            Err(error) => {
                dropped = Some((index, error));
                break;
            }
        }
    }
    signal(server.child.id(), "CONT");
    if let Some((index, error)) = dropped {
        panic!(
            "connection {index} of {BURST} was not queued while the server was stopped: {error}"
        );
    }
    // Resumed, it serves every one of them.
    for stream in &mut streams {
        write!(
            stream,
            "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            server.port
        )
        .unwrap();
    }
    for (index, stream) in streams.iter_mut().enumerate() {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "connection {index}: {response}"
        );
    }
}

#[test]
fn children_of_serve_get_the_original_open_file_limit_back() {
    if !hard_limit_allows("children_of_serve_get_the_original_open_file_limit_back") {
        return;
    }
    let tree = TempTree::new();
    let seen = tree.base().join("notifier-limit.txt");
    let notify = format!(
        "[notify]\ncommand = [\"/bin/sh\", \"-c\", \"ulimit -S -n > '{}'\"]\n",
        seen.display()
    );
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
                {"content": "done"}]),
    );
    let (server, _) = serve_at_1024(&tree, &notify, Some(&script));
    let (soft, _) = open_file_limits(&server.child.id().to_string());
    assert_ne!(soft, Some(SOFT_LIMIT), "the server kept 1024");

    // A write waits for a person: the notifier runs, as a child of serve.
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "write"})));
    assert_eq!(status, 201, "{task}");
    let ran = pp_test_support::wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&seen).is_ok_and(|text| text.ends_with('\n'))
    });
    assert!(ran, "the notifier never ran");
    let limit = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(limit.trim(), SOFT_LIMIT.to_string());
}

/// Starts `PUT /api/files/content?path=NAME` with `Content-Length: total` and sends
/// `chunks` pieces of `chunk` bytes `pause` apart; then reads the answer (the server's
/// status, 0 when it closed without one).
fn upload_slowly(
    server: &Server,
    name: &str,
    total: usize,
    chunks: &[usize],
    pause: Duration,
) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        stream,
        "PUT /api/files/content?path={name} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {total}\r\nConnection: close\r\n\r\n",
        server.port, server.token
    )
    .unwrap();
    for (index, &size) in chunks.iter().enumerate() {
        if index > 0 {
            // The pause is the behaviour under test (a slow client), not a wait.
            std::thread::sleep(pause);
        }
        // The server may already have given up on a stalled body: a failed write is
        // that answer, read below.
        if stream.write_all(&vec![b'x'; size]).is_err() {
            break;
        }
    }
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response);
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_body_that_keeps_moving_passes_and_one_that_stalls_past_the_idle_timeout_fails() {
    let tree = TempTree::new();
    let (server, log) = serve_at_1024(&tree, "[server]\nbody_idle_timeout_secs = 2\n", None);

    // Five pieces 1 s apart: 4 s in all, twice the idle timeout, yet never idle for 2 s.
    let status = upload_slowly(
        &server,
        "slow.bin",
        5000,
        &[1000; 5],
        Duration::from_secs(1),
    );
    assert_eq!(status, 201, "{}", std::fs::read_to_string(&log).unwrap());
    assert_eq!(
        std::fs::read(tree.workspace().join("slow.bin"))
            .unwrap()
            .len(),
        5000
    );

    // One piece, then 4 s of nothing: the body fails and nothing is written.
    let status = upload_slowly(
        &server,
        "stalled.bin",
        5000,
        &[1000, 4000],
        Duration::from_secs(4),
    );
    assert!(
        !(200..300).contains(&status),
        "a stalled body was accepted ({status})"
    );
    assert!(!tree.workspace().join("stalled.bin").exists());
    let (answer, _) = health(server.port);
    assert!(answer.unwrap().starts_with("HTTP/1.1 200"));
}
