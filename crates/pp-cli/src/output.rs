//! Writing to stdout without panicking: `println!` panics when the reader has gone away
//! (`pocketpilot tasks list | head`); [`outln!`] returns the error instead, and `main`
//! turns a broken pipe into a quiet exit 0 (the one place that handles it).
//!
//! A command whose exit code says something about work in progress (`run`: 3 while a
//! task waits for approval) calls [`keep_exit_code_when_stdout_closes`] first: then a
//! closed stdout is not an error at all; writing to it stops and the command goes on to
//! its own exit code (`set -o pipefail; pocketpilot run … | head` exits 3).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by [`keep_exit_code_when_stdout_closes`].
static KEEP_GOING: AtomicBool = AtomicBool::new(false);
/// The reader of stdout went away (only noted while [`KEEP_GOING`] holds).
static CLOSED: AtomicBool = AtomicBool::new(false);

/// From now on a broken pipe on stdout is not an error: writes stop, the command goes on.
pub(crate) fn keep_exit_code_when_stdout_closes() {
    KEEP_GOING.store(true, Ordering::Relaxed);
}

/// Writes one line to stdout (see [`outln!`]).
pub(crate) fn write_line(line: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let result = out.write_fmt(line).and_then(|()| out.write_all(b"\n"));
    match result {
        Err(error)
            if error.kind() == std::io::ErrorKind::BrokenPipe
                && KEEP_GOING.load(Ordering::Relaxed) =>
        {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// Like `println!`, but returns `std::io::Result<()>` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}

pub(crate) use outln;

/// Like `eprintln!`, but a closed stderr is ignored instead of panicking: messages for
/// the person have nowhere else to go, and the command's result must not depend on them.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// Like `eprint!` (for a question on the same line), ignoring a closed stderr.
macro_rules! errprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub(crate) use {errln, errprint};
