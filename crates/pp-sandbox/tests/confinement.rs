//! Proofs that a confined command cannot leave its workspace: it cannot read a marker
//! file outside it, write outside it (the marker stays unchanged), read the data
//! directory's token, read `/etc/shadow`, or open a TCP connection to a loopback server
//! this test runs; each is checked against an unconfined control run of the same
//! command, which succeeds (so a failure really comes from the confinement). Also: the
//! environment is cleared, limits and the wall clock kill the whole group, output is
//! capped.
//!
//! This binary is its own sandbox child: started as `confinement __sandbox SPEC` it
//! runs [`pp_sandbox::child::main`]. Where the kernel has no Landlock the confinement
//! checks are skipped with a message, except under CI (`CI` set), where that fails.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a hand-rolled test harness (no #[test]): it reports on stdout, makes its own \
              fixtures with std::fs and fails a check by panicking"
)]

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pp_sandbox::{End, Finished, ResourceLimits, RunOptions, Sandbox, SandboxError, Spec};

#[path = "confinement/escapes.rs"]
mod escapes;
#[path = "confinement/isolation.rs"]
mod isolation;
#[path = "confinement/server.rs"]
mod server;

const MARKER: &str = "marker: outside the workspace\n";
const TOKEN: &str = "pp_token_do_not_leak\n";

struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    token: PathBuf,
    /// Whether the kernel has Landlock: the checks that run everywhere confine only then.
    landlock: bool,
    /// Under root: whether the workspace stays root-owned (commands keep uid 0), which
    /// needs the pids cgroup and the namespaces; where they are missing it is given to
    /// `nobody` and the root-owned checks are skipped.
    root_owned: bool,
}

impl Fixture {
    fn new(landlock: bool) -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let workspace = base.join("workspace");
        std::fs::create_dir_all(workspace.join("sub")).unwrap();
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("marker.txt"), MARKER).unwrap();
        let data = base.join("data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("token"), TOKEN).unwrap();
        Self {
            _root: root,
            workspace,
            outside,
            token: data.join("token"),
            landlock,
            root_owned: isolation::is_root(),
        }
    }

    fn marker(&self) -> PathBuf {
        self.outside.join("marker.txt")
    }

    fn spec(&self, argv: &[&str], confine: bool) -> Spec {
        let mut spec = Spec::new(
            argv.iter().map(|arg| (*arg).to_owned()).collect(),
            self.workspace.clone(),
            self.workspace.clone(),
            ResourceLimits::default(),
        );
        spec.confine = confine;
        spec
    }
}

fn sandbox() -> Sandbox {
    Sandbox::new(
        std::env::current_exe().unwrap(),
        vec!["__sandbox".to_owned()],
    )
}

fn options() -> RunOptions {
    RunOptions {
        stdin: None,
        timeout: Duration::from_secs(30),
        output_bytes: 1 << 20,
    }
}

