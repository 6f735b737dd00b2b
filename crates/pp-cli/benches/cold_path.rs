//! The cold path, end to end, against the physical limit: `pocketpilot run` one-shot
//! (a real process, a real database, a loopback OpenAI-compatible server that answers at
//! once) next to `curl` sending the very same request and `pocketpilot --version` (a
//! process start), alternating round by round; then `pocketpilot serve` from spawn to
//! its first `/api/health` answer, with its idle RSS.
//!
//! Run with `cargo bench -p pp-cli --bench cold_path` (release profile). Options after
//! `--`: `--runs N` (default 20), `--bin PATH` (default: the `pocketpilot` cargo built for
//! this bench), `--dir PATH` (where the data directory goes; `/dev/shm` shows the run
//! without the disk's `fsync` cost). Peak RSS is the median of five extra runs under GNU time
//! (`/usr/bin/time -f %M`), not timed, so its own fork and exec never count against the
//! wall times. It also prints the binary's size (the file and its `.text`) and the
//! machine's load average before and after. Prints plain text; no harness. Goals (issue
//! 25): `run` <= 0.85x `curl` on disk, peak RSS <= 10 MiB; `serve` idle RSS <= 10 MiB;
//! the binary <= 20 MB. See `docs/performance.md`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "a benchmark binary: prints figures, panics on setup failure, and writes its \
              own temporary files"
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the loopback server answers to a streamed request: one text delta, a stop, done.
const STREAMED: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,",
    "\"delta\":{\"role\":\"assistant\",\"content\":\"Hello!\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,",
    "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

/// What it answers to a request that does not stream.
const WHOLE: &str = concat!(
    "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,",
    "\"message\":{\"role\":\"assistant\",\"content\":\"Hello!\"},\"finish_reason\":\"stop\"}]}"
);

const GNU_TIME: &str = "/usr/bin/time";

/// Runs (not timed) whose peak RSS is measured; the median is printed.
const RSS_SAMPLES: usize = 5;

struct Options {
    runs: usize,
    bin: PathBuf,
    /// Where the data directory goes (`--dir`; default the system's temp directory). On
    /// tmpfs (`/dev/shm`) `fsync` costs nothing, which shows what the disk adds.
    dir: Option<PathBuf>,
}

fn options() -> Options {
    let mut options = Options {
        runs: 20,
        bin: PathBuf::from(env!("CARGO_BIN_EXE_pocketpilot")),
        dir: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => options.runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(20),
            "--bin" => options.bin = PathBuf::from(args.next().expect("--bin PATH")),
            "--dir" => options.dir = Some(PathBuf::from(args.next().expect("--dir PATH"))),
            _ => {} // `cargo bench` passes `--bench`.
        }
    }
    options
}

fn main() {
    let options = options();
    let dir = match &options.dir {
        Some(parent) => tempfile::tempdir_in(parent).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let server = MockServer::start();
    let home = dir.path().join("home");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let config = dir.path().join("pocketpilot.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\n\
             model = \"bench-model\"\n\n[server]\nport = 0\n",
            server.port
        ),
    )
    .unwrap();
    let bin = options.bin.as_path();
    let base = |command: &mut Command| {
        command
            .arg("--home")
            .arg(&home)
            .arg("--config")
            .arg(&config);
    };
    let run = || {
        let mut command = Command::new(bin);
        base(&mut command);
        command
            .arg("run")
            .arg("--workspace")
            .arg(&workspace)
            .arg("Say hello");
        command
    };
    let version = || {
        let mut command = Command::new(bin);
        command.arg("--version");
        command
    };

    println!(
        "pocketpilot cold path: {} (data in {})",
        bin.display(),
        dir.path().display()
    );
    let file_bytes = std::fs::metadata(bin).map(|meta| meta.len()).unwrap_or(0);
    println!(
        "binary: {:.1} MB file, {} of .text (goal: file <= 20 MB)",
        file_bytes as f64 / 1e6,
        text_bytes(bin).map_or_else(
            || "n/a".to_owned(),
            |text| format!("{:.1} MB", text as f64 / 1e6)
        )
    );
    println!("load average before: {}", load_average());
    println!(
        "loopback server on 127.0.0.1:{}, {} rounds",
        server.port, options.runs
    );
    // One warm-up run creates the data directory and the database, and gives the request
    // body curl sends.
    check(&mut run(), "pocketpilot run");
    let body_file = dir.path().join("request.json");
    std::fs::write(&body_file, server.last_body()).unwrap();
    let url = format!("http://127.0.0.1:{}/v1/chat/completions", server.port);
    let curl = || {
        let mut command = Command::new("curl");
        command
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-H",
                "content-type: application/json",
            ])
            .args(["-H", "Expect:", "--data-binary"])
            .arg(format!("@{}", body_file.display()))
            .arg(&url);
        command
    };
    check(&mut curl(), "curl");
    check(&mut version(), "pocketpilot --version");

    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..options.runs {
        times[0].push(timed(&mut run()));
        times[1].push(timed(&mut curl()));
        times[2].push(timed(&mut version()));
    }
    let rss = [median_rss(run), median_rss(curl), median_rss(version)];
    println!();
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>11}",
        "one-shot", "median", "min", "max", "peak RSS"
    );
    for (name, (samples, rss)) in [
        "pocketpilot run",
        "curl (same request)",
        "pocketpilot --version",
    ]
    .iter()
    .zip(times.iter_mut().zip(rss))
    {
        let (median, min, max) = stats(samples);
        println!(
            "{name:<28} {:>9} {:>9} {:>9} {:>11}",
            ms(median),
            ms(min),
            ms(max),
            rss.map_or_else(|| "n/a".to_owned(), mib)
        );
    }
    let run_median = stats(&mut times[0]).0;
    let curl_median = stats(&mut times[1]).0;
    println!(
        "run / curl = {:.2}x (goal <= 0.85x on disk, 0.70x on tmpfs); run peak RSS goal <= 10 MiB",
        run_median.as_secs_f64() / curl_median.as_secs_f64()
    );

    let mut ready = Vec::new();
    let mut idle = Vec::new();
    for _ in 0..options.runs.min(10) {
        let mut command = Command::new(bin);
        base(&mut command);
        command.arg("serve").arg("--workspace").arg(&workspace);
        let (time, rss) = serve_once(&mut command);
        ready.push(time);
        idle.push(rss);
    }
    idle.sort_unstable();
    let (median, min, max) = stats(&mut ready);
    println!();
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>11}",
        "serve", "median", "min", "max", "idle RSS"
    );
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>11}",
        "spawn to /api/health 200",
        ms(median),
        ms(min),
        ms(max),
        mib(idle[idle.len() / 2])
    );
    println!("serve goals: ready <= 20 ms, idle RSS <= 10 MiB");
    println!("load average after: {}", load_average());
}

