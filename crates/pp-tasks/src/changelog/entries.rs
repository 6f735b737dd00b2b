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

use std::sync::Arc;

use pp_gate::Jail;
use pp_store::{Before, ChangeRow, NewChange};
use pp_types::{Change, ChangeKind};

use super::finish::{finish, not_revertible, open_snapshots};
use super::{By, ChangeLog, REVERT_TOOL, RevertRefusal};
use crate::blocking::blocking;
use crate::error::{Error, Result};
use crate::keep::place::{NotWritten, Place, resolves_to_itself, target_changed};

/// Whether changes of `kind` are reverted here.
pub(super) fn is_entry_kind(kind: ChangeKind) -> bool {
    matches!(
        kind,
        ChangeKind::Moved | ChangeKind::Deleted | ChangeKind::FolderCreated
    )
}

/// A refusal because the entry changed after the agent's call.
fn changed(message: String) -> RevertRefusal {
    RevertRefusal::ChangedSince {
        message,
        diff: None,
    }
}

/// Reverts `row` (a move, a delete or a created folder) at `path` in `place`, whose
/// entry fingerprint right after the call was `recorded`: the store calls awaited, the
/// entry work on the blocking pool.
pub(super) async fn revert(
    log: &ChangeLog,
    place: Arc<Place>,
    row: &ChangeRow,
    path: &str,
    recorded: &str,
    by: By,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    let (store, id) = (&log.book, &row.change.id);
    let hash_max_bytes = log.settings().hash_max_bytes;
    let refusal = {
        let (place, row, path, recorded) = (
            Arc::clone(&place),
            row.clone(),
            path.to_owned(),
            recorded.to_owned(),
        );
        blocking(move || check(place.jail(), &row, &path, &recorded, hash_max_bytes)).await??
    };
    if let Some(refusal) = refusal {
        return Ok(Err(refusal));
    }
    let restores = match &row.before {
        Before::Kept(sha256) => Some(sha256.clone()),
        _ => None,
    };
    let content = match &restores {
        Some(sha256) => {
            let snapshots = open_snapshots(log).await?;
            let sha256 = sha256.clone();
            Some(
                blocking(move || snapshots.get(&sha256))
                    .await?
                    .map_err(|error| {
                        Error::Internal(format!("reading the kept content: {error}"))
                    })?,
            )
        }
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
        before_mode: None,
        after_fingerprint: None,
        after_sha256: restores,
    };
    let Some(pending) = store.begin_revert(id, intent).await? else {
        return not_revertible(format!(
            "change {id} cannot be reverted: it was reverted meanwhile"
        ));
    };
    let acted = {
        let (place, row, path) = (Arc::clone(&place), row.clone(), path.to_owned());
        blocking(move || act(place.jail(), &row, &path, content.as_deref())).await?
    };
    let note = match acted {
        Acted::Done { note } => note,
        Acted::Abandoned(message) => {
            store.abandon_revert(&pending.change.id).await?;
            return not_revertible(format!("change {id} cannot be reverted: {message}"));
        }
        Acted::Changed(message) => {
            store.abandon_revert(&pending.change.id).await?;
            return Ok(Err(changed(message)));
        }
    };
    let done = finish(log, place, &pending, row, by, note.as_deref()).await?;
    Ok(Ok(done.change))
}