fn run(spec: &Spec) -> Finished {
    sandbox().run(spec, &options(), &|| false).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(finished: &Finished) -> bool {
    finished.end == End::Exited(0)
}

/// Runs `argv` unconfined (must succeed) and confined (must fail); returns the confined
/// run.
fn denied_but_allowed_unconfined(fixture: &Fixture, argv: &[&str]) -> Finished {
    let control = run(&fixture.spec(argv, false));
    assert!(
        succeeded(&control),
        "the unconfined control of {argv:?} failed, so the check proves nothing: {control:?}"
    );
    let confined = run(&fixture.spec(argv, true));
    assert!(
        !succeeded(&confined),
        "{argv:?} succeeded confined: {confined:?}"
    );
    confined
}

fn reading_a_marker_outside_fails(fixture: &Fixture) {
    let marker = fixture.marker();
    let confined = denied_but_allowed_unconfined(fixture, &["cat", marker.to_str().unwrap()]);
    assert!(
        !text(&confined.stdout.bytes).contains("marker"),
        "{confined:?}"
    );
    assert!(
        text(&confined.stderr.bytes).contains("Permission denied"),
        "{confined:?}"
    );
}

fn writing_outside_fails_and_the_marker_is_unchanged(fixture: &Fixture) {
    let control = fixture.outside.join("control.txt");
    let script = format!("echo changed > '{}'", control.display());
    let finished = run(&fixture.spec(&["sh", "-c", &script], false));
    assert!(
        succeeded(&finished),
        "unconfined control failed: {finished:?}"
    );
    assert_eq!(std::fs::read_to_string(&control).unwrap(), "changed\n");

    let marker = fixture.marker();
    for script in [
        format!("echo changed > '{}'", marker.display()),
        format!("echo changed >> '{}'", marker.display()),
        format!("rm -f '{}'", marker.display()),
        format!(
            "mv '{}' '{}'",
            marker.display(),
            fixture.workspace.join("stolen").display()
        ),
        format!("touch '{}'", fixture.outside.join("new.txt").display()),
    ] {
        let confined = run(&fixture.spec(&["sh", "-c", &script], true));
        assert!(
            !succeeded(&confined),
            "{script} succeeded confined: {confined:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap(),
            MARKER,
            "after {script}"
        );
    }
    assert!(!fixture.outside.join("new.txt").exists());
    assert!(!fixture.workspace.join("stolen").exists());
}

fn reading_the_data_directorys_token_fails(fixture: &Fixture) {
    let token = fixture.token.to_str().unwrap().to_owned();
    let confined = denied_but_allowed_unconfined(fixture, &["cat", &token]);
    assert!(
        !text(&confined.stdout.bytes).contains("pp_token"),
        "{confined:?}"
    );
    // Nor by listing and copying it into the workspace.
    let script = format!("cp '{token}' stolen-token");
    let confined = run(&fixture.spec(&["sh", "-c", &script], true));
    assert!(!succeeded(&confined), "{confined:?}");
    assert!(!fixture.workspace.join("stolen-token").exists());
}

fn reading_etc_shadow_fails(fixture: &Fixture) {
    if !Path::new("/etc/shadow").exists() {
        println!("note: no /etc/shadow on this system; that check is skipped");
        return;
    }
    let control = run(&fixture.spec(&["cat", "/etc/shadow"], false));
    let confined = run(&fixture.spec(&["cat", "/etc/shadow"], true));
    assert!(!succeeded(&confined), "{confined:?}");
    if !succeeded(&control) {
        println!("note: /etc/shadow is not readable here even unconfined (not root)");
    }
    // /etc/passwd, next to it, stays readable: programs need it.
    let passwd = run(&fixture.spec(&["cat", "/etc/passwd"], true));
    assert!(succeeded(&passwd), "{passwd:?}");
}

fn a_tcp_connection_to_a_loopback_server_fails(fixture: &Fixture) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.read_to_end(&mut Vec::new());
        }
    });
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let confined = denied_but_allowed_unconfined(fixture, &["bash", "-c", &script]);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "only the unconfined control may have connected"
    );
    assert!(
        !text(&confined.stdout.bytes).contains("connected"),
        "{confined:?}"
    );
    assert!(
        text(&confined.stderr.bytes).contains("Permission denied"),
        "{confined:?}"
    );
}

fn a_udp_datagram_to_a_loopback_socket_is_not_sent(fixture: &Fixture) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let script = format!("echo from-the-command > /dev/udp/127.0.0.1/{port}");
    let confined = denied_but_allowed_unconfined(fixture, &["bash", "-c", &script]);
    let mut buffer = [0_u8; 64];
    let (read, _) = socket.recv_from(&mut buffer).unwrap();
    assert_eq!(
        &buffer[..read],
        b"from-the-command\n",
        "the control's datagram"
    );
    // Then ours: had the confined command sent one, it would come first.
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"sentinel", ("127.0.0.1", port))
        .unwrap();
    let (read, _) = socket.recv_from(&mut buffer).unwrap();
    assert_eq!(&buffer[..read], b"sentinel", "{confined:?}");
}

fn a_unix_socket_outside_cannot_be_reached(fixture: &Fixture) {
    let path = fixture.outside.join("service.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for _stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let script = format!(
        "IO::Socket::UNIX->new(Peer => '{}') or die \"connect: $!\\n\"; print \"CONNECTED\\n\"",
        path.display()
    );
    let confined =
        denied_but_allowed_unconfined(fixture, &["perl", "-MIO::Socket::UNIX", "-e", &script]);
    assert!(
        !text(&confined.stdout.bytes).contains("CONNECTED"),
        "{confined:?}"
    );
    assert!(
        text(&confined.stderr.bytes).contains("Permission denied"),
        "{confined:?}"
    );
    // The control's connection is the only one (it may still be on its way).
    assert!(accepted.load(Ordering::SeqCst) <= 1);
}

