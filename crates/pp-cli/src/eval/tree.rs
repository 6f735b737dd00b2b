//! Building and snapshotting the throw-away directory of one eval case.
#![expect(
    clippy::disallowed_methods,
    reason = "the eval harness builds and inspects its own temp tree; these paths come from \
              the case file written by the operator, never from the model"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::case::{WorkspaceSpec, check_location};

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
