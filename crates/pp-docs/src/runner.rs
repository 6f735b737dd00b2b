//! The parent's side: starts the parser child under limits and reads its answer.
//!
//! The protocol (the child's side is [`crate::child`]): the parent writes one JSON line
//! `{"limits": ParserLimits, "job": Job}`, a `\n`, then the file's raw bytes and closes
//! stdin; the child limits itself (CPU time, address space, no core dumps), runs the job
//! and writes one JSON answer, `{"ok": JobOutput}` or `{"error": DocsError}`, to stdout.
//! The parent reads at most [`ParserLimits::output_bytes`] of it and kills the child at
//! the wall-clock deadline, at the caller's deadline, when the caller's stop check says
//! so (a task's interrupt), and, for a SQL query, soon after the query's own time limit
//! counted from the moment the child says the query starts (one `\n` on stdout): the
//! only way to stop one long SQLite function call, which neither the progress handler
//! nor `sqlite3_interrupt` reach. Whatever happens (an error, a timeout, a panic in the
//! caller's thread) the child is killed and reaped before [`Parser::run`] returns: a
//! guard does it on drop.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{DocsError, Job, JobOutput};

/// What one parse may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParserLimits {
    /// CPU seconds (RLIMIT_CPU in the child).
    pub cpu_secs: u64,
    /// Address space in bytes (RLIMIT_AS in the child).
    pub memory_bytes: u64,
    /// The most bytes of answer the parent reads.
    pub output_bytes: u64,
    /// Wall-clock time before the child is killed.
    pub wall: Duration,
}

impl Default for ParserLimits {
    fn default() -> Self {
        Self {
            cpu_secs: 20,
            memory_bytes: 2 << 30,
            output_bytes: 64 << 20,
            wall: Duration::from_secs(30),
        }
    }
}

/// The first line the parent writes to the child's stdin.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    /// The limits the child puts on itself.
    pub(crate) limits: ParserLimits,
    /// The work.
    pub(crate) job: Job,
}

/// The child's one answer on stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// The job's output.
    Ok(JobOutput),
    /// Why the job failed.
    Error(DocsError),
}

/// How much of the child's stderr is kept for error messages.
const STDERR_KEPT: usize = 4096;

/// How often the parent looks whether the child has ended (and at the stop check).
const POLL: Duration = Duration::from_millis(5);

/// How long after a SQL query's time limit the child is killed: the progress handler
/// stops most queries at the limit with a clear error; this is for one function call
/// that runs on (`instr` over megabytes), which nothing inside SQLite interrupts.
pub const QUERY_GRACE: Duration = Duration::from_secs(1);

/// The most bytes of answer read for a `Job::Analyze` beyond four per character of its
/// rows (the table's description, the columns' names).
const ANALYSIS_SLACK_BYTES: u64 = 1 << 20;

/// How to start the parser child: a program and its arguments (`pocketpilot __parse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parser {
    program: PathBuf,
    args: Vec<String>,
    limits: ParserLimits,
}

impl Parser {
    /// A parser started as `program args…` with the default limits.
    pub fn new(program: PathBuf, args: Vec<String>) -> Self {
        Self {
            program,
            args,
            limits: ParserLimits::default(),
        }
    }

