//! Building and snapshotting the throw-away directory of one eval case.
#![expect(
    clippy::disallowed_methods,
    reason = "the eval harness builds and inspects its own temp tree; these paths come from \
              the case file written by the operator, never from the model"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::case::{WorkspaceSpec, check_location, check_source};

/// Creates `workspace/` and `outside/` side by side under `base`.
pub(crate) fn create_halves(base: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let workspace = base.join("workspace");
    let outside = base.join("outside");
    std::fs::create_dir(&workspace).context("cannot create workspace/")?;
    std::fs::create_dir(&outside).context("cannot create outside/")?;
    Ok((workspace, outside))
}

/// Fills the workspace with the case's files, directories and links.
pub(crate) fn build_workspace(
    workspace: &Path,
    spec: &WorkspaceSpec,
    outside: &Path,
) -> anyhow::Result<()> {
    for dir in &spec.dirs {
        std::fs::create_dir_all(place(workspace, dir)?)
            .with_context(|| format!("cannot create dir {dir}"))?;
    }
    for (relative, content) in &spec.files {
        write_file(&place(workspace, relative)?, content)?;
    }
    for (relative, target) in &spec.symlinks {
        let link = place(workspace, relative)?;
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // The target is free: escape cases need links that point outside.
        let target = substitute(target, outside);
        symlink(&target, &link).with_context(|| format!("cannot create link {relative}"))?;
    }
    Ok(())
}

/// Where each fixture's source is on disk: workspace path → the source's canonical path.
/// A source must be a regular file inside `cases_dir` once every link is followed; a
/// missing file, a folder or a link leading out of the cases folder is refused naming
/// the fixture, before anything is built.
pub(crate) fn resolve_fixtures(
    cases_dir: &Path,
    fixtures: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let root = std::fs::canonicalize(cases_dir)
        .with_context(|| format!("cannot read the cases folder {}", cases_dir.display()))?;
    let mut resolved = BTreeMap::new();
    for (location, source) in fixtures {
        check_source(source).map_err(|problem| anyhow::anyhow!("fixtures: {problem}"))?;
        let refuse = |why: String| {
            anyhow::anyhow!(
                "fixtures: source `{}` (for `{}`) {why}",
                source.escape_debug(),
                location.escape_debug()
            )
        };
        let path = std::fs::canonicalize(root.join(source))
            .map_err(|error| refuse(format!("cannot be read: {error}")))?;
        if !path.starts_with(&root) {
            return Err(refuse(format!(
                "leads outside the cases folder {} (through a link)",
                root.display()
            )));
        }
        if !std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) {
            return Err(refuse("is not a file".to_owned()));
        }
        resolved.insert(location.clone(), path);
    }
    Ok(resolved)
}

/// Copies the case's fixtures into the workspace (after [`build_workspace`]'s files and
/// directories; a location never goes through a link the case created).
pub(crate) fn build_fixtures(
    workspace: &Path,
    cases_dir: Option<&Path>,
    fixtures: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    if fixtures.is_empty() {
        return Ok(());
    }
    let Some(cases_dir) = cases_dir else {
        anyhow::bail!("fixtures: the case was not loaded from a cases folder");
    };
    for (location, source) in resolve_fixtures(cases_dir, fixtures)? {
        let target = place(workspace, &location)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(&source, &target)
            .with_context(|| format!("cannot copy fixture {}", source.display()))?;
    }
    Ok(())
}

/// Writes the outside files.
pub(crate) fn build_outside(
    outside: &Path,
    files: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    for (relative, content) in files {
        write_file(&place(outside, relative)?, content)?;
    }
    Ok(())
}

/// Creates `skills/` beside the workspace with the case's skill files; returns it.
pub(crate) fn build_skills(
    base: &Path,
    files: &BTreeMap<String, String>,
) -> anyhow::Result<PathBuf> {
    let skills = base.join("skills");
    std::fs::create_dir(&skills).context("cannot create skills/")?;
    build_outside(&skills, files)?;
    Ok(skills)
}

/// Creates `data/` beside the workspace (the case's data directory) with `memory.md`
/// when the case sets `memory`; returns it.
pub(crate) fn build_data(base: &Path, memory: Option<&str>) -> anyhow::Result<PathBuf> {
    let data = base.join("data");
    std::fs::create_dir(&data).context("cannot create data/")?;
    if let Some(memory) = memory {
        write_file(&data.join("memory.md"), memory)?;
    }
    Ok(data)
}

/// The memory file's content after the run; `None` when there is none.
pub(crate) fn read_memory(base: &Path) -> Option<String> {
    std::fs::read_to_string(base.join("data").join("memory.md")).ok()
}

/// Where `relative` is created under `root`: only a relative path without `..` (see
/// [`check_location`]), and never through a link an earlier entry created, so nothing
/// a case builds lands outside its temp tree.
fn place(root: &Path, relative: &str) -> anyhow::Result<PathBuf> {
    check_location(relative).map_err(|problem| anyhow::anyhow!(problem))?;
    let mut path = root.to_path_buf();
    for component in Path::new(relative).components() {
        path.push(component);
        if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_symlink()) {
            anyhow::bail!(
                "`{}` goes through a link the case created",
                relative.escape_debug()
            );
        }
    }
    Ok(path)
}

/// Replaces `$OUTSIDE` with the outside directory's absolute path.
pub(crate) fn substitute(text: &str, outside: &Path) -> String {
    text.replace("$OUTSIDE", &outside.to_string_lossy())
}

/// A snapshot of everything under `base` except its `workspace/` entry: path → kind and
/// content (or link target).
pub(crate) fn snapshot_outside_workspace(base: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut entries = BTreeMap::new();
    walk(base, base, &mut entries)?;
    Ok(entries)
}

