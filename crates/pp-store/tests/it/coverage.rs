//! The coverage rule: every store method is called by a test that runs on both backends.
//!
//! It lists every method of the table in `src/store/methods.rs` (its `fn NAME(` entries)
//! and every `pub async fn NAME` of `src/store/mod.rs`
//! and fails, naming each, for the methods no generic test file (`tests/it/*.rs` but
//! `main.rs`, `backend.rs` and this one) calls as `.NAME(` or `::NAME(`. A generic file
//! holds only `both!` tests, so a call there runs on SQLite and on PostgreSQL; the
//! SQLite-only tests in `tests/it/sqlite/` do not count.

use std::path::{Path, PathBuf};

/// Methods that need no generic test, each with the reason.
const EXEMPT: &[(&str, &str)] = &[(
    "restore_file",
    "takes two file paths and no database: an SQLite file operation by definition",
)];

/// Every method of the `store_methods!` table in `file` (its entries are `fn NAME(`,
/// indented by four spaces).
fn table_methods(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("    fn "))
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// Files in `tests/it` that are not generic test files.
const NOT_GENERIC: &[&str] = &["main.rs", "backend.rs", "coverage.rs"];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `pub async fn` name in `file`.
fn async_methods(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    text.split("pub async fn ")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// The generic test files with their text, comments left out.
fn generic_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(crate_dir().join("tests/it"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter(|path| !NOT_GENERIC.iter().any(|name| path.ends_with(name)))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code: Vec<&str> = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, code.join("\n"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_store_method_is_called_by_a_test_on_both_backends() {
    let store = crate_dir().join("src/store");
    let mut methods = table_methods(&store.join("methods.rs"));
    methods.extend(async_methods(&store.join("mod.rs")));
    assert!(methods.len() > 70, "found only {methods:?}");
    let files = generic_files();
    let uncovered: Vec<&String> = methods
        .iter()
        .filter(|name| !EXEMPT.iter().any(|(exempt, _)| exempt == name))
        .filter(|name| {
            let (call, path_call) = (format!(".{name}("), format!("::{name}("));
            !files
                .iter()
                .any(|(_, code)| code.contains(&call) || code.contains(&path_call))
        })
        .collect();
    assert!(
        uncovered.is_empty(),
        "store methods no test runs on both backends (add a both! test calling them): {}",
        uncovered
            .iter()
            .map(|name| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
fn generic_test_files_hold_only_tests_for_both_backends() {
    let files = generic_files();
    assert!(
        files.len() > 10,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (name, code) in &files {
        for plain in ["#[test]", "#[tokio::test"] {
            assert!(
                !code.contains(plain),
                "{name} has a {plain} test: register generic tests with both!(NAME), and \
                 move SQLite-only ones to tests/it/sqlite/"
            );
        }
        assert!(code.contains("both!("), "{name} registers no both! test");
    }
}
