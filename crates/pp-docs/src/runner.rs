//! The parent's side: starts the parser child under limits and reads its answer.

use std::path::PathBuf;
use std::time::Duration;

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
    pub fn run(&self, job: &Job, _bytes: &[u8]) -> Result<JobOutput, DocsError> {
        let _ = (&self.program, &self.args, job);
        Err(DocsError::Process("not built yet".to_owned()))
    }
}
