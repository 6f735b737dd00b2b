//! The parser child's side: `pocketpilot __parse` reads one request and the file's bytes
//! from stdin, limits itself, runs the job and writes the answer to stdout.
//!
//! The child limits **itself** (no `pre_exec` in the parent: `unsafe` is forbidden):
//! right after reading the request line it sets RLIMIT_CPU (a SIGXCPU at the limit, a
//! SIGKILL one second later), RLIMIT_AS (allocations past it fail, and Rust aborts) and
//! RLIMIT_CORE 0 (a crash leaves no core file), before it reads the document's bytes.
//! It touches nothing but stdin, stdout and stderr: no data directory, no config.
//!
//! For a SQL job (`Job::Analyze` with op `sql`) it writes one `\n` on stdout once the
//! table is loaded and the query starts, so the parent can hold the query to its own
//! time limit (the JSON answer that follows ignores leading whitespace).

use std::io::{BufRead, Read, Write};

use crate::DocsError;
use crate::runner::{Answer, ParserLimits, Request};

/// The longest request line read (the job is a few hundred bytes).
const MAX_REQUEST_BYTES: u64 = 64 << 10;

/// The child's main: returns the process exit code (0 whenever an answer was written,
/// even an error; 2 when stdout cannot be written).
pub fn main() -> u8 {
    let answer = match serve(&mut std::io::stdin().lock()) {
        Ok(output) => Answer::Ok(output),
        Err(error) => Answer::Error(error),
    };
    let mut stdout = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut stdout, &answer)
        .map_err(std::io::Error::from)
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => 0,
        Err(_) => 2,
    }
}

/// Reads the request, limits this process, reads the bytes and runs the job.
fn serve(input: &mut impl BufRead) -> Result<crate::JobOutput, DocsError> {
    let mut line = Vec::new();
    input
        .take(MAX_REQUEST_BYTES)
        .read_until(b'\n', &mut line)
        .map_err(|error| DocsError::Process(format!("cannot read the request: {error}")))?;
    let request: Request = serde_json::from_slice(&line)
        .map_err(|error| DocsError::Process(format!("the request is not valid: {error}")))?;
    limit_self(&request.limits)?;
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|error| DocsError::Process(format!("cannot read the document: {error}")))?;
    // When a SQL query starts, one newline on stdout tells the parent (which starts the
    // query's own deadline then); JSON ignores it before the answer.
    let mut query_starts = || {
        let mut stdout = std::io::stdout().lock();
        // Should stdout be gone, the answer cannot be written either: main says so.
        let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
    };
    // A panic in a parser is one failed document, said plainly; the process ends anyway.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::job::run_job_reporting(&request.job, &bytes, &mut query_starts)
    }))
    .unwrap_or_else(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(DocsError::Crashed(format!(
            "the parser failed on this file ({reason})"
        )))
    })
}

/// Puts `limits` on this process: CPU seconds, address space, no core dumps.
fn limit_self(limits: &ParserLimits) -> Result<(), DocsError> {
    use rustix::process::{Resource, getrlimit, setrlimit};

    let set = |resource: Resource, soft: u64, hard: u64| {
        // Never ask for more than the inherited hard limit (that would be refused).
        let inherited = getrlimit(resource).maximum;
        let hard = inherited.map_or(hard, |inherited| hard.min(inherited));
        let soft = soft.min(hard);
        setrlimit(
            resource,
            rustix::process::Rlimit {
                current: Some(soft),
                maximum: Some(hard),
            },
        )
        .map_err(|error| {
            DocsError::Process(format!("cannot limit the parser ({resource:?}): {error}"))
        })
    };
    set(Resource::Core, 0, 0)?;
    let cpu = limits.cpu_secs.max(1);
    set(Resource::Cpu, cpu, cpu.saturating_add(1))?;
    set(Resource::As, limits.memory_bytes, limits.memory_bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;
    use crate::extract::ExtractOptions;
    use crate::job::Job;

    fn request_line(job: &Job) -> Vec<u8> {
        let mut line = serde_json::to_vec(&Request {
            // Generous: these limits apply to the test process itself.
            limits: ParserLimits {
                cpu_secs: 100_000,
                memory_bytes: u64::MAX,
                ..ParserLimits::default()
            },
            job: job.clone(),
        })
        .unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn a_request_then_bytes_runs_the_job() {
        let job = Job::Extract {
            format: Format::Txt,
            options: ExtractOptions {
                pages: None,
                max_chars: 100,
            },
        };
        let mut input = request_line(&job);
        input.extend_from_slice("hello\nworld".as_bytes());
        let output = serve(&mut input.as_slice()).unwrap();
        let crate::JobOutput::Document(document) = output else {
            panic!("not a document: {output:?}");
        };
        assert_eq!(document.text, "hello\nworld");
    }

    #[test]
    fn a_broken_request_is_a_process_error() {
        let error = serve(&mut b"{not json}\nbytes".as_slice()).unwrap_err();
        assert!(matches!(error, DocsError::Process(_)), "{error:?}");
    }
}
