//! `pocketpilot eval [DIR]`: runs every case, one line each, then `N passed, N failed`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::eval::{Case, resolve_fixtures, run_case};
use crate::{Exit, exit};

/// Runs the cases under `path` (a directory of `*.json` or one file).
pub(crate) async fn run(path: &Path) -> anyhow::Result<u8> {
    let files = case_files(path)?;
    if files.is_empty() {
        return Err(Exit::usage(format!("no *.json cases in {}", path.display())).into());
    }
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let landlock = pp_sandbox::probe();
    let mut stdout = std::io::stdout().lock();
    for file in &files {
        let label = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let (label, failures) = match load(file) {
            Ok(case) if case.needs_landlock && !landlock.usable() => {
                if !crate::env::in_ci() {
                    skipped += 1;
                    writeln!(stdout, "SKIP {}: {}", case.name, landlock.describe())?;
                    continue;
                }
                let reason = format!(
                    "needs Landlock, which CI must have: {}",
                    landlock.describe()
                );
                (case.name, vec![reason])
            }
            Ok(case) => match run_case(&case).await {
                Ok(report) => (case.name, report.failures),
                Err(error) => (case.name, vec![format!("could not run: {error:#}")]),
            },
            Err(error) => (label, vec![format!("{error:#}")]),
        };
        if failures.is_empty() {
            passed += 1;
            writeln!(stdout, "PASS {label}")?;
        } else {
            failed += 1;
            writeln!(stdout, "FAIL {label}")?;
            for failure in failures {
                writeln!(stdout, "     - {failure}")?;
            }
        }
    }
    if skipped > 0 {
        writeln!(
            stdout,
            "{passed} passed, {failed} failed, {skipped} skipped"
        )?;
    } else {
        writeln!(stdout, "{passed} passed, {failed} failed")?;
    }
    Ok(if failed == 0 { exit::OK } else { exit::FAILED })
}

#[expect(
    clippy::disallowed_methods,
    reason = "case files are the operator's, named on the command line"
)]
fn case_files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)
        .map_err(|error| Exit::usage(format!("cannot read {}: {error}", path.display())))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let file = entry?.path();
        if file.extension().is_some_and(|ext| ext == "json") {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

#[expect(
    clippy::disallowed_methods,
    reason = "case files are the operator's, named on the command line"
)]
fn load(file: &Path) -> anyhow::Result<Case> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let invalid = || format!("invalid case {}", file.display());
    let mut case = Case::parse(&text).with_context(invalid)?;
    // Fixture sources are relative to the folder holding the case file; resolve them now
    // so a missing file or a link leading out is reported like any invalid case.
    let cases_dir = file
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    resolve_fixtures(&cases_dir, &case.fixtures).with_context(invalid)?;
    case.cases_dir = Some(cases_dir);
    Ok(case)
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "the test builds its own cases folder in a temp dir"
)]
mod tests {
    use super::*;

    fn case_with_fixture(source: &str) -> String {
        serde_json::json!({"name": "n", "prompt": "p", "script": [], "expect": {},
                           "fixtures": {"doc.pdf": source}})
        .to_string()
    }

    #[test]
    fn a_case_file_resolves_its_fixtures_against_its_own_folder() {
        let temp = tempfile::tempdir().unwrap();
        let cases = temp.path().join("cases");
        std::fs::create_dir_all(cases.join("fixtures")).unwrap();
        std::fs::write(cases.join("fixtures/doc.pdf"), b"%PDF").unwrap();
        std::fs::write(temp.path().join("secret.pdf"), b"TOP-SECRET").unwrap();
        std::os::unix::fs::symlink("../../secret.pdf", cases.join("fixtures/out.pdf")).unwrap();

        let good = cases.join("good.json");
        std::fs::write(&good, case_with_fixture("fixtures/doc.pdf")).unwrap();
        let case = load(&good).unwrap();
        assert_eq!(case.cases_dir.as_deref(), Some(cases.as_path()));

        for (source, wanted) in [
            ("fixtures/out.pdf", "leads outside the cases folder"),
            ("../secret.pdf", "contains `..`"),
            ("fixtures/none.pdf", "cannot be read"),
        ] {
            let file = cases.join("bad.json");
            std::fs::write(&file, case_with_fixture(source)).unwrap();
            let error = format!("{:#}", load(&file).unwrap_err());
            assert!(
                error.starts_with(&format!("invalid case {}: fixtures: ", file.display()))
                    && error.contains(wanted),
                "{source}: {error}"
            );
        }
    }
}