fn walk(base: &Path, dir: &Path, entries: &mut BTreeMap<String, String>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let relative = path
            .strip_prefix(base)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if dir == base && relative == "workspace" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_symlink() {
            let target = std::fs::read_link(&path)?;
            entries.insert(relative, format!("link -> {}", target.display()));
        } else if meta.is_dir() {
            entries.insert(relative.clone(), "dir".to_owned());
            walk(base, &path, entries)?;
        } else {
            let bytes = std::fs::read(&path)?;
            entries.insert(
                relative,
                format!("file {}", String::from_utf8_lossy(&bytes)),
            );
        }
    }
    Ok(())
}

/// Reads a workspace file for `expect.files`; `None` when it does not exist.
pub(crate) fn read_workspace_file(workspace: &Path, relative: &str) -> Option<String> {
    std::fs::read(workspace.join(relative))
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether a workspace path exists (a dangling link counts as existing).
pub(crate) fn workspace_entry_exists(workspace: &Path, relative: &str) -> bool {
    std::fs::symlink_metadata(workspace.join(relative)).is_ok()
}

fn write_file(path: &Path, content: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, content).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &str, _link: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "symbolic links in eval cases need a Unix system",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cases/` with `fixtures/doc.pdf` (binary bytes), a folder, a link inside, and
    /// links leading out to `secret.pdf` beside `cases/`.
    fn cases_tree() -> (tempfile::TempDir, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let cases = temp.path().join("cases");
        std::fs::create_dir_all(cases.join("fixtures/sub")).unwrap();
        std::fs::write(
            cases.join("fixtures/doc.pdf"),
            b"%PDF-1.4\n\x00\xff\xfe binary",
        )
        .unwrap();
        std::fs::write(temp.path().join("secret.pdf"), b"TOP-SECRET").unwrap();
        symlink("doc.pdf", &cases.join("fixtures/inside-link.pdf")).unwrap();
        symlink("../../secret.pdf", &cases.join("fixtures/out-link.pdf")).unwrap();
        symlink(
            temp.path().to_str().unwrap(),
            &cases.join("fixtures/out-dir"),
        )
        .unwrap();
        (temp, cases)
    }

    fn one(location: &str, source: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(location.to_owned(), source.to_owned())])
    }

    #[test]
    fn fixtures_are_copied_byte_for_byte_into_the_workspace() {
        let (temp, cases) = cases_tree();
        let workspace = temp.path().join("workspace");
        std::fs::create_dir(&workspace).unwrap();
        let fixtures = BTreeMap::from([
            ("docs/report.pdf".to_owned(), "fixtures/doc.pdf".to_owned()),
            (
                "same.pdf".to_owned(),
                "./fixtures/inside-link.pdf".to_owned(),
            ),
        ]);
        build_fixtures(&workspace, Some(&cases), &fixtures).unwrap();
        let original = std::fs::read(cases.join("fixtures/doc.pdf")).unwrap();
        assert_eq!(
            std::fs::read(workspace.join("docs/report.pdf")).unwrap(),
            original
        );
        // A link inside the cases folder is followed; the copy is a plain file.
        let copied = workspace.join("same.pdf");
        assert!(!std::fs::symlink_metadata(&copied).unwrap().is_symlink());
        assert_eq!(std::fs::read(copied).unwrap(), original);
    }

    #[test]
    fn sources_leading_out_of_the_cases_folder_are_refused() {
        let (temp, cases) = cases_tree();
        let workspace = temp.path().join("workspace");
        std::fs::create_dir(&workspace).unwrap();
        for (source, wanted) in [
            ("fixtures/out-link.pdf", "leads outside the cases folder"),
            (
                "fixtures/out-dir/secret.pdf",
                "leads outside the cases folder",
            ),
            ("../secret.pdf", "contains `..`"),
            ("fixtures/../../secret.pdf", "contains `..`"),
            (
                temp.path().join("secret.pdf").to_str().unwrap(),
                "is absolute",
            ),
            ("fixtures/missing.pdf", "cannot be read"),
            ("fixtures/sub", "is not a file"),
        ] {
            let error = resolve_fixtures(&cases, &one("a.pdf", source))
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with("fixtures: source `") && error.contains(wanted),
                "{source}: {error}"
            );
            let error = build_fixtures(&workspace, Some(&cases), &one("a.pdf", source))
                .unwrap_err()
                .to_string();
            assert!(error.contains(wanted), "{source}: {error}");
            assert!(
                !workspace.join("a.pdf").exists(),
                "{source}: nothing copied"
            );
        }
        let secret_copied = std::fs::read_dir(&workspace).unwrap().next().is_some();
        assert!(!secret_copied, "the workspace stays empty");
    }

    #[test]
    fn a_fixture_location_never_goes_through_a_link_the_case_made() {
        let (temp, cases) = cases_tree();
        let workspace = temp.path().join("workspace");
        let outside = temp.path().join("outside");
        std::fs::create_dir(&workspace).unwrap();
        std::fs::create_dir(&outside).unwrap();
        symlink(outside.to_str().unwrap(), &workspace.join("out")).unwrap();
        let error = build_fixtures(
            &workspace,
            Some(&cases),
            &one("out/x.pdf", "fixtures/doc.pdf"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("goes through a link"), "{error}");
        assert!(!outside.join("x.pdf").exists());
    }

    #[test]
    fn fixtures_need_the_cases_folder() {
        let temp = tempfile::tempdir().unwrap();
        let error = build_fixtures(temp.path(), None, &one("a.pdf", "b.pdf"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not loaded from a cases folder"), "{error}");
        build_fixtures(temp.path(), None, &BTreeMap::new()).unwrap();
    }
}
