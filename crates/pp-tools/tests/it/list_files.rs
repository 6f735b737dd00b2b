use pp_tools::Limits;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{Fixture, redact_times};

fn sample() -> Fixture {
    let fixture = Fixture::new();
    fixture.tree.file("README.md", "hello\n");
    fixture.tree.file("src/lib.rs", "pub fn a() {}\n");
    fixture.tree.file("src/files/mod.rs", "mod x;\n");
    fixture.tree.file("src/files/notes.txt", "n\n");
    fixture.tree.dir("empty");
    fixture
}

#[tokio::test(flavor = "current_thread")]
async fn lists_the_root_with_kinds_sizes_and_times() {
    let fixture = sample();
    let listing = fixture.ok("list_files", json!({"path": "."})).await;
    assert_eq!(
        redact_times(&listing),
        "\
file           6 <time> README.md
dir            - <time> empty/
dir            - <time> src/
"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn recursive_listing_of_a_subdirectory() {
    let fixture = sample();
    let listing = fixture
        .ok("list_files", json!({"path": "src", "recursive": true}))
        .await;
    assert_eq!(
        redact_times(&listing),
        "\
dir            - <time> src/files/
file           7 <time> src/files/mod.rs
file           2 <time> src/files/notes.txt
file          14 <time> src/lib.rs
"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn timestamps_are_utc() {
    let fixture = sample();
    let listing = fixture.ok("list_files", json!({"path": "."})).await;
    let first = listing.lines().next().expect("a line");
    let time = first.split_whitespace().nth(2).expect("a time column");
    assert_eq!(time.len(), 20, "{time}");
    assert!(time.starts_with("20") && time.ends_with('Z'), "{time}");
}

#[tokio::test(flavor = "current_thread")]
async fn pattern_filters_by_name_or_path() {
    let fixture = sample();
    let by_name = fixture
        .ok(
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": "*.rs"}),
        )
        .await;
    let paths: Vec<&str> = by_name
        .lines()
        .map(|line| line.rsplit(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(paths, ["src/files/mod.rs", "src/lib.rs"]);

    let by_path = fixture
        .ok(
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": "src/**/*.txt"}),
        )
        .await;
    assert!(by_path.ends_with(" src/files/notes.txt\n"), "{by_path}");
    assert_eq!(by_path.lines().count(), 1);

    // Relative to the listed directory.
    let relative = fixture
        .ok(
            "list_files",
            json!({"path": "src", "recursive": true, "pattern": "files/m*"}),
        )
        .await;
    assert!(relative.ends_with(" src/files/mod.rs\n"), "{relative}");

    let none = fixture
        .ok("list_files", json!({"path": ".", "pattern": "*.zip"}))
        .await;
    assert_eq!(none, "(no entries match `*.zip`)\n");
}

#[tokio::test(flavor = "current_thread")]
async fn empty_directory_says_so() {
    let fixture = sample();
    assert_eq!(
        fixture.ok("list_files", json!({"path": "empty"})).await,
        "(empty directory)\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn listing_is_capped_with_a_marker() {
    let fixture = Fixture::with_limits(Limits {
        max_list_entries: 3,
        ..Limits::default()
    });
    for index in 0..10 {
        fixture.tree.file(&format!("f{index}.txt"), "x");
    }
    let listing = fixture.ok("list_files", json!({"path": "."})).await;
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 4, "{listing}");
    assert_eq!(
        lines[3],
        "[truncated: showing 3 of at least 4 entries; list a subdirectory or use a narrower pattern]"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn filtered_listing_is_capped_with_an_exact_count() {
    let fixture = Fixture::with_limits(Limits {
        max_list_entries: 2,
        ..Limits::default()
    });
    for index in 0..5 {
        fixture.tree.file(&format!("f{index}.rs"), "x");
        fixture.tree.file(&format!("g{index}.txt"), "x");
    }
    let listing = fixture
        .ok("list_files", json!({"path": ".", "pattern": "*.rs"}))
        .await;
    assert!(
        listing.ends_with(
            "[truncated: showing 2 of 5 entries; list a subdirectory or use a narrower pattern]\n"
        ),
        "{listing}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn output_characters_are_capped() {
    let fixture = Fixture::with_limits(Limits {
        max_output_chars: 100,
        ..Limits::default()
    });
    for index in 0..10 {
        fixture.tree.file(&format!("file-{index}.txt"), "x");
    }
    let listing = fixture.ok("list_files", json!({"path": "."})).await;
    assert!(
        listing.ends_with(
            "[truncated: showing 2 of 10 entries; list a subdirectory or use a narrower pattern]\n"
        ),
        "{listing}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn symlinks_are_shown_as_links_and_not_followed() {
    let fixture = Fixture::new();
    fixture.tree.outside_file("secret/key.txt", "TOP-SECRET");
    fixture.tree.file("real/a.txt", "a");
    fixture
        .tree
        .symlink("out", fixture.tree.outside().join("secret"));
    fixture.tree.symlink("inner", "real");
    let listing = fixture
        .ok("list_files", json!({"path": ".", "recursive": true}))
        .await;
    assert_eq!(
        redact_times(&listing),
        "\
link           - <time> inner
link           - <time> out
dir            - <time> real/
file           1 <time> real/a.txt
"
    );
    assert!(!listing.contains("key.txt"));
}

#[tokio::test(flavor = "current_thread")]
async fn missing_directory_and_file_are_ordinary_errors() {
    let fixture = sample();
    let missing = fixture.err("list_files", json!({"path": "nope"})).await;
    assert!(missing.contains("nope"), "{missing}");
    let file = fixture
        .err("list_files", json!({"path": "README.md"}))
        .await;
    assert!(file.contains("not a directory"), "{file}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_expensive_pattern_is_refused_instead_of_running_for_minutes() {
    let fixture = Fixture::new();
    for i in 0..400 {
        fixture
            .tree
            .file(&format!("dir/{}-{i}.txt", "n".repeat(120)), "x");
    }
    let pattern = format!("*{}", "[a-z]".repeat(100));
    let message = fixture
        .err(
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": pattern}),
        )
        .await;
    assert!(message.contains("pattern is too expensive"), "{message}");
    // An ordinary pattern over the same tree works.
    let listing = fixture
        .ok(
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": "*-7.txt"}),
        )
        .await;
    assert_eq!(listing.lines().count(), 1, "{listing}");
}