/// The first three fields of `/proc/loadavg`: how busy the machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "n/a".to_owned(),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// The size of the `.text` section of the ELF64 (little-endian) file at `path`.
fn text_bytes(path: &Path) -> Option<u64> {
    let elf = std::fs::read(path).ok()?;
    let word = |at: usize, len: usize| -> Option<u64> {
        let bytes = elf.get(at..at + len)?;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0u64, |acc, byte| acc << 8 | u64::from(*byte)),
        )
    };
    if elf.get(..5)? != b"\x7fELF\x02" || elf.get(5)? != &1 {
        return None;
    }
    let sections = usize::try_from(word(0x28, 8)?).ok()?;
    let entry = usize::try_from(word(0x3a, 2)?).ok()?;
    let count = usize::try_from(word(0x3c, 2)?).ok()?;
    let names_index = usize::try_from(word(0x3e, 2)?).ok()?;
    let header = |index: usize| sections + index * entry;
    let names = usize::try_from(word(header(names_index) + 0x18, 8)?).ok()?;
    (0..count).find_map(|index| {
        let name_at = names + usize::try_from(word(header(index), 4)?).ok()?;
        let name = elf.get(name_at..name_at + 6)?;
        (name == b".text\0").then(|| word(header(index) + 0x20, 8))?
    })
}

/// Runs `command` once and fails loudly unless it succeeds.
fn check(command: &mut Command, name: &str) {
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.status.success(),
        "{name} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Wall time of one run, output discarded.
fn timed(command: &mut Command) -> Duration {
    let start = Instant::now();
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let elapsed = start.elapsed();
    assert!(status.success(), "{command:?}: {status}");
    elapsed
}

/// The median of [`RSS_SAMPLES`] peak RSS figures (KiB).
fn median_rss(command: impl Fn() -> Command) -> Option<u64> {
    let mut samples = (0..RSS_SAMPLES)
        .map(|_| peak_rss(&mut command()))
        .collect::<Option<Vec<_>>>()?;
    samples.sort_unstable();
    Some(samples[samples.len() / 2])
}

/// Peak RSS in KiB, through GNU time; `None` without it.
fn peak_rss(command: &mut Command) -> Option<u64> {
    if !Path::new(GNU_TIME).exists() {
        return None;
    }
    let out = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new(GNU_TIME)
        .args(["-f", "%M", "-o"])
        .arg(out.path())
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{command:?} under time: {status}");
    std::fs::read_to_string(out.path())
        .ok()?
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

/// Starts `serve` (on port 0), waits for the first `/api/health` answer, and returns that
/// time and the server's RSS (KiB) once idle.
fn serve_once(command: &mut Command) -> (Duration, u64) {
    let start = Instant::now();
    let mut child = command
        .args(["--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let port: u16 = loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "serve exited early"
        );
        if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
            break rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap();
        }
    };
    // The port is bound before the line is printed: this request waits in the backlog
    // until the server accepts, so the time is spawn to first answer.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let ready = start.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "health: {answer}");
    std::thread::sleep(Duration::from_millis(300));
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    // SIGTERM: the server stops cleanly, as it would for the operator.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    (ready, rss)
}

fn stats(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A loopback OpenAI-compatible server that answers every POST at once (streamed when
/// asked), one thread per connection, keeping the last request body for curl.
struct MockServer {
    port: u16,
    last_body: Arc<Mutex<Vec<u8>>>,
}

impl MockServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let last_body = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&last_body);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keep = Arc::clone(&keep);
                std::thread::spawn(move || serve_connection(stream, &keep));
            }
        });
        Self { port, last_body }
    }

    fn last_body(&self) -> Vec<u8> {
        self.last_body.lock().unwrap().clone()
    }
}

/// Answers requests on one connection until the client closes it.
fn serve_connection(stream: TcpStream, keep: &Mutex<Vec<u8>>) {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("expect") && !value.trim().is_empty() {
                let _ = writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let streamed = body
            .windows(b"\"stream\":true".len())
            .any(|window| window == b"\"stream\":true");
        *keep.lock().unwrap() = body;
        let (content_type, answer) = if streamed {
            ("text/event-stream", STREAMED)
        } else {
            ("application/json", WHOLE)
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
