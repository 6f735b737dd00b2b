//! Fingerprints: metadata always, content hash up to a limit, never an error for an
//! unreadable file, and a change whenever the file changes.

use std::fs::{File, FileTimes};
use std::time::{Duration, SystemTime};

use pp_gate::{DEFAULT_HASH_MAX_BYTES, Jail};
use pp_test_support::TempTree;
use pretty_assertions::assert_eq;

use crate::{outcome, setup};

/// The `key=value` fields of a fingerprint, in order.
fn fields(fingerprint: &str) -> Vec<(String, String)> {
    fingerprint
        .split(' ')
        .map(|field| {
            let (key, value) = field.split_once('=').expect("key=value");
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

fn keys(fingerprint: &str) -> Vec<String> {
    fields(fingerprint)
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

fn set_mtime(path: &std::path::Path, when: SystemTime) {
    let file = File::options().write(true).open(path).unwrap();
    file.set_times(FileTimes::new().set_modified(when)).unwrap();
}

#[cfg(unix)]
#[test]
fn format_names_the_file_and_hashes_small_content() {
    use std::os::unix::fs::MetadataExt;
    let (tree, jail) = setup();
    let path = tree.file("abc.txt", "abc");
    let when = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 5);
    set_mtime(&path, when);
    let metadata = std::fs::metadata(&path).unwrap();
    let fingerprint = jail.fingerprint("abc.txt").unwrap();
    assert_eq!(
        fields(&fingerprint),
        [
            ("dev", metadata.dev().to_string()),
            ("ino", metadata.ino().to_string()),
            ("size", "3".to_owned()),
            ("mtime", "1700000000.000000005".to_owned()),
            (
                "ctime",
                format!("{}.{:09}", metadata.ctime(), metadata.ctime_nsec())
            ),
            (
                "sha256",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".to_owned()
            ),
        ]
        .map(|(key, value)| (key.to_owned(), value))
        .to_vec()
    );
    assert_eq!(jail.fingerprint_with("abc.txt", 3).unwrap(), fingerprint);
}

#[test]
fn the_hash_stops_at_the_limit_and_the_metadata_stays() {
    let (tree, jail) = setup();
    tree.file("abc.txt", "abc");
    let hashed = jail.fingerprint_with("abc.txt", 3).unwrap();
    let unhashed = jail.fingerprint_with("abc.txt", 2).unwrap();
    assert!(keys(&hashed).contains(&"sha256".to_owned()), "{hashed}");
    assert!(
        !keys(&unhashed).contains(&"sha256".to_owned()),
        "{unhashed}"
    );
    assert!(
        hashed.starts_with(&format!("{unhashed} sha256=")),
        "{hashed}"
    );
    assert_eq!(jail.fingerprint_with("abc.txt", 0).unwrap(), unhashed);
    // An empty file is hashed even with a zero limit.
    tree.file("empty.txt", "");
    assert!(
        jail.fingerprint_with("empty.txt", 0)
            .unwrap()
            .ends_with(" sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    assert_eq!(DEFAULT_HASH_MAX_BYTES, 64 * 1024 * 1024);
    assert_eq!(
        jail.fingerprint("abc.txt").unwrap(),
        jail.fingerprint_with("abc.txt", DEFAULT_HASH_MAX_BYTES)
            .unwrap()
    );
}

#[cfg(unix)]
#[test]
fn a_huge_sparse_file_gets_a_metadata_fingerprint() {
    let (tree, jail) = setup();
    let path = tree.file("big.txt", "");
    let size = 8 * 1024 * 1024 * 1024_u64;
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    let fingerprint = jail.fingerprint("big.txt").unwrap();
    let fields = fields(&fingerprint);
    assert!(
        fields.contains(&("size".to_owned(), size.to_string())),
        "{fingerprint}"
    );
    assert!(
        !keys(&fingerprint).contains(&"sha256".to_owned()),
        "{fingerprint}"
    );
    // A write at the end of the huge file changes it (mtime, ctime).
    let before = fingerprint;
    let file = File::options().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_at(&file, b"x", size - 1).unwrap();
    file.set_times(FileTimes::new().set_modified(SystemTime::now() + Duration::from_secs(5)))
        .unwrap();
    assert_ne!(jail.fingerprint("big.txt").unwrap(), before);
}

/// Every kind of change moves both the full and the metadata-only fingerprint.
#[test]
fn any_change_changes_the_fingerprint() {
    let tree = TempTree::new();
    let jail = Jail::new(tree.workspace()).unwrap();
    let path = tree.file("f.txt", "hello");
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    set_mtime(&path, when);
    let snapshot = |jail: &Jail| {
        (
            jail.fingerprint("f.txt").unwrap(),
            jail.fingerprint_with("f.txt", 0).unwrap(),
        )
    };
    let mut seen = vec![snapshot(&jail)];
    // `metadata_too`: whether the metadata-only fingerprint must change as well.
    let mut check = |what: &str, metadata_too: bool| {
        let now = snapshot(&jail);
        let last = seen.len() - 1;
        for (index, earlier) in seen.iter().enumerate() {
            assert_ne!(now.0, earlier.0, "full fingerprint unchanged after {what}");
            if metadata_too || index != last {
                assert_ne!(
                    now.1, earlier.1,
                    "metadata fingerprint unchanged after {what}"
                );
            }
        }
        seen.push(now);
    };

    // Content, same size, same mtime (rewritten in place, mtime put back): only the
    // hash is sure to see it (the ctime may not move within one clock tick).
    std::fs::write(&path, "HELLO").unwrap();
    set_mtime(&path, when);
    check("same-size content change", false);
    // Size.
    std::fs::write(&path, "HELLO!").unwrap();
    set_mtime(&path, when);
    check("size change", true);
    // Mtime alone.
    set_mtime(&path, when + Duration::from_secs(1));
    check("mtime change", true);
    // Replaced by another file with the same content and mtime (inode).
    let other = tree.file("other.txt", "HELLO!");
    set_mtime(&other, when + Duration::from_secs(1));
    std::fs::rename(&other, &path).unwrap();
    check("replacement", true);
    // Removed.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(jail.fingerprint("f.txt").unwrap(), "absent");
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_gets_a_metadata_fingerprint_not_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, jail) = setup();
    let path = tree.file("locked.txt", "secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let fingerprint = jail.fingerprint("locked.txt").unwrap();
    let metadata_only = jail.fingerprint_with("locked.txt", 0).unwrap();
    if File::open(&path).is_err() {
        // Not root: the file really is unreadable.
        assert_eq!(fingerprint, metadata_only);
    } else {
        // Root reads anything; the unreadable path is covered by the unit test with an
        // injected EACCES (`jail::fingerprint::tests`).
        assert!(fingerprint.starts_with(&format!("{metadata_only} sha256=")));
    }
}

#[cfg(unix)]
#[test]
fn special_files_are_not_fingerprinted() {
    let (tree, jail) = setup();
    let _listener = std::os::unix::net::UnixListener::bind(tree.workspace().join("sock")).unwrap();
    assert_eq!(outcome(&jail.fingerprint("sock")), "not_a_file");
    assert_eq!(outcome(&jail.fingerprint("../x")), "escapes");
}
