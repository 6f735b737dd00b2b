//! The parser child's side: `pocketpilot __parse` reads one request and the file's bytes
//! from stdin, limits itself, runs the job and writes the answer to stdout.

/// The child's main: returns the process exit code.
pub fn main() -> u8 {
    // Built with the runner (issue 10, core).
    2
}