/// Whether the entry is still as the agent left it (on the blocking pool): `Some`
/// refusal when reverting would lose or replace something.
fn check(
    jail: &Jail,
    row: &ChangeRow,
    path: &str,
    recorded: &str,
    hash_max_bytes: u64,
) -> Result<Option<RevertRefusal>> {
    let id = &row.change.id;
    let internal = |what: &str, error: pp_gate::JailError| {
        Error::Internal(format!("{what} `{path}`: {error}"))
    };
    // The place must still be reached as the change left it (its path was recorded
    // links resolved): a link put in its folders, one leading outside included, or a
    // folder gone or turned into a file, is a change since, not a failure.
    let place_changed = || {
        changed(format!(
            "the folder of `{path}` is no longer the one the agent's call acted in (moved, \
             removed, or replaced by a link), so nothing was written"
        ))
    };
    let now = match jail.fingerprint_entry(path, hash_max_bytes) {
        Ok(now) if resolves_to_itself(jail, path, true) => now,
        Ok(_) => return Ok(Some(place_changed())),
        Err(error) if target_changed(&error) => return Ok(Some(place_changed())),
        Err(error) => return Err(internal("fingerprinting", error)),
    };
    // Where the entry goes back to (a move's old place) must be reached as recorded too.
    if let Some(from) = row.change.from_path.as_deref() {
        match jail.probe_entry(from) {
            Ok(probe) if probe.resolved == std::path::Path::new(from) => {}
            Ok(_) => return Ok(Some(place_changed())),
            Err(error) if target_changed(&error) => return Ok(Some(place_changed())),
            Err(error) => return Err(internal("looking at", error)),
        }
    }
    let exists = |at: &str| {
        jail.probe_entry(at)
            .map(|probe| probe.exists())
            .map_err(|error| internal("looking at", error))
    };
    Ok(match (row.change.kind, row.change.from_path.as_deref()) {
        (ChangeKind::Moved, None) => Some(RevertRefusal::NotRevertible(format!(
            "change {id} cannot be reverted: where the file was is unknown"
        ))),
        (ChangeKind::Moved, Some(_)) if now != recorded => Some(changed(format!(
            "`{path}` changed after the agent moved it there; moving it back would lose that \
             change, so nothing was moved"
        ))),
        (ChangeKind::Moved, Some(from)) if exists(from)? => Some(changed(format!(
            "something is at `{from}` again; moving `{path}` back would replace it, so \
             nothing was moved"
        ))),
        (ChangeKind::Moved, Some(_)) => None,
        (ChangeKind::Deleted, _) if exists(path)? => Some(changed(format!(
            "something is at `{path}` again; restoring the deleted one would replace it, so \
             nothing was written"
        ))),
        (ChangeKind::Deleted, _) => None,
        _ if now != recorded => Some(changed(format!(
            "`{path}` is no longer the folder the agent created, so nothing was removed"
        ))),
        _ => None,
    })
}

/// How the revert's own work went.
enum Acted {
    /// Done, with a note for the audit row (a part that could not be restored).
    Done { note: Option<String> },
    /// Nothing was changed; the intent is abandoned with this reason.
    Abandoned(String),
    /// Nothing was changed because the place changed since (the folder to remove is not
    /// empty any more, something appeared where the entry goes back, a folder was
    /// replaced): a change since, not a failure.
    Changed(String),
}

/// A failed step of a revert's own work: [`Acted::Changed`] when the place changed
/// since the check, else [`Acted::Abandoned`].
fn failed(what: &str, error: pp_gate::JailError) -> Acted {
    match NotWritten::from(error) {
        NotWritten::Changed(error) => {
            Acted::Changed(format!("{what}: {error}; nothing was written"))
        }
        NotWritten::Failed(error) => Acted::Abandoned(format!("{what}: {error}")),
    }
}

/// Moves the entry back, writes the deleted file or folder again, or removes the created
/// folder (on the blocking pool). `content` is what the change kept.
fn act(jail: &Jail, row: &ChangeRow, path: &str, content: Option<&[u8]>) -> Acted {
    let mut note = None;
    match (
        row.change.kind,
        row.change.from_path.as_deref(),
        &row.before,
    ) {
        (ChangeKind::Moved, Some(from), _) => {
            if let Err(error) = jail.rename(path, from, false) {
                return failed(&format!("moving `{path}` back to `{from}`"), error);
            }
            if let Some(bytes) = content
                && let Err(error) = jail.restore_file(path, bytes, row.before_mode.as_ref(), false)
            {
                note = Some(format!(
                    " (the file the move replaced could not be restored: {error})"
                ));
            }
        }
        (ChangeKind::Deleted, _, Before::Folder) => {
            if let Err(error) = jail.create_dir_all(path) {
                return failed(&format!("creating the folder `{path}` again"), error);
            }
        }
        (ChangeKind::Deleted, ..) => {
            let Some(bytes) = content else {
                return Acted::Abandoned("what it deleted was not kept".to_owned());
            };
            // Only where nothing is (a file that appeared since is never replaced), in
            // the folder it was deleted from (never created again), with its mode.
            if let Err(error) = jail.restore_file(path, bytes, row.before_mode.as_ref(), false) {
                return failed(&format!("writing `{path}` again"), error);
            }
        }
        _ => match jail.remove_empty_dir(path) {
            Ok(()) => {}
            Err(pp_gate::JailError::NotEmpty { .. }) => {
                return Acted::Changed(format!(
                    "the folder `{path}` is not empty any more, so it was not removed"
                ));
            }
            Err(error) => {
                return failed(&format!("removing the folder `{path}`"), error);
            }
        },
    }
    Acted::Done { note }
}
