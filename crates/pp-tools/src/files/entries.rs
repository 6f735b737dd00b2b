//! What `move_file`, `delete_file` and `make_dir` share: an entry's prior state for a
//! revert, the opening lines a delete's card shows, and the stop check before an
//! effect.

use pp_agent::ToolContext;
use pp_gate::{EntryKind, Jail, JailError, ListOptions};
use pp_types::{ChangeRoot, FileOp, Prior, Snapshot, ToolOutput};

use super::common::decode_text;

/// Most lines a delete's card shows of the file.
pub(crate) const PREVIEW_LINES: usize = 20;
/// Most bytes a delete's card shows of the file (2 KiB).
pub(crate) const PREVIEW_BYTES: u64 = 2 * 1024;

/// The workspace-relative path an entry designates (its folder resolved, its last name
/// as written), for the card; `None` when the jail refuses it.
pub(crate) fn resolved_entry(jail: &Jail, path: &str) -> Option<String> {
    jail.probe_entry(path)
        .ok()
        .map(|probe| probe.resolved.to_string_lossy().into_owned())
}

/// The card's and the stale check's fingerprint of the entry at `path`: where its
/// folder is missing (or is not a folder), that state, so a card of a call that would
/// fail there can still be described and checked; `None` when the jail refuses the path.
pub(crate) fn entry_fingerprint(jail: &Jail, path: &str, hash_max_bytes: u64) -> Option<String> {
    match jail.fingerprint_entry(path, hash_max_bytes) {
        Ok(fingerprint) => Some(fingerprint),
        Err(JailError::NotFound { .. }) => Some("no folder".to_owned()),
        Err(JailError::NotADirectory { .. }) => Some("not under a folder".to_owned()),
        Err(_) => None,
    }
}

/// What the entry `path` holds now, for a revert: nothing, an empty folder, a file's
/// content up to `keep_up_to` bytes (its size beyond), or — a link or a special file —
/// not keepable.
pub(crate) fn entry_prior(jail: &Jail, path: &str, keep_up_to: u64) -> Option<(String, Prior)> {
    let probe = jail.probe_entry(path).ok()?;
    let resolved = probe.resolved.to_string_lossy().into_owned();
    let prior = match probe.kind {
        None => Prior::Absent,
        Some(EntryKind::Dir) => Prior::EmptyFolder,
        Some(EntryKind::Symlink) => Prior::Unreadable {
            reason: "a symbolic link is not kept".into(),
        },
        Some(EntryKind::Other) => Prior::Unreadable {
            reason: "not a regular file".into(),
        },
        Some(EntryKind::File) if probe.size > keep_up_to => Prior::TooLarge { size: probe.size },
        Some(EntryKind::File) => match jail.read(&resolved, keep_up_to) {
            Ok(content) if !content.truncated => Prior::Content(content.bytes),
            Ok(content) => Prior::TooLarge { size: content.size },
            Err(JailError::NotFound { .. }) => Prior::Absent,
            Err(error) => Prior::Unreadable {
                reason: error.to_string(),
            },
        },
    };
    Some((resolved, prior))
}

/// A snapshot of the workspace entry at `path` before `op`.
pub(crate) fn entry_snapshot(
    jail: &Jail,
    path: &str,
    op: FileOp,
    keep_up_to: u64,
) -> Vec<Snapshot> {
    entry_prior(jail, path, keep_up_to)
        .map(|(resolved, prior)| Snapshot {
            root: ChangeRoot::Workspace,
            path: resolved,
            partial: false,
            op,
            prior,
        })
        .into_iter()
        .collect()
}

/// Whether the folder `path` holds nothing.
pub(crate) fn is_empty_folder(jail: &Jail, path: &str) -> Result<bool, JailError> {
    let listing = jail.list(
        path,
        ListOptions {
            recursive: false,
            max_entries: 1,
        },
    )?;
    Ok(listing.entries.is_empty() && !listing.truncated)
}

/// The first lines of the text file `path` for a delete's card (at most
/// [`PREVIEW_LINES`] lines and [`PREVIEW_BYTES`] bytes), or why none are shown.
pub(crate) fn first_lines(jail: &Jail, path: &str) -> Result<String, String> {
    let content = jail
        .read(path, PREVIEW_BYTES)
        .map_err(|error| format!("cannot show the content: {error}"))?;
    let text = decode_text(&content.bytes, content.truncated)
        .map_err(|_| "a binary file: its content is not shown".to_owned())?;
    // At most PREVIEW_BYTES were read, so the lines are within the byte cap too.
    Ok(text.split_inclusive('\n').take(PREVIEW_LINES).collect())
}

/// `Err` with what the model reads when the task was cancelled or ran out of time
/// before the effect.
pub(crate) fn unless_stopped(context: &ToolContext, what: &str) -> Result<(), ToolOutput> {
    if context.should_stop() {
        return Err(ToolOutput::error(format!(
            "not {what}: the task was cancelled or ran out of time first"
        )));
    }
    Ok(())
}