fn the_workspace_is_readable_and_writable(fixture: &Fixture) {
    let mut spec = fixture.spec(
        &[
            "sh",
            "-c",
            "echo hello > sub/out.txt && cat sub/out.txt && ls sub && pwd",
        ],
        true,
    );
    spec.cwd = fixture.workspace.clone();
    let finished = run(&spec);
    assert!(succeeded(&finished), "{finished:?}");
    let out = text(&finished.stdout.bytes);
    assert!(out.starts_with("hello\nout.txt\n"), "{out}");
    assert!(out.contains(fixture.workspace.to_str().unwrap()), "{out}");
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("sub/out.txt")).unwrap(),
        "hello\n"
    );
}

fn the_environment_holds_only_path_home_and_lang(fixture: &Fixture) {
    // This test runs under cargo, with dozens of variables set.
    assert!(std::env::vars_os().count() > 3);
    let finished = run(&fixture.spec(&["env"], fixture.landlock));
    assert!(succeeded(&finished), "{finished:?}");
    let mut names: Vec<String> = text(&finished.stdout.bytes)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    names.sort();
    assert_eq!(names, ["HOME", "LANG", "PATH"]);
    assert!(
        text(&finished.stdout.bytes).contains(&format!("HOME={}", fixture.workspace.display()))
    );
}

fn stdin_is_given_and_output_is_capped(fixture: &Fixture) {
    let options = RunOptions {
        stdin: Some(b"line one\nline two\n".to_vec()),
        timeout: Duration::from_secs(30),
        output_bytes: 1000,
    };
    let spec = fixture.spec(
        &[
            "sh",
            "-c",
            "cat; yes | head -c 100000; yes | head -c 5000 >&2",
        ],
        fixture.landlock,
    );
    let finished = sandbox().run(&spec, &options, &|| false).unwrap();
    assert!(succeeded(&finished), "{finished:?}");
    assert!(
        finished
            .stdout
            .bytes
            .starts_with(b"line one\nline two\ny\n")
    );
    assert_eq!(finished.stdout.bytes.len(), 1000);
    assert_eq!(finished.stdout.total, 100_000 + 18);
    assert!(finished.stdout.truncated());
    assert_eq!(finished.stderr.total, 5000);
    assert!(finished.stderr.truncated());
}

fn the_wall_clock_kills_the_whole_group(fixture: &Fixture) {
    let options = RunOptions {
        stdin: None,
        timeout: Duration::from_secs(1),
        output_bytes: 1000,
    };
    let sleep = unique_sleep(60);
    let script = format!("sleep {sleep} & setsid sleep {sleep} & wait");
    let spec = fixture.spec(&["sh", "-c", &script], fixture.landlock);
    let finished = sandbox().run(&spec, &options, &|| false).unwrap();
    assert_eq!(finished.end, End::TimedOut, "{finished:?}");
    assert_gone_within_a_second(&sleep);
}

fn the_stop_check_kills_the_command(fixture: &Fixture) {
    let sleep = unique_sleep(60);
    let script = format!("sleep {sleep} & setsid sleep {sleep} & wait");
    let spec = fixture.spec(&["sh", "-c", &script], fixture.landlock);
    let calls = AtomicUsize::new(0);
    // Stop at the third look, once the command has started.
    let stop = || calls.fetch_add(1, Ordering::SeqCst) >= 2;
    let finished = sandbox().run(&spec, &options(), &stop).unwrap();
    assert_eq!(finished.end, End::Stopped, "{finished:?}");
    assert_gone_within_a_second(&sleep);
}

fn background_processes_do_not_outlive_the_command(fixture: &Fixture) {
    let sleep = unique_sleep(60);
    let script = format!("sleep {sleep} > /dev/null 2>&1 & echo started");
    let spec = fixture.spec(&["sh", "-c", &script], fixture.landlock);
    let finished = run(&spec);
    assert!(succeeded(&finished), "{finished:?}");
    assert_gone_within_a_second(&sleep);
}

