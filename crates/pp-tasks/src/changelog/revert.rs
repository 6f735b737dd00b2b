//! The operator's revert of a change, and the revert intents a crash left `pending`.

use std::sync::Arc;
use std::time::Duration;

use pp_gate::Jail;
use pp_store::{Before, ChangeRow, ChangeState, NewChange};
use pp_types::{Actor, Change, ChangeId, ChangeKind, TaskId};

use super::finish::{finish, not_revertible, open_snapshots};
use super::{By, ChangeLog, REVERT_GRACE, REVERT_TOOL, RevertRefusal, entries};
use crate::blocking::blocking;
use crate::error::{Error, Result};
use crate::keep::place::{Current, NotWritten, Place, current, resolves_to_itself, target_changed};
use crate::keep::snapshots::{Snapshots, sha256_hex};

/// [`ChangeLog::revert`]: the store calls awaited, the file work (fingerprints,
/// snapshots, the write) on the blocking pool.
pub(super) async fn revert(
    log: &ChangeLog,
    id: &ChangeId,
    by: By,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    let store = &log.book;
    let row = store.change(id).await?;
    resolve_pending(log, Some(&row.change.task_id), REVERT_GRACE).await?;
    let row = store.change(id).await?;
    let refusal = match (&row.change.kind, &row.before, &row.change.reverted_by) {
        (ChangeKind::Reverted, ..) => Some("a revert cannot itself be reverted".to_owned()),
        (ChangeKind::EffectsUnknown, ..) => {
            Some("its effects are unknown to PocketPilot: nothing was kept".to_owned())
        }
        (_, _, Some(by)) => Some(format!("it was already reverted by {by}")),
        (_, Before::NotKept, _) => Some(format!(
            "what it replaced was not kept (larger than [revert] max_bytes = {} bytes, or \
             unreadable)",
            log.settings().revert.max_bytes
        )),
        (_, Before::Expired, _) => Some(format!(
            "its snapshot was pruned after [revert] retain_days ({} days)",
            log.settings().revert.retain.as_secs() / 86_400
        )),
        (_, Before::Unknown, _) => Some("nothing was kept".to_owned()),
        _ if row.state != ChangeState::Done => Some("a revert of it is under way".to_owned()),
        _ => None,
    };
    if let Some(reason) = refusal {
        return not_revertible(format!("change {id} cannot be reverted: {reason}"));
    }
    let (Some(path), Some(recorded)) = (row.change.path.clone(), row.after_fingerprint.clone())
    else {
        return not_revertible(format!(
            "change {id} cannot be reverted: the file's state after the write is unknown"
        ));
    };
    let task = log.service.task(&row.change.task_id).await?;
    let root = log.service.workspace_root(&task)?;
    let place = Place::open_off_thread(row.change.root, root, log.service.memory()).await?;
    if !place.allows(&path) {
        return not_revertible(format!(
            "change {id} cannot be reverted: `{path}` is not a file a revert may write"
        ));
    }
    if entries::is_entry_kind(row.change.kind) {
        return entries::revert(log, place, &row, &path, &recorded, by).await;
    }
    let snapshots = open_snapshots(log).await?;
    let checked = {
        let (place, snapshots, row, path) = (
            Arc::clone(&place),
            Arc::clone(&snapshots),
            row.clone(),
            path.clone(),
        );
        let (hash_max_bytes, max_bytes) = (
            log.settings().hash_max_bytes,
            log.settings().revert.max_bytes,
        );
        blocking(move || {
            keep_agent_version(
                place.jail(),
                &snapshots,
                &row,
                &path,
                &recorded,
                (hash_max_bytes, max_bytes),
            )
        })
        .await??
    };
    let (kept, agent_version) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let restores = match &row.before {
        Before::Kept(sha256) => Some(sha256.clone()),
        _ => None,
    };
    let intent = NewChange {
        task_id: row.change.task_id.clone(),
        approval_id: None,
        tool: REVERT_TOOL.to_owned(),
        kind: ChangeKind::Reverted,
        path: Some(path.clone()),
        from_path: None,
        root: row.change.root,
        bytes: None,
        before: kept,
        before_mode: None,
        after_fingerprint: None,
        after_sha256: restores.clone(),
    };
    let Some(pending) = store.begin_revert(id, intent).await? else {
        return not_revertible(format!(
            "change {id} cannot be reverted: it was reverted meanwhile"
        ));
    };
    let written = {
        let (place, path, mode) = (Arc::clone(&place), path.clone(), row.before_mode);
        blocking(move || match &restores {
            Some(sha256) => snapshots
                .get(sha256)
                .map_err(|error| NotWritten::Failed(error.to_string()))
                .and_then(|bytes| {
                    place.restore(&path, Some(&bytes), mode.as_ref(), &agent_version)
                }),
            None => place.restore(&path, None, None, &agent_version),
        })
        .await?
    };
    match written {
        Ok(()) => {}
        Err(NotWritten::Changed(error)) => {
            store.abandon_revert(&pending.change.id).await?;
            return Ok(Err(RevertRefusal::ChangedSince {
                message: format!(
                    "`{path}` changed after the agent's write ({error}), so nothing was written"
                ),
                diff: None,
            }));
        }
        Err(NotWritten::Failed(error)) => {
            store.abandon_revert(&pending.change.id).await?;
            return not_revertible(format!("change {id} cannot be reverted: `{path}`: {error}"));
        }
    }
    let done = finish(log, place, &pending, &row, by, None).await?;
    Ok(Ok(done.change))
}

