//! Running a test as an unprivileged user, for behaviour root never sees (permission
//! denied on a mode-000 file).

use std::process::Command;

/// Whether this process runs as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// As root, runs the test `name` of the current test binary again as `nobody` (through
/// `setpriv`) and panics unless it passes, returning `true`: the caller returns at once.
/// As anyone else, returns `false`: the caller runs the test body itself.
///
/// `name` is the test's full path inside its binary, e.g. `write_file::locked_files`.
pub fn rerun_as_nobody(name: &str) -> bool {
    if !is_root() {
        return false;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(binary)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("TMPDIR", std::env::temp_dir())
        .output()
        .expect("setpriv (util-linux) runs the test as nobody");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "`{name}` failed as nobody:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    true
}
