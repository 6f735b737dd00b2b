//! `Jail::walk`: order, refusals of the start path, links never followed, and links
//! swapped in while the walk runs.

use std::io::Read;

use pp_gate::{EntryKind, WalkDir, WalkEntry, WalkFlow, WalkVisitor};
use pretty_assertions::assert_eq;

use crate::{outcome, setup};

/// Runs just before the recorder acts on an entry.
type Swap = Box<dyn FnMut(&WalkEntry)>;

/// Records what it is shown and reads every file it meets; `swap` runs just before a
/// file or directory entry is acted on (to swap a link in).
#[derive(Default)]
struct Recorder {
    seen: Vec<String>,
    contents: Vec<String>,
    entered: Vec<String>,
    left: Vec<String>,
    failed_opens: Vec<(String, &'static str)>,
    swap: Option<Swap>,
}

impl WalkVisitor for Recorder {
    fn enter(&mut self, dir: &WalkDir<'_>) -> WalkFlow {
        self.entered.push(dir.path().to_owned());
        WalkFlow::Continue
    }

    fn visit(&mut self, dir: &WalkDir<'_>, entry: &WalkEntry) -> WalkFlow {
        let kind = match entry.kind {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "link",
            EntryKind::Other => "other",
        };
        self.seen.push(format!("{kind} {}", entry.path));
        if let Some(swap) = self.swap.as_mut() {
            swap(entry);
        }
        if entry.kind == EntryKind::File {
            match dir.open(entry) {
                Ok(mut file) => {
                    let mut text = String::new();
                    file.read_to_string(&mut text).expect("read");
                    self.contents.push(text);
                }
                Err(error) => self
                    .failed_opens
                    .push((entry.path.clone(), outcome::<()>(&Err(error)))),
            }
        }
        WalkFlow::Continue
    }

