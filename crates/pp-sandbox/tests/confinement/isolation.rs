//! Proofs of the isolation around the confined command (issue: device nodes, root,
//! detached children): no device node can be made or opened in the workspace, no
//! device ioctl works, the command holds no capability, under root it runs as the
//! workspace's owner or (root-owned workspace) under a pids cgroup with everything
//! outside read-only, and nothing it starts outlives the call, with namespaces and
//! with the subreaper fallback. The checks that need root say so and are skipped
//! without it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

/// Whether this test runs as root (CI does): the root-only checks run only then.
pub(super) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Gives `workspace` and everything in it to `nobody` (65534), its parent reachable.
pub(super) fn give_to_nobody(workspace: &Path) {
    let base = workspace.parent().unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = std::process::Command::new("chown")
        .args(["-R", "65534:65534", workspace.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Whether a root-owned workspace can be checked here (root, with the pids cgroup and
/// the namespaces); says why not otherwise.
fn root_owned_or_skip(fixture: &Fixture) -> bool {
    if !is_root() {
        println!("note: skipped (PocketPilot does not run as root here)");
    } else if !fixture.root_owned {
        println!("note: skipped (a root-owned workspace is refused here, see above)");
    }
    fixture.root_owned
}

/// A workspace owned by `nobody` (65534) next to the fixture's, reachable by it.
pub(super) fn nobodys_workspace(fixture: &Fixture, name: &str) -> PathBuf {
    let base = fixture.workspace.parent().unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let workspace = base.join(name);
    std::fs::create_dir_all(&workspace).unwrap();
    std::os::unix::fs::chown(&workspace, Some(65534), Some(65534)).unwrap();
    workspace
}

fn spec_in(workspace: &Path, argv: &[&str], confine: bool) -> Spec {
    let mut spec = Spec::new(
        argv.iter().map(|arg| (*arg).to_owned()).collect(),
        workspace.to_path_buf(),
        workspace.to_path_buf(),
        ResourceLimits::default(),
    );
    spec.confine = confine;
    spec
}

pub(super) fn making_a_device_node_in_the_workspace_fails(fixture: &Fixture) {
    for (name, kind, major, minor) in [("kmsg", "c", "1", "11"), ("blk", "b", "7", "0")] {
        let script = format!("mknod ./{name} {kind} {major} {minor} && head -c 300 ./{name}");
        let finished = run(&fixture.spec(&["sh", "-c", &script], true));
        assert!(!succeeded(&finished), "{script}: {finished:?}");
        assert!(
            std::fs::symlink_metadata(fixture.workspace.join(name)).is_err(),
            "{name} was made"
        );
    }
}

pub(super) fn a_device_ioctl_fails(fixture: &Fixture) {
    // TCGETS on /dev/null: "not a tty" when the ioctl reaches the device, "Permission
    // denied" when Landlock refuses it.
    let control = run(&fixture.spec(&["stty", "-F", "/dev/null"], false));
    assert!(
        text(&control.stderr.bytes).contains("Inappropriate ioctl"),
        "{control:?}"
    );
    let confined = run(&fixture.spec(&["stty", "-F", "/dev/null"], true));
    assert!(
        text(&confined.stderr.bytes).contains("Permission denied"),
        "{confined:?}"
    );
}

pub(super) fn a_device_node_already_in_the_workspace_opens_nothing(fixture: &Fixture) {
    if !is_root() {
        println!("note: skipped (needs root to make the device node)");
        return;
    }
    if let Err(why) = sandbox().containment().namespaces {
        // Documented: without a mount namespace the workspace cannot be made nodev.
        println!("note: skipped (no mount namespace here: {why})");
        return;
    }
    let node = fixture.workspace.join("zero");
    let made = std::process::Command::new("mknod")
        .args([node.to_str().unwrap(), "c", "1", "5"])
        .status()
        .unwrap();
    assert!(made.success());
    let script = "head -c 4 ./zero | od -An -tx1";
    let control = run(&fixture.spec(&["sh", "-c", script], false));
    assert!(
        text(&control.stdout.bytes).contains("00 00 00 00"),
        "{control:?}"
    );
    let confined = run(&fixture.spec(&["sh", "-c", "head -c 4 ./zero"], true));
    assert!(!succeeded(&confined), "{confined:?}");
    assert!(confined.stdout.bytes.is_empty(), "{confined:?}");
    std::fs::remove_file(node).unwrap();
}

/// The five capability sets of `/proc/self/status`, read by the command itself
/// (unconfined: a confined command cannot read /proc).
pub(super) fn the_command_holds_no_capability(fixture: &Fixture) {
    let fallback_workspace = if is_root() {
        nobodys_workspace(fixture, "no-capability")
    } else {
        fixture.workspace.clone()
    };
    let runs = [
        (sandbox(), fixture.workspace.clone(), true),
        // Without a user namespace an ordinary user has no CAP_SETPCAP to empty the
        // bounding set with (nor any capability it bounds: no_new_privs keeps it so).
        (
            sandbox().without_namespaces(),
            fallback_workspace,
            is_root(),
        ),
    ];
    for (sandbox, workspace, bounded) in runs {
        let spec = spec_in(&workspace, &["cat", "/proc/self/status"], false);
        let finished = sandbox.run(&spec, &options(), &|| false).unwrap();
        assert!(succeeded(&finished), "{finished:?}");
        let status = text(&finished.stdout.bytes);
        // No capability, and no signal blocked (the supervisor blocks those it reads
        // from its signalfd). Not SigIgn: glibc's posix_spawn leaves its two internal
        // signals (32, 33) ignored in every child it starts, ours included.
        for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "SigBlk"] {
            if set == "CapBnd" && !bounded {
                println!("note: CapBnd not checked without namespaces (not root)");
                continue;
            }
            let line = status
                .lines()
                .find(|line| line.starts_with(set))
                .unwrap_or_else(|| panic!("no {set} in {status}"));
            assert!(line.ends_with("0000000000000000"), "{line}");
        }
        assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    }
    // And with the confinement on: no file can be given away (no CAP_CHOWN).
    std::fs::write(fixture.workspace.join("mine.txt"), "x").unwrap();
    let other = if is_root() { "65534" } else { "0" };
    let chown = run(&fixture.spec(&["chown", other, "mine.txt"], true));
    assert!(!succeeded(&chown), "{chown:?}");
    assert_eq!(
        std::fs::metadata(fixture.workspace.join("mine.txt"))
            .unwrap()
            .uid(),
        rustix::process::geteuid().as_raw()
    );
}

/// `SECBIT_NOROOT | SECBIT_NOROOT_LOCKED`, read with prctl(PR_GET_SECUREBITS) by perl.
pub(super) fn the_secure_bits_keep_root_from_regaining_capabilities(fixture: &Fixture) {
    let sys_prctl = match std::env::consts::ARCH {
        "x86_64" => 157,
        "aarch64" | "riscv64" => 167,
        other => {
            println!("note: skipped (no prctl number known for {other})");
            return;
        }
    };
    let script = format!("print syscall({sys_prctl}, 27, 0, 0, 0, 0)");
    let finished = run(&fixture.spec(&["perl", "-e", &script], true));
    assert!(succeeded(&finished), "{finished:?}");
    let bits: u32 = text(&finished.stdout.bytes).trim().parse().unwrap();
    assert_eq!(bits & 0b11, 0b11, "securebits {bits:#b}");
}

pub(super) fn under_root_the_command_runs_as_the_workspaces_owner(fixture: &Fixture) {
    if !is_root() {
        println!("note: skipped (PocketPilot does not run as root here)");
        return;
    }
    let workspace = nobodys_workspace(fixture, "nobodys");
    let script = "id -u; id -g; id -G; echo made > made.txt";
    let finished = run(&spec_in(&workspace, &["sh", "-c", script], true));
    assert!(succeeded(&finished), "{finished:?}");
    assert_eq!(text(&finished.stdout.bytes), "65534\n65534\n65534\n");
    let made = std::fs::metadata(workspace.join("made.txt")).unwrap();
    assert_eq!((made.uid(), made.gid()), (65534, 65534));
}

pub(super) fn a_root_owned_workspace_keeps_root_files_outside_unchanged(fixture: &Fixture) {
    if !root_owned_or_skip(fixture) {
        return;
    }
    let file = fixture.outside.join("root-owned.txt");
    std::fs::write(&file, "root's\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let path = file.to_str().unwrap();
    // Landlock alone does not stop these (the unconfined control shows uid 0 can).
    let control = run(&fixture.spec(&["chmod", "0600", path], false));
    assert!(succeeded(&control), "{control:?}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    for argv in [
        vec!["chmod", "0666", path],
        vec!["touch", "-d", "2001-01-01", path],
        vec!["chown", "65534", path],
    ] {
        let confined = run(&fixture.spec(&argv, true));
        assert!(!succeeded(&confined), "{argv:?}: {confined:?}");
    }
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(after.mode(), before.mode());
    assert_eq!(after.mtime(), before.mtime());
    assert_eq!(after.uid(), 0);
}

pub(super) fn a_root_owned_workspace_caps_processes_with_a_pids_cgroup(fixture: &Fixture) {
    if !root_owned_or_skip(fixture) {
        return;
    }
    let sleep = unique_sleep(3);
    let script = format!(
        "for i in $(seq 40); do (: > p.$i; exec sleep {sleep}) 2>/dev/null & done 2>/dev/null; wait"
    );
    let mut spec = fixture.spec(&["sh", "-c", &script], true);
    spec.cwd = fixture.workspace.join("sub");
    spec.limits.processes = 10;
    let finished = run(&spec);
    let started = std::fs::read_dir(fixture.workspace.join("sub"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("p."))
        .count();
    assert!(started > 0, "{finished:?}");
    assert!(
        started <= 10,
        "{started} processes under a limit of 10: {finished:?}"
    );
    assert_gone_within_a_second(&sleep);
    // The run's cgroup is gone with it.
    let ours = format!("pocketpilot-sandbox-{}-", std::process::id());
    let left: Vec<_> = [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/pids",
        "/sys/fs/cgroup/unified",
    ]
    .iter()
    .filter_map(|dir| std::fs::read_dir(dir).ok())
    .flat_map(|entries| entries.flatten())
    .filter(|entry| entry.file_name().to_string_lossy().starts_with(&ours))
    .map(|entry| entry.path())
    .collect();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

/// The reproduction and its cousins: a writer that left the process group
/// (setsid), was orphaned (double fork) or ignores hangups (nohup) is dead within 1 s
/// of the call's return and never writes; with namespaces, and with the subreaper
/// fallback (in a workspace owned by `nobody` when root, since root needs namespaces).
pub(super) fn detached_children_end_with_the_call(fixture: &Fixture) {
    let fallback_workspace = if is_root() {
        nobodys_workspace(fixture, "fallback")
    } else {
        fixture.workspace.clone()
    };
    let runs = [
        (sandbox(), fixture.workspace.clone(), "namespaces"),
        (
            sandbox().without_namespaces(),
            fallback_workspace,
            "subreaper",
        ),
    ];
    for (sandbox, workspace, how) in runs {
        let sleep = unique_sleep(1);
        let writer = |file: &str| format!("sh -c 'sleep {sleep}; echo LATE > {file}'");
        let script = format!(
            "setsid {} > /dev/null 2>&1 & ({} > /dev/null 2>&1 &) ; nohup {} > /dev/null 2>&1 & echo started",
            writer("late1.txt"),
            writer("late2.txt"),
            writer("late3.txt"),
        );
        let spec = spec_in(&workspace, &["sh", "-c", &script], fixture.landlock);
        let finished = sandbox.run(&spec, &options(), &|| false).unwrap();
        assert!(succeeded(&finished), "{how}: {finished:?}");
        assert_gone_within_a_second(&sleep);
        std::thread::sleep(Duration::from_millis(1500));
        for file in ["late1.txt", "late2.txt", "late3.txt"] {
            assert!(!workspace.join(file).exists(), "{how}: {file} was written");
        }
        // The wall clock too ends a detached child, not just the command's group.
        let sleep = unique_sleep(60);
        let script = format!("setsid sleep {sleep} & sleep {sleep}");
        let spec = spec_in(&workspace, &["sh", "-c", &script], fixture.landlock);
        let options = RunOptions {
            timeout: Duration::from_secs(1),
            ..options()
        };
        let finished = sandbox.run(&spec, &options, &|| false).unwrap();
        assert_eq!(finished.end, End::TimedOut, "{how}: {finished:?}");
        assert_gone_within_a_second(&sleep);
    }
}

pub(super) fn the_containment_is_probed(_fixture: &Fixture) {
    let containment = sandbox().containment();
    println!("containment: {}", containment.describe());
    assert_eq!(containment.root, is_root());
    let complete = containment.namespaces.is_ok() && containment.pids_cgroup.is_ok();
    assert_eq!(
        containment.refuses(&fixture_root_owned()).is_none(),
        !is_root() || complete
    );
    // A child started ahead answers the same, read when the answer is needed; one
    // dropped unread is killed and reaped.
    let ahead = sandbox().start_probe();
    assert_eq!(sandbox().containment_with(Some(ahead)), containment);
    drop(sandbox().start_probe());
    let off = sandbox().without_namespaces().containment();
    assert!(off.namespaces.is_err());
    assert!(off.processes().contains("subreaper"));
    // Under root, a root-owned workspace without a pids cgroup is refused, and says why.
    let no_cgroup = pp_sandbox::Containment {
        namespaces: Ok(()),
        root: true,
        pids_cgroup: Err("no hierarchy".to_owned()),
    };
    let why = no_cgroup.refuses(&fixture_root_owned()).unwrap();
    assert!(why.contains("no pids cgroup: no hierarchy"), "{why}");
}

fn fixture_root_owned() -> PathBuf {
    PathBuf::from("/usr")
}
