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
