//! The sandbox property: command lines drawn at random from escape techniques never
//! touch anything outside the workspace, leave no device node in it, and never outlive
//! the call; with namespaces and with the subreaper fallback.

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::isolation::{is_root, nobodys_workspace};
use super::*;

/// The techniques: `{outside}` is a folder outside the workspace, `{marker}` a file in
/// it, `{sleep}` a unique sleep, `{server}` this process (standing in for `serve`),
/// `{n}` the step's number. A step that gets through writes `escaped`.
const TECHNIQUES: [&str; 17] = [
    "mknod ./kmsg{n} c 1 11 && echo mknod >> escaped",
    "mknod ./blk{n} b 7 0 && echo mknod-block >> escaped",
    "chmod 0666 '{marker}' && echo chmod >> escaped",
    "touch -d 2001-01-01 '{marker}' && echo utime >> escaped",
    "echo changed >> '{marker}' && echo write >> escaped",
    "touch '{outside}/new{n}' && echo create >> escaped",
    "setsid sh -c 'sleep {sleep}; echo late >> late; echo late >> \"{outside}/late\"' >/dev/null 2>&1 &",
    "(sh -c 'sleep {sleep}; echo late >> late' >/dev/null 2>&1 &)",
    "nohup sh -c 'sleep {sleep}; echo late >> late' >/dev/null 2>&1 &",
    "unshare -r sh -c 'echo x > \"{outside}/unshared\"' && echo unshare-user >> escaped",
    "unshare -m true && echo unshare-mount >> escaped",
    "mkdir -p mnt{n} && mount -t tmpfs none mnt{n} && echo mount >> escaped",
    "perl -MSocket -e 'socket(my $s, AF_INET, SOCK_RAW, 1) or exit 1' && echo raw-socket >> escaped",
    "cat '/proc/1/root{marker}' && echo proc-root >> escaped",
    "perl -e 'exit(syscall(101, 16, $ARGV[0], 0, 0) == 0 ? 0 : 1)' $PPID && echo ptrace >> escaped",
    "sleep {sleep} >/dev/null 2>&1 &",
    "kill -0 {server} && echo signal >> escaped",
];

/// The last technique signals the server: Landlock scopes signals only from ABI 6.
const SIGNAL: usize = 16;

pub(super) fn escape_techniques_never_leave_the_workspace_or_the_call(fixture: &Fixture) {
    let scopes = pp_sandbox::probe().scopes;
    if !scopes {
        println!("note: signals to the server are left out (Landlock ABI < 6 here)");
    }
    let limit = if scopes { TECHNIQUES.len() } else { SIGNAL };
    let mut runner = TestRunner::new(Config {
        cases: 12,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (vec(0..limit, 1..5), any::<bool>());
    let counter = AtomicUsize::new(0);
    runner
        .run(&strategy, |(steps, namespaces)| {
            let case = counter.fetch_add(1, Ordering::SeqCst);
            check_case(fixture, case, &steps, namespaces)
        })
        .unwrap();
}

fn check_case(
    fixture: &Fixture,
    case: usize,
    steps: &[usize],
    namespaces: bool,
) -> Result<(), TestCaseError> {
    let base = fixture
        .workspace
        .parent()
        .unwrap()
        .join(format!("case{case}"));
    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let marker = outside.join("marker.txt");
    std::fs::write(&marker, MARKER).unwrap();
    let before = std::fs::metadata(&marker).unwrap();
    // The subreaper fallback under root needs a workspace of another user (so does a
    // system where a root-owned workspace is refused).
    let workspace = if is_root() && (!namespaces || !fixture.root_owned) {
        nobodys_workspace(fixture, &format!("case{case}-workspace"))
    } else {
        let workspace = base.join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        workspace
    };
    let sleep = unique_sleep(1);
    let script: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(n, step)| {
            TECHNIQUES[*step]
                .replace("{outside}", outside.to_str().unwrap())
                .replace("{marker}", marker.to_str().unwrap())
                .replace("{sleep}", &sleep)
                .replace("{server}", &std::process::id().to_string())
                .replace("{n}", &n.to_string())
        })
        .collect();
    let script = script.join("\n");
    let mut spec = Spec::new(
        vec!["sh".to_owned(), "-c".to_owned(), script.clone()],
        workspace.clone(),
        workspace.clone(),
        ResourceLimits::default(),
    );
    spec.confine = true;
    let sandbox = if namespaces {
        sandbox()
    } else {
        sandbox().without_namespaces()
    };
    let started = Instant::now();
    let finished = sandbox.run(&spec, &options(), &|| false).unwrap();
    let context = format!("namespaces {namespaces}, script:\n{script}\n{finished:?}");
    // Nothing it started is alive a second after the call.
    let deadline = Instant::now() + Duration::from_secs(1);
    while !alive_with(&sleep).is_empty() {
        prop_assert!(Instant::now() < deadline, "outlived the call: {context}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A late writer would have written by now.
    if let Some(left) = Duration::from_millis(1600).checked_sub(started.elapsed()) {
        std::thread::sleep(left);
    }
    prop_assert!(
        !workspace.join("escaped").exists(),
        "escaped ({}): {context}",
        std::fs::read_to_string(workspace.join("escaped")).unwrap_or_default()
    );
    prop_assert!(!workspace.join("late").exists(), "a late write: {context}");
    let after = std::fs::metadata(&marker).unwrap();
    prop_assert_eq!(std::fs::read_to_string(&marker).unwrap(), MARKER);
    prop_assert_eq!(after.mode(), before.mode());
    prop_assert_eq!(after.mtime(), before.mtime());
    let outside_now: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    prop_assert_eq!(outside_now.len(), 1, "{:?}: {}", outside_now, context);
    for entry in std::fs::read_dir(&workspace).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        prop_assert!(
            !kind.is_char_device() && !kind.is_block_device(),
            "a device node {:?}: {}",
            entry.path(),
            context
        );
    }
    Ok(())
}