    /// The same parser with other limits.
    pub fn with_limits(mut self, limits: ParserLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits.
    pub fn limits(&self) -> ParserLimits {
        self.limits
    }

    /// Runs `job` on `bytes` in a child process. Blocking: call it off the async threads.
    pub fn run(&self, job: &Job, bytes: &[u8]) -> Result<JobOutput, DocsError> {
        self.run_with_deadline(job, bytes, None)
    }

    /// [`Parser::run`], stopped at `deadline` too (a task's end) when that comes before
    /// the wall-clock limit.
    pub fn run_with_deadline(
        &self,
        job: &Job,
        bytes: &[u8],
        deadline: Option<Instant>,
    ) -> Result<JobOutput, DocsError> {
        self.run_until(job, bytes, deadline, &|| false)
    }

    /// [`Parser::run_with_deadline`], stopped too as soon as `stop` says so (it is asked
    /// every few milliseconds; a task's interrupt): the child is killed and the answer is
    /// [`DocsError::Interrupted`].
    pub fn run_until(
        &self,
        job: &Job,
        bytes: &[u8],
        deadline: Option<Instant>,
        stop: &dyn Fn() -> bool,
    ) -> Result<JobOutput, DocsError> {
        let started = Instant::now();
        let own_deadline = started + self.limits.wall;
        let (deadline, by_task) = match deadline {
            Some(task) if task < own_deadline => (task, true),
            _ => (own_deadline, false),
        };
        let request = Request {
            limits: self.limits,
            job: job.clone(),
        };
        let mut header = serde_json::to_vec(&request)
            .map_err(|error| DocsError::Process(format!("cannot encode the job: {error}")))?;
        header.push(b'\n');

        let mut command = Command::new(&self.program);
        command.args(&self.args);
        // Its own process group: the kill reaches anything it started too, and a Ctrl+C
        // at the terminal goes to the parent, which then kills the child.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child =
            pp_types::open_files::spawn_with_original(|| command.spawn()).map_err(|error| {
                DocsError::Process(format!(
                    "cannot start the parser `{}`: {error}",
                    self.program.display()
                ))
            })?;
        let mut guard = ChildGuard {
            child,
            reaped: false,
        };
        let stdin = guard.child.stdin.take();
        let stdout = guard.child.stdout.take();
        let stderr = guard.child.stderr.take();
        let output_cap = match job {
            // The child cuts the rows to this many characters of JSON: four bytes each
            // at most, plus the table's description.
            Job::Analyze { limits, .. } => self.limits.output_bytes.min(
                u64::try_from(limits.max_answer_chars)
                    .unwrap_or(u64::MAX)
                    .saturating_mul(4)
                    .saturating_add(ANALYSIS_SLACK_BYTES),
            ),
            _ => self.limits.output_bytes,
        };
        let over_output = AtomicBool::new(false);
        let query_timeout = job.query_timeout();
        // When the child first wrote to stdout (for SQL: when the query started).
        let first_output = OnceLock::new();

        std::thread::scope(|scope| {
            // The guard lives inside the scope: on any unwind it kills the child first,
            // which closes the pipes, so the threads below end and the scope can join.
            let mut guard = guard;
            if let Some(mut stdin) = stdin {
                let header = &header;
                scope.spawn(move || {
                    // A child that stops reading (it died, or was killed) makes these
                    // writes fail with a broken pipe: nothing to do about it here.
                    let _ = stdin
                        .write_all(header)
                        .and_then(|()| stdin.write_all(bytes));
                });
            }
            let (over, first) = (&over_output, &first_output);
            let reader = stdout.map(|stdout| {
                scope.spawn(move || {
                    let mut answer = Vec::new();
                    let read = read_noting_first(
                        &mut stdout.take(output_cap.saturating_add(1)),
                        &mut answer,
                        first,
                    );
                    if u64::try_from(answer.len()).unwrap_or(u64::MAX) > output_cap {
                        over.store(true, Ordering::SeqCst);
                    }
                    read.map(|()| answer)
                })
            });
            let errors = stderr.map(|stderr| {
                scope.spawn(move || {
                    let mut kept = Vec::new();
                    let mut stderr = stderr;
                    let _ = (&mut stderr)
                        .take(STDERR_KEPT as u64)
                        .read_to_end(&mut kept);
                    // Drain the rest so the child never blocks on a full pipe.
                    let _ = std::io::copy(&mut stderr, &mut std::io::sink());
                    kept
                })
            });

            let status = loop {
                if over_output.load(Ordering::SeqCst) {
                    guard.kill();
                    return Err(DocsError::Limit(format!(
                        "output: the answer is larger than {output_cap} bytes"
                    )));
                }
                match guard.child.try_wait() {
                    Ok(Some(status)) => {
                        guard.reaped = true;
                        break status;
                    }
                    Ok(None) => {}
                    Err(error) => {
                        guard.kill();
                        return Err(DocsError::Process(format!(
                            "cannot wait for the parser: {error}"
                        )));
                    }
                }
                if stop() {
                    guard.kill();
                    return Err(DocsError::Interrupted);
                }
                let now = Instant::now();
                let query_deadline = query_timeout
                    .zip(first_output.get())
                    .map(|(timeout, started)| *started + timeout + QUERY_GRACE);
                if let Some(timeout) = query_timeout
                    && query_deadline.is_some_and(|query_deadline| now >= query_deadline)
                {
                    guard.kill();
                    return Err(DocsError::Sql(crate::table::sql::time_limit_message(
                        timeout,
                    )));
                }
                if now >= deadline {
                    guard.kill();
                    return Err(DocsError::Limit(if by_task {
                        format!(
                            "time: the task's deadline came after {:.1}s of parsing",
                            started.elapsed().as_secs_f64()
                        )
                    } else {
                        format!(
                            "time: parsing took longer than {}s",
                            self.limits.wall.as_secs_f64()
                        )
                    }));
                }
                let next = query_deadline.map_or(deadline, |query| query.min(deadline));
                std::thread::sleep(POLL.min(next.saturating_duration_since(now)));
            };
            let stderr_text = errors
                .and_then(|errors| errors.join().ok())
                .map(|kept| String::from_utf8_lossy(&kept).trim().to_owned())
                .unwrap_or_default();
            let answer = reader
                .map(|reader| reader.join())
                .transpose()
                .ok()
                .flatten()
                .transpose()
                .map_err(|error| DocsError::Process(format!("cannot read the answer: {error}")))?
                .unwrap_or_default();
            if over_output.load(Ordering::SeqCst) {
                return Err(DocsError::Limit(format!(
                    "output: the answer is larger than {output_cap} bytes"
                )));
            }
            interpret(status, &answer, &stderr_text, &self.limits, started)
        })
    }
}

/// Reads `input` to its end into `answer`, noting in `first` when the first bytes came.
fn read_noting_first(
    input: &mut impl Read,
    answer: &mut Vec<u8>,
    first: &OnceLock<Instant>,
) -> std::io::Result<()> {
    let mut chunk = vec![0_u8; 64 << 10];
    loop {
        match input.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(read) => {
                first.get_or_init(Instant::now);
                answer.extend_from_slice(&chunk[..read]);
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// What the child's end and answer mean.
fn interpret(
    status: ExitStatus,
    answer: &[u8],
    stderr: &str,
    limits: &ParserLimits,
    started: Instant,
) -> Result<JobOutput, DocsError> {
    if status.success() {
        return match serde_json::from_slice::<Answer>(answer) {
            Ok(Answer::Ok(output)) => Ok(output),
            Ok(Answer::Error(error)) => Err(error),
            Err(error) => Err(DocsError::Process(format!(
                "the parser's answer is not valid ({error}); {}",
                describe_stderr(stderr)
            ))),
        };
    }
    if let Some(signal) = signal_of(status) {
        return Err(died_of(signal, stderr, limits, started));
    }
    Err(DocsError::Process(format!(
        "the parser exited with {status}; {}",
        describe_stderr(stderr)
    )))
}

/// The error for a child that died of `signal` (it was not killed by the parent).
fn died_of(signal: i32, stderr: &str, limits: &ParserLimits, started: Instant) -> DocsError {
    const SIGABRT: i32 = 6;
    const SIGKILL: i32 = 9;
    const SIGSEGV: i32 = 11;
    const SIGXCPU: i32 = 24;
    let memory_mib = limits.memory_bytes >> 20;
    if signal == SIGXCPU || (signal == SIGKILL && started.elapsed().as_secs() >= limits.cpu_secs) {
        return DocsError::Limit(format!(
            "cpu: parsing used more than {}s of CPU time",
            limits.cpu_secs
        ));
    }
    if stderr.contains("overflowed its stack") || signal == SIGSEGV {
        return DocsError::Crashed(
            "stack overflow: the document nests too deeply to be read".to_owned(),
        );
    }
    if stderr.contains("memory allocation") {
        return DocsError::Limit(format!(
            "memory: parsing needed more than the {memory_mib} MiB allowed"
        ));
    }
    if signal == SIGABRT {
        return DocsError::Crashed(format!(
            "the parser aborted (signal {signal}); {}",
            describe_stderr(stderr)
        ));
    }
    DocsError::Crashed(format!(
        "the parser died of signal {signal}; {}",
        describe_stderr(stderr)
    ))
}

/// The signal that ended the child, if one did.
fn signal_of(status: ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// A short account of what the child printed on stderr.
fn describe_stderr(stderr: &str) -> String {
    let line = stderr
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("note:"));
    match line {
        Some(line) => {
            let shown: String = line.chars().take(300).collect();
            format!("it said: {shown}")
        }
        None => "it printed nothing".to_owned(),
    }
}

/// Kills and reaps the child (and its process group) when dropped, unless it has been
/// reaped already.
struct ChildGuard {
    child: Child,
    /// Set once `try_wait` has reaped the child: its pid may be reused from then on, so
    /// nothing is sent to it any more.
    reaped: bool,
}

impl ChildGuard {
    /// Kills the child's process group and the child, and waits for the child.
    fn kill(&mut self) {
        if self.reaped {
            return;
        }
        // Until it is reaped the child's pid (its group's id) cannot be reused.
        #[cfg(unix)]
        {
            let group = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        // An error here means the child has already ended; `wait` reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
