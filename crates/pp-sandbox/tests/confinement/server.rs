//! Proofs of the spec's wider or narrower confinement, for long-running servers (MCP
//! stdio servers): a read-only workspace cannot be written or have its modes changed,
//! `workspace_access = None` keeps it out of reach, extra `read` and `write` paths are
//! granted and nothing beside them, `network = true` connects, and a server started with
//! [`Sandbox::prepare`] answers on its pipes and ends, with everything it started, when
//! its process group is killed.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use pp_sandbox::WorkspaceAccess;

use super::*;

pub(super) fn a_read_only_workspace_is_read_but_never_written(fixture: &Fixture) {
    let file = fixture.workspace.join("kept.txt");
    std::fs::write(&file, "kept\n").unwrap();
    let path = file.to_str().unwrap();
    let mut spec = fixture.spec(&["cat", path], true);
    spec.workspace_access = WorkspaceAccess::Read;
    let read = run(&spec);
    assert!(succeeded(&read), "{read:?}");
    assert_eq!(text(&read.stdout.bytes), "kept\n");
    for script in [
        format!("echo changed > {path}"),
        format!("chmod 600 {path}"),
        format!("touch {}/new.txt", fixture.workspace.display()),
    ] {
        let mut spec = fixture.spec(&["sh", "-c", &script], true);
        spec.workspace_access = WorkspaceAccess::Read;
        let denied = run(&spec);
        assert!(!succeeded(&denied), "{script}: {denied:?}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept\n");
    assert!(!fixture.workspace.join("new.txt").exists());
    std::fs::remove_file(&file).unwrap();
}

pub(super) fn no_workspace_access_keeps_the_workspace_out_of_reach(fixture: &Fixture) {
    let file = fixture.workspace.join("private.txt");
    std::fs::write(&file, "private\n").unwrap();
    let mut spec = fixture.spec(&["cat", file.to_str().unwrap()], true);
    spec.workspace_access = WorkspaceAccess::None;
    let denied = run(&spec);
    assert!(!succeeded(&denied), "{denied:?}");
    assert!(!text(&denied.stdout.bytes).contains("private"));
    std::fs::remove_file(&file).unwrap();
}

pub(super) fn extra_read_and_write_paths_are_granted_and_nothing_beside(fixture: &Fixture) {
    let cache = fixture.outside.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let marker = fixture.marker();
    let script = format!(
        "cat {} && echo cached > {}/entry && echo no > {}/beside",
        marker.display(),
        cache.display(),
        fixture.outside.display()
    );
    let mut spec = fixture.spec(&["sh", "-c", &script], true);
    spec.read = vec![marker.clone()];
    spec.write = vec![cache.clone()];
    let finished = run(&spec);
    assert!(
        text(&finished.stdout.bytes).contains("marker"),
        "{finished:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cache.join("entry")).unwrap(),
        "cached\n"
    );
    assert!(
        !succeeded(&finished),
        "writing beside the write path failed: {finished:?}"
    );
    assert!(!fixture.outside.join("beside").exists());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), MARKER);
}

pub(super) fn with_network_a_tcp_connection_is_made(fixture: &Fixture) {
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
    let mut spec = fixture.spec(&["bash", "-c", &script], true);
    spec.network = true;
    let finished = run(&spec);
    assert!(succeeded(&finished), "{finished:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // Files stay confined with the network open.
    let marker = fixture.marker();
    let mut spec = fixture.spec(&["cat", marker.to_str().unwrap()], true);
    spec.network = true;
    assert!(!succeeded(&run(&spec)));
}

/// The pids of processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

pub(super) fn a_prepared_server_answers_and_ends_with_its_group(fixture: &Fixture) {
    // A unique sleep (its argument) stands for what the server starts in the background.
    let nap = format!("{}.{}", 3000 + std::process::id() % 1000, 4321);
    let script = format!("sleep {nap} & while read line; do echo \"got $line\"; done");
    let mut spec = fixture.spec(&["sh", "-c", &script], true);
    spec.limits = ResourceLimits::server();
    spec.workspace_access = WorkspaceAccess::Read;
    let prepared = sandbox().prepare(&spec).unwrap();
    let mut command = prepared.command;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "hello").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "got hello\n");
    assert!(
        !processes_with(&nap).is_empty(),
        "the background sleep runs"
    );
    let group = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    let _ = child.wait();
    drop(prepared.held);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with(&nap).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        processes_with(&nap).is_empty(),
        "the background sleep ended with the server"
    );
}
