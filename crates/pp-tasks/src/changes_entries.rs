//! The change log for moves, deletes and created folders (`move_file`, `delete_file`,
//! `make_dir`): their state after the call, and their reverts.
//!
//! These act on an entry as such, so their state is the jail's entry fingerprint
//! ([`Jail::fingerprint_entry`]: a folder by its identity, a link as a link). A revert
//! checks the entry is still as the agent left it, records the intent, then:
//! - `moved`: renames the entry back (never replacing anything at the old place), then
//!   puts back the file an overwriting move replaced, if any;
//! - `deleted`: writes the kept content again (a file), or creates the folder again (an
//!   empty folder); a deleted link was not kept, so it is not revertible;
//! - `folder_created`: removes the folder if it is still empty.

use pp_gate::Jail;
use pp_store::{Before, ChangeRow, NewChange};
use pp_types::{Actor, Change, ChangeKind, FileOp};

use super::{KeptFile, Place, REVERT_TOOL, RevertRefusal, finish, not_revertible};
use crate::shared::Shared;
use crate::snapshots::Snapshots;
use crate::{Error, Result};

/// Whether changes of `kind` are reverted here.
pub(super) fn is_entry_kind(kind: ChangeKind) -> bool {
    matches!(
        kind,
        ChangeKind::Moved | ChangeKind::Deleted | ChangeKind::FolderCreated
    )
}

/// Bytes and entry fingerprint of `file`'s path right after the call: for a move the
/// size of the moved file, for a delete the size of what was deleted (the entry itself
/// is gone), for a folder none.
pub(super) fn after_op(
    jail: &Jail,
    file: &KeptFile,
    hash_max_bytes: u64,
) -> (Option<u64>, Option<String>) {
    let fingerprint = jail.fingerprint_entry(&file.path, hash_max_bytes).ok();
    let bytes = match file.op {
        FileOp::Delete => file.size,
        FileOp::MoveFrom(_) => jail
            .probe_entry(&file.path)
            .ok()
            .filter(|probe| probe.is_file())
            .map(|probe| probe.size),
        FileOp::Write | FileOp::CreateFolder => None,
    };
    (bytes, fingerprint)
}

/// A refusal because the entry changed after the agent's call.
fn changed(message: String) -> Result<std::result::Result<Change, RevertRefusal>> {
    Ok(Err(RevertRefusal::ChangedSince {
        message,
        diff: None,
    }))
}

/// Reverts `row` (a move, a delete or a created folder) at `path` in `place`, whose
/// entry fingerprint right after the call was `recorded`.
pub(super) fn revert(
    shared: &Shared,
    place: &Place,
    row: &ChangeRow,
    path: &str,
    recorded: &str,
    actor: Actor,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    let (store, id, jail) = (&shared.store, &row.change.id, place.jail());
    let hash_max_bytes = shared.settings.hash_max_bytes;
    let internal = |what: &str, error: pp_gate::JailError| {
        Error::Internal(format!("{what} `{path}`: {error}"))
    };
    let now = jail
        .fingerprint_entry(path, hash_max_bytes)
        .map_err(|error| internal("fingerprinting", error))?;
    let exists = |at: &str| {
        jail.probe_entry(at)
            .map(|probe| probe.exists())
            .map_err(|error| internal("looking at", error))
    };
    let kind = row.change.kind;
    let from = row.change.from_path.as_deref();
    match (kind, from) {
        (ChangeKind::Moved, None) => {
            return not_revertible(format!(
                "change {id} cannot be reverted: where the file was is unknown"
            ));
        }
        (ChangeKind::Moved, Some(from)) => {
            if now != recorded {
                return changed(format!(
                    "`{path}` changed after the agent moved it there; moving it back would \
                     lose that change, so nothing was moved"
                ));
            }
            if exists(from)? {
                return changed(format!(
                    "something is at `{from}` again; moving `{path}` back would replace it, \
                     so nothing was moved"
                ));
            }
        }
        (ChangeKind::Deleted, _) => {
            if exists(path)? {
                return changed(format!(
                    "something is at `{path}` again; restoring the deleted one would replace \
                     it, so nothing was written"
                ));
            }
        }
        _ => {
            if now != recorded {
                return changed(format!(
                    "`{path}` is no longer the folder the agent created, so nothing was removed"
                ));
            }
        }
    }
    let restores = match &row.before {
        Before::Kept(sha256) => Some(sha256.clone()),
        _ => None,
    };
    let content = match &restores {
        Some(sha256) => Some(
            Snapshots::beside(store.path())
                .and_then(|snapshots| snapshots.get(sha256))
                .map_err(|error| Error::Internal(format!("reading the kept content: {error}")))?,
        ),
        None => None,
    };
    let intent = NewChange {
        task_id: row.change.task_id.clone(),
        approval_id: None,
        tool: REVERT_TOOL.to_owned(),
        kind: ChangeKind::Reverted,
        path: Some(path.to_owned()),
        from_path: None,
        root: row.change.root,
        bytes: None,
        // Nothing the agent made is lost by this revert: a moved entry is moved back,
        // a restored file or folder fills an empty place, a removed folder was empty.
        before: Before::Unknown,
        after_fingerprint: None,
        after_sha256: restores,
    };
    let Some(pending) = store.begin_revert(id, intent).map_err(Error::from_store)? else {
        return not_revertible(format!(
            "change {id} cannot be reverted: it was reverted meanwhile"
        ));
    };
    let abandon = |message: String| -> Result<std::result::Result<Change, RevertRefusal>> {
        store
            .abandon_revert(&pending.change.id)
            .map_err(Error::from_store)?;
        not_revertible(format!("change {id} cannot be reverted: {message}"))
    };
    let mut note = None;
    match (kind, from, &row.before) {
        (ChangeKind::Moved, Some(from), _) => {
            if let Err(error) = jail.rename(path, from, false) {
                return abandon(format!("moving `{path}` back to `{from}`: {error}"));
            }
            if let Some(bytes) = &content
                && let Err(error) = jail.write_atomic(path, bytes)
            {
                note = Some(format!(
                    " (the file the move replaced could not be restored: {error})"
                ));
            }
        }
        (ChangeKind::Deleted, _, Before::Folder) => {
            if let Err(error) = jail.create_dir_all(path) {
                return abandon(format!("creating the folder `{path}` again: {error}"));
            }
        }
        (ChangeKind::Deleted, ..) => {
            let Some(bytes) = &content else {
                return abandon("what it deleted was not kept".to_owned());
            };
            if let Err(error) = jail.write_atomic(path, bytes) {
                return abandon(format!("writing `{path}` again: {error}"));
            }
        }
        _ => match jail.remove_empty_dir(path) {
            Ok(()) => {}
            Err(pp_gate::JailError::NotEmpty { .. }) => {
                store
                    .abandon_revert(&pending.change.id)
                    .map_err(Error::from_store)?;
                return changed(format!(
                    "the folder `{path}` is not empty any more, so it was not removed"
                ));
            }
            Err(error) => return abandon(format!("removing the folder `{path}`: {error}")),
        },
    }
    let done = finish(shared, jail, &pending, row, actor, note.as_deref())?;
    Ok(Ok(done.change))
}