/// The file checks of a revert, on the blocking pool: refused when `path` changed since
/// the agent's write (fingerprint `recorded`, or the very content it wrote); otherwise
/// keeps the agent's version as a snapshot, so a revert loses nothing, and returns it.
fn keep_agent_version(
    jail: &Jail,
    snapshots: &Snapshots,
    row: &ChangeRow,
    path: &str,
    recorded: &str,
    (hash_max_bytes, max_bytes): (u64, u64),
) -> Result<std::result::Result<(Before, Current), RevertRefusal>> {
    let id = &row.change.id;
    // The fingerprint of what is at `path` now, if it is still reached as the change
    // left it: a folder there, a link put at it or in its folders (one leading outside
    // included) mean it changed since, not that the revert failed.
    let now = match jail.fingerprint_with(path, hash_max_bytes) {
        Ok(now) if resolves_to_itself(jail, path, false) => Some(now),
        Ok(_) => None,
        Err(error) if target_changed(&error) => None,
        Err(error) => {
            return Err(Error::Internal(format!("fingerprinting `{path}`: {error}")));
        }
    };
    let agent_version = match now {
        Some(_) => match current(jail, path, max_bytes) {
            Ok(version) => Some(version),
            Err(error) if target_changed(&error) => None,
            Err(error) => return Err(Error::Internal(format!("reading `{path}`: {error}"))),
        },
        None => None,
    };
    // The same content as the agent wrote counts as unchanged even if the file was
    // rewritten (new inode or times): reverting it loses nothing.
    let same_content = match (&agent_version, &row.after_sha256) {
        (Some(Current::Content(bytes)), Some(sha256)) => sha256_hex(bytes) == *sha256,
        _ => false,
    };
    let unchanged = now.as_deref() == Some(recorded) || same_content;
    let agent_version = match (unchanged, agent_version) {
        (true, Some(version)) => version,
        (_, version) => {
            let diff = version
                .as_ref()
                .and_then(|version| changed_since_diff(snapshots, row, path, version));
            return Ok(Err(RevertRefusal::ChangedSince {
                message: format!(
                    "`{path}` changed after the agent's write; reverting would overwrite that \
                     change, so nothing was written"
                ),
                diff,
            }));
        }
    };
    let kept = match &agent_version {
        Current::Absent => Before::Absent,
        Current::Content(bytes) => Before::Kept(
            snapshots
                .put(bytes)
                .map_err(|error| Error::Internal(format!("keeping `{path}`: {error}")))?,
        ),
        Current::TooLarge => {
            return Ok(Err(RevertRefusal::NotRevertible(format!(
                "change {id} cannot be reverted: the agent's version of `{path}` is larger \
                 than [revert] max_bytes and could not be kept"
            ))));
        }
    };
    Ok(Ok((kept, agent_version)))
}

