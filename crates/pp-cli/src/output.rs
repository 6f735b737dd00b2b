//! Writing to stdout without panicking: `println!` panics when the reader has gone away
//! (`pocketpilot tasks list | head`); [`outln!`] returns the error instead, and `main`
//! turns a broken pipe into a quiet exit 0 (the one place that handles it).

/// Like `println!`, but returns `std::io::Result<()>` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
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