fn the_file_size_limit_holds(fixture: &Fixture) {
    let mut spec = fixture.spec(&["sh", "-c", "head -c 3000000 /dev/zero > big.bin"], true);
    spec.limits.file_size_bytes = 1 << 20;
    let finished = run(&spec);
    assert!(!succeeded(&finished), "{finished:?}");
    let size = std::fs::metadata(fixture.workspace.join("big.bin"))
        .unwrap()
        .len();
    assert!(size <= 1 << 20, "{size}");
}

fn a_missing_program_is_exit_127(fixture: &Fixture) {
    let finished = run(&fixture.spec(&["no-such-program-here"], true));
    assert_eq!(finished.end, End::Exited(127), "{finished:?}");
    assert!(text(&finished.stderr.bytes).contains("cannot run `no-such-program-here`"));
}

fn a_program_outside_the_allowed_folders_cannot_run(fixture: &Fixture) {
    // A copy of `true` outside the workspace and the system folders.
    let copy = fixture.outside.join("true");
    std::fs::copy(which("true"), &copy).unwrap();
    let control = run(&fixture.spec(&[copy.to_str().unwrap()], false));
    assert!(succeeded(&control), "{control:?}");
    let confined = run(&fixture.spec(&[copy.to_str().unwrap()], true));
    assert_eq!(confined.end, End::Exited(126), "{confined:?}");
}

fn a_confinement_that_cannot_be_set_up_refuses_to_run(fixture: &Fixture) {
    let mut spec = fixture.spec(&["true"], true);
    spec.workspace = fixture.workspace.join("does-not-exist");
    match sandbox().run(&spec, &options(), &|| false) {
        Err(SandboxError::Setup(reason)) => assert!(reason.contains("workspace"), "{reason}"),
        other => panic!("not refused: {other:?}"),
    }
}

fn which(program: &str) -> PathBuf {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.exists())
        .unwrap()
}

/// A `sleep` argument of about `secs` seconds no other process has: the command's
/// processes are found by it (their pids inside a PID namespace mean nothing here).
fn unique_sleep(secs: u32) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("{secs}.{:04}{n:04}", std::process::id() % 10_000)
}

/// The live processes (not zombies) whose command line holds `needle`.
fn alive_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(needle) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, after)| after.chars().next());
        if !matches!(state, None | Some('Z' | 'X')) {
            found.push(format!("{}: {cmdline}", path.display()));
        }
    }
    found
}

