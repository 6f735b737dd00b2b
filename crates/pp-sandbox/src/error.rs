//! The sandbox's errors.

/// Why a command could not be started confined, or could not be watched.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The child could not read its specification.
    #[error("the sandbox specification is not valid: {0}")]
    Spec(String),
    /// A resource limit could not be set.
    #[error("cannot set the {resource} limit: {source}")]
    Limit {
        /// The limit (`cpu`, `memory`, …).
        resource: &'static str,
        /// The system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// The Landlock ruleset could not be built or applied.
    #[error("cannot confine the command with Landlock: {0}")]
    Landlock(String),
    /// The namespaces, mounts or the pids cgroup that keep the command's processes to
    /// the call (and its writes to the workspace) could not be set up.
    #[error("cannot isolate the command: {0}")]
    Isolation(String),
    /// The capabilities or the user id could not be dropped.
    #[error("cannot drop privileges: {0}")]
    Privileges(String),
    /// The supervisor could not start or watch the command.
    #[error("cannot supervise the command: {0}")]
    Supervise(String),
    /// The seccomp filter could not be built or installed.
    #[error("cannot install the seccomp filter: {0}")]
    Seccomp(String),
    /// The command could not be executed (not found, not executable, outside what the
    /// sandbox may execute).
    #[error("cannot run `{program}`: {source}")]
    Exec {
        /// The program as given.
        program: String,
        /// The system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// The sandbox child could not be started or watched.
    #[error("cannot start the sandbox `{program}`: {source}")]
    Start {
        /// The sandbox program (`pocketpilot`).
        program: String,
        /// The system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the command failed.
    #[error("cannot wait for the command: {0}")]
    Wait(#[source] std::io::Error),
    /// The sandbox child reported a failure before the command ran.
    #[error("the command did not start: {0}")]
    Setup(String),
}

/// Results of this crate.
pub(crate) type Result<T> = std::result::Result<T, SandboxError>;