    fn leave(&mut self, path: &str) {
        self.left.push(path.to_owned());
    }
}

#[test]
fn walks_depth_first_in_name_order() {
    let (tree, jail) = setup();
    tree.file("docs/a/deep.txt", "deep");
    let mut recorder = Recorder::default();
    jail.walk(".", &mut recorder).expect("walk");
    assert_eq!(
        recorder.seen,
        [
            "dir docs",
            "dir docs/a",
            "file docs/a/deep.txt",
            "file docs/readme.txt",
            "dir empty",
            "file top.txt",
        ]
    );
    assert_eq!(recorder.entered, ["", "docs", "docs/a", "empty"]);
    assert_eq!(recorder.left, ["docs/a", "docs", "empty", ""]);

    let mut below = Recorder::default();
    jail.walk("docs/a/..", &mut below)
        .expect("walk a subfolder");
    assert_eq!(below.entered, ["docs", "docs/a"]);
}

#[test]
fn the_start_path_is_checked_like_any_path() {
    let (_tree, jail) = setup();
    let walk = |path: &str| outcome(&jail.walk(path, &mut Recorder::default()));
    assert_eq!(walk("../outside"), "escapes");
    assert_eq!(walk("/etc"), "absolute");
    assert_eq!(walk("a\\b"), "invalid");
    assert_eq!(walk("missing"), "not_found");
    assert_eq!(walk("top.txt"), "not_a_directory");
}

#[cfg(unix)]
#[test]
fn links_are_shown_never_followed() {
    let (tree, jail) = setup();
    tree.symlink("out-dir", "../outside/dir");
    tree.symlink("out-file", tree.outside().join("secret.txt"));
    tree.symlink("in-dir", "docs");
    assert_eq!(
        outcome(&jail.walk("out-dir", &mut Recorder::default())),
        "symlink_escape"
    );
    let mut recorder = Recorder::default();
    jail.walk("", &mut recorder).expect("walk");
    assert!(recorder.seen.contains(&"link out-dir".to_owned()));
    assert!(recorder.seen.contains(&"link in-dir".to_owned()));
    assert!(
        !recorder
            .contents
            .iter()
            .any(|text| text.contains("TOP-SECRET"))
    );
    // The inside link is not followed either: `docs` is read once, under its own name.
    assert_eq!(recorder.entered, ["", "docs", "empty"]);
}

#[cfg(unix)]
#[test]
fn a_link_swapped_in_for_a_file_is_not_opened() {
    let (tree, jail) = setup();
    let workspace = tree.workspace().to_path_buf();
    let secret = tree.outside().join("secret.txt");
    let mut recorder = Recorder {
        swap: Some(Box::new(move |entry| {
            if entry.path == "top.txt" {
                std::fs::remove_file(workspace.join("top.txt")).unwrap();
                std::os::unix::fs::symlink(&secret, workspace.join("top.txt")).unwrap();
            }
        })),
        ..Recorder::default()
    };
    jail.walk("", &mut recorder).expect("walk");
    assert_eq!(
        recorder.failed_opens.len(),
        1,
        "{:?}",
        recorder.failed_opens
    );
    assert_eq!(recorder.failed_opens[0].0, "top.txt");
    assert!(
        !recorder
            .contents
            .iter()
            .any(|text| text.contains("TOP-SECRET"))
    );
}

#[cfg(unix)]
#[test]
fn a_link_swapped_in_for_a_folder_is_not_entered() {
    let (tree, jail) = setup();
    let workspace = tree.workspace().to_path_buf();
    let outside = tree.outside().join("dir");
    let inside = tree.workspace().join("empty");
    let mut recorder = Recorder {
        swap: Some(Box::new(move |entry| {
            if entry.path == "docs" {
                std::fs::rename(workspace.join("docs"), workspace.join("docs-moved")).unwrap();
                std::os::unix::fs::symlink(&outside, workspace.join("docs")).unwrap();
            }
            if entry.path == "empty" {
                // A link to a folder inside is refused too: it is no longer the folder listed.
                std::fs::remove_dir(&inside).unwrap();
                std::os::unix::fs::symlink("docs-moved", &inside).unwrap();
            }
        })),
        ..Recorder::default()
    };
    jail.walk("", &mut recorder).expect("walk");
    assert_eq!(recorder.entered, [""]);
    assert!(!recorder.seen.iter().any(|seen| seen.contains("inner")));
    assert!(
        !recorder
            .contents
            .iter()
            .any(|text| text.contains("TOP-SECRET"))
    );
}

#[test]
fn stop_and_skip_are_obeyed() {
    struct StopAtTop(Vec<String>);
    impl WalkVisitor for StopAtTop {
        fn enter(&mut self, _dir: &WalkDir<'_>) -> WalkFlow {
            WalkFlow::Continue
        }
        fn visit(&mut self, _dir: &WalkDir<'_>, entry: &WalkEntry) -> WalkFlow {
            self.0.push(entry.path.clone());
            match entry.path.as_str() {
                "docs" => WalkFlow::Skip,
                "empty" => WalkFlow::Stop,
                _ => WalkFlow::Continue,
            }
        }
    }
    let (_tree, jail) = setup();
    let mut visitor = StopAtTop(Vec::new());
    jail.walk("", &mut visitor).expect("walk");
    assert_eq!(visitor.0, ["docs", "empty"]);
}

#[test]
fn read_small_reads_only_regular_files_in_the_folder() {
    struct Reads(Vec<Option<Vec<u8>>>);
    impl WalkVisitor for Reads {
        fn enter(&mut self, dir: &WalkDir<'_>) -> WalkFlow {
            self.0.push(dir.read_small("top.txt", 2).expect("read"));
            self.0
                .push(dir.read_small("empty", 2).expect("a folder is absent"));
            self.0.push(dir.read_small("none", 2).expect("absent"));
            WalkFlow::Stop
        }
        fn visit(&mut self, _dir: &WalkDir<'_>, _entry: &WalkEntry) -> WalkFlow {
            WalkFlow::Stop
        }
    }
    let (_tree, jail) = setup();
    let mut reads = Reads(Vec::new());
    jail.walk("", &mut reads).expect("walk");
    assert_eq!(reads.0, [Some(b"to".to_vec()), None, None]);
}

#[test]
fn folders_deeper_than_the_limit_are_not_entered() {
    let (tree, jail) = setup();
    let deep = vec!["d"; pp_gate::MAX_WALK_DEPTH + 3].join("/");
    tree.file(&format!("{deep}/bottom.txt"), "bottom");
    let mut recorder = Recorder::default();
    jail.walk("", &mut recorder).expect("walk");
    let deepest = recorder
        .entered
        .iter()
        .map(|path| path.split('/').filter(|part| *part == "d").count())
        .max();
    assert_eq!(deepest, Some(pp_gate::MAX_WALK_DEPTH));
    assert!(!recorder.contents.contains(&"bottom".to_owned()));
}