/// No process whose command line holds `needle` is alive 1 s after the call returned
/// (the contract: everything a command started ends with its call).
fn assert_gone_within_a_second(needle: &str) {
    let started = Instant::now();
    loop {
        let alive = alive_with(needle);
        if alive.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "outlived the call: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A named check.
type Check = (&'static str, fn(&Fixture));

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__sandbox") {
        return ExitCode::from(pp_sandbox::child::main(
            args.get(2).map_or("", String::as_str),
        ));
    }
    let support = pp_sandbox::probe();
    println!("kernel: {}", support.describe());
    let usable = support.usable();
    let mut fixture = Fixture::new(usable);
    let containment = sandbox().containment();
    println!("containment: {}", containment.describe());
    if let Some(why) = containment.refuses(&fixture.workspace) {
        println!(
            "note: a root-owned workspace is refused here ({why}); the fixture's workspace \
             goes to nobody and the root-owned checks are skipped"
        );
        isolation::give_to_nobody(&fixture.workspace);
        fixture.root_owned = false;
    }
    let always: [Check; 5] = [
        (
            "the_environment_holds_only_path_home_and_lang",
            the_environment_holds_only_path_home_and_lang,
        ),
        (
            "stdin_is_given_and_output_is_capped",
            stdin_is_given_and_output_is_capped,
        ),
        (
            "the_wall_clock_kills_the_whole_group",
            the_wall_clock_kills_the_whole_group,
        ),
        (
            "the_stop_check_kills_the_command",
            the_stop_check_kills_the_command,
        ),
        (
            "background_processes_do_not_outlive_the_command",
            background_processes_do_not_outlive_the_command,
        ),
    ];
    let confined: [Check; 28] = [
        (
            "reading_a_marker_outside_fails",
            reading_a_marker_outside_fails,
        ),
        (
            "writing_outside_fails_and_the_marker_is_unchanged",
            writing_outside_fails_and_the_marker_is_unchanged,
        ),
        (
            "reading_the_data_directorys_token_fails",
            reading_the_data_directorys_token_fails,
        ),
        ("reading_etc_shadow_fails", reading_etc_shadow_fails),
        (
            "a_tcp_connection_to_a_loopback_server_fails",
            a_tcp_connection_to_a_loopback_server_fails,
        ),
        (
            "a_udp_datagram_to_a_loopback_socket_is_not_sent",
            a_udp_datagram_to_a_loopback_socket_is_not_sent,
        ),
        (
            "a_unix_socket_outside_cannot_be_reached",
            a_unix_socket_outside_cannot_be_reached,
        ),
        (
            "the_workspace_is_readable_and_writable",
            the_workspace_is_readable_and_writable,
        ),
        ("the_file_size_limit_holds", the_file_size_limit_holds),
        (
            "a_missing_program_is_exit_127",
            a_missing_program_is_exit_127,
        ),
        (
            "a_program_outside_the_allowed_folders_cannot_run",
            a_program_outside_the_allowed_folders_cannot_run,
        ),
        (
            "a_confinement_that_cannot_be_set_up_refuses_to_run",
            a_confinement_that_cannot_be_set_up_refuses_to_run,
        ),
        (
            "making_a_device_node_in_the_workspace_fails",
            isolation::making_a_device_node_in_the_workspace_fails,
        ),
        ("a_device_ioctl_fails", isolation::a_device_ioctl_fails),
        (
            "a_device_node_already_in_the_workspace_opens_nothing",
            isolation::a_device_node_already_in_the_workspace_opens_nothing,
        ),
        (
            "the_command_holds_no_capability",
            isolation::the_command_holds_no_capability,
        ),
        (
            "the_secure_bits_keep_root_from_regaining_capabilities",
            isolation::the_secure_bits_keep_root_from_regaining_capabilities,
        ),
        (
            "under_root_the_command_runs_as_the_workspaces_owner",
            isolation::under_root_the_command_runs_as_the_workspaces_owner,
        ),
        (
            "a_root_owned_workspace_keeps_root_files_outside_unchanged",
            isolation::a_root_owned_workspace_keeps_root_files_outside_unchanged,
        ),
        (
            "a_root_owned_workspace_caps_processes_with_a_pids_cgroup",
            isolation::a_root_owned_workspace_caps_processes_with_a_pids_cgroup,
        ),
        (
            "detached_children_end_with_the_call",
            isolation::detached_children_end_with_the_call,
        ),
        (
            "the_containment_is_probed",
            isolation::the_containment_is_probed,
        ),
        (
            "escape_techniques_never_leave_the_workspace_or_the_call",
            escapes::escape_techniques_never_leave_the_workspace_or_the_call,
        ),
        (
            "a_read_only_workspace_is_read_but_never_written",
            server::a_read_only_workspace_is_read_but_never_written,
        ),
        (
            "no_workspace_access_keeps_the_workspace_out_of_reach",
            server::no_workspace_access_keeps_the_workspace_out_of_reach,
        ),
        (
            "extra_read_and_write_paths_are_granted_and_nothing_beside",
            server::extra_read_and_write_paths_are_granted_and_nothing_beside,
        ),
        (
            "with_network_a_tcp_connection_is_made",
            server::with_network_a_tcp_connection_is_made,
        ),
        (
            "a_prepared_server_answers_and_ends_with_its_group",
            server::a_prepared_server_answers_and_ends_with_its_group,
        ),
    ];
    let mut passed = 0;
    let mut skipped = 0;
    if !usable {
        if std::env::var_os("CI").is_some() {
            eprintln!(
                "FAILED: CI is set but the kernel offers no usable Landlock ({}); the \
                 confinement proofs must run in CI",
                support.describe()
            );
            return ExitCode::FAILURE;
        }
        println!(
            "SKIPPED: {} confinement checks: this kernel lacks Landlock files+TCP ({})",
            confined.len(),
            support.describe()
        );
        skipped = confined.len();
    }
    for (name, check) in always.iter().chain(confined.iter().filter(|_| usable)) {
        check(&fixture);
        println!("test {name} ... ok");
        passed += 1;
    }
    if skipped > 0 {
        println!("{passed} passed, 0 failed, {skipped} skipped");
    } else {
        println!("{passed} passed, 0 failed");
    }
    ExitCode::SUCCESS
}
