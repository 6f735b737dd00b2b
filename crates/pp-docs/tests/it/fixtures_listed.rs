//! The document fixtures and their README agree: every file the README lists exists
//! (a renamed or deleted fixture fails here, loudly, not as a confusing parser test
//! failure), and every fixture is listed (so none goes undocumented).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs")
}

/// The file names of the README's `### `name`` headings.
fn listed(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.strip_suffix('`'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_listed_fixture_exists_and_every_fixture_is_listed() {
    let dir = docs_dir();
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("fixtures README.md");
    let listed = listed(&readme);
    assert!(
        listed.len() >= 15,
        "the README lists only {} fixtures: its `### `file`` headings changed?",
        listed.len()
    );
    let unique: BTreeSet<_> = listed.iter().cloned().collect();
    assert_eq!(unique.len(), listed.len(), "a fixture is listed twice");

    let missing: Vec<_> = listed
        .iter()
        .filter(|name| !dir.join(name).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "listed in README.md but missing: {missing:?}"
    );

    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .map(|entry| {
            entry
                .expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "README.md")
        .collect();
    let unlisted: Vec<_> = present.difference(&unique).collect();
    assert!(
        unlisted.is_empty(),
        "fixtures not listed in README.md: {unlisted:?}"
    );
}

#[test]
fn fixtures_stay_small() {
    let total: u64 = std::fs::read_dir(docs_dir())
        .expect("fixtures dir")
        .map(|entry| {
            entry
                .expect("dir entry")
                .metadata()
                .expect("metadata")
                .len()
        })
        .sum();
    assert!(
        total < 1_500_000,
        "document fixtures take {total} bytes (budget 1.5 MB)"
    );
}

#[test]
fn the_listing_parser_reads_headings_only() {
    let readme = "# T\n### `a.pdf`\ntext `b.pdf`\n## `c.pdf`\n### `d.docx`\n";
    assert_eq!(listed(readme), ["a.pdf", "d.docx"]);
}