/// The diff a refused revert shows: the agent's version (kept after its write) to the
/// file now; `None` when either is not kept text.
fn changed_since_diff(
    snapshots: &Snapshots,
    row: &ChangeRow,
    path: &str,
    now: &Current,
) -> Option<String> {
    let agent = match &row.after_sha256 {
        Some(sha256) => snapshots.get(sha256).ok()?,
        None => return None,
    };
    let now = match now {
        Current::Absent => Vec::new(),
        Current::Content(bytes) => bytes.clone(),
        Current::TooLarge => return None,
    };
    let (agent, now) = (
        std::str::from_utf8(&agent).ok()?,
        std::str::from_utf8(&now).ok()?,
    );
    Some(
        similar::TextDiff::configure()
            .timeout(Duration::from_millis(500))
            .diff_lines(agent, now)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string(),
    )
}

/// Resolves revert intents left `pending` longer than `grace` (of `task`, or all): done
/// when the file holds what the revert restores (the write happened before a crash),
/// abandoned otherwise (the agent's version stays kept in the intent's row either way).
pub(super) async fn resolve_pending(
    log: &ChangeLog,
    task: Option<&TaskId>,
    grace: Duration,
) -> Result<usize> {
    let store = &log.book;
    let pending = store.pending_reverts(task).await?;
    let now = store.now();
    let mut resolved = 0;
    for intent in pending {
        if intent.change.at.saturating_add(grace) > now {
            continue;
        }
        let (Some(of), Some(path)) = (intent.reverts.as_ref(), intent.change.path.clone()) else {
            store.abandon_revert(&intent.change.id).await?;
            continue;
        };
        let of = store.change(of).await?;
        let task = log.service.task(&intent.change.task_id).await?;
        let Ok(root) = log.service.workspace_root(&task) else {
            continue;
        };
        let Ok(place) = Place::open_off_thread(of.change.root, root, log.service.memory()).await
        else {
            continue;
        };
        let restored = {
            let (place, of) = (Arc::clone(&place), of.clone());
            let max_bytes = log.settings().revert.max_bytes;
            blocking(move || was_restored(place.jail(), &of, &path, max_bytes)).await?
        };
        if restored {
            finish(
                log,
                place,
                &intent,
                &of,
                By {
                    actor: Actor::Operator,
                    user: None,
                },
                Some(" (completed after an interruption)"),
            )
            .await?;
        } else {
            store.abandon_revert(&intent.change.id).await?;
        }
        resolved += 1;
    }
    Ok(resolved)
}

/// Whether `path` holds what the revert of `of` restores (on the blocking pool).
fn was_restored(jail: &Jail, of: &ChangeRow, path: &str, max_bytes: u64) -> bool {
    let restored = match (&of.before, current(jail, path, max_bytes)) {
        (Before::Folder, _) => jail
            .probe_entry(path)
            .is_ok_and(|probe| probe.kind == Some(pp_gate::EntryKind::Dir)),
        (Before::Absent, Ok(Current::Absent)) => true,
        (Before::Kept(sha256), Ok(Current::Content(bytes))) => sha256_hex(&bytes) == *sha256,
        _ => false,
    };
    // A move's revert also put the entry back where it was.
    restored
        && of
            .change
            .from_path
            .as_deref()
            .is_none_or(|from| jail.probe_entry(from).is_ok_and(|probe| probe.exists()))
}
