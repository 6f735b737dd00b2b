//! The data directory holds file contents (checkpoints): others may neither write to it
//! (refused) nor read it (tightened to 0700 with a notice).

use std::os::unix::fs::PermissionsExt as _;

use pp_test_support::TempTree;

use crate::{pocketpilot_in, text};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn data_dir_with_mode(tree: &TempTree, bits: u32) -> std::path::PathBuf {
    let home = tree.base().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(bits)).unwrap();
    home
}

#[test]
fn a_data_dir_others_can_read_is_tightened_with_a_notice() {
    let tree = TempTree::new();
    let home = data_dir_with_mode(&tree, 0o755);
    let output = pocketpilot_in(&home)
        .args(["tasks", "list"])
        .current_dir(tree.workspace())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "no tasks\n");
    assert!(stderr.contains("tightened it to 700"), "{stderr}");
    // One notice line, with no run of spaces from a broken string literal (issue finding 11).
    let notice = stderr
        .lines()
        .find(|line| line.starts_with("notice: data directory"))
        .unwrap_or_else(|| panic!("no notice: {stderr}"));
    assert!(!notice.contains("  "), "a run of spaces: {notice:?}");
    assert!(
        notice.ends_with("(mode 755); tightened it to 700 (the database holds file contents)"),
        "{notice}"
    );
    assert_eq!(mode(&home), 0o700);

    let output = pocketpilot_in(&home)
        .args(["tasks", "list"])
        .current_dir(tree.workspace())
        .output()
        .unwrap();
    assert_eq!(text(&output).1, "", "no notice once it is private");
}

#[test]
fn a_data_dir_others_can_write_is_refused() {
    let tree = TempTree::new();
    let home = data_dir_with_mode(&tree, 0o775);
    let output = pocketpilot_in(&home)
        .args(["tasks", "list"])
        .current_dir(tree.workspace())
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("writable by other users"), "{stderr}");
    assert_eq!(mode(&home), 0o775, "left as it was");
    assert!(!home.join("pocketpilot.db").exists(), "nothing was created");
}
