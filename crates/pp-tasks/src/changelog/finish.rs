//! What every revert shares, whatever its kind: the snapshot store, a refusal that
//! nothing can be reverted, and recording a revert done with its audit row.

use std::sync::Arc;

use pp_store::{Before, ChangeRow};
use pp_types::{AuditAction, Change, ChangeKind, NewAudit};

use super::{By, ChangeLog, RevertRefusal};
use crate::blocking::blocking;
use crate::error::{Error, Result};
use crate::keep::place::{Place, no_data_dir};
use crate::keep::snapshots::Snapshots;

/// The snapshot store in the data directory, opened on the blocking pool.
pub(super) async fn open_snapshots(log: &ChangeLog) -> Result<Arc<Snapshots>> {
    let data_dir = log.service.data_dir().ok_or_else(no_data_dir)?;
    blocking(move || Snapshots::open(&data_dir).map(Arc::new))
        .await?
        .map_err(|error| Error::Internal(format!("opening the snapshot store: {error}")))
}

pub(super) fn not_revertible(
    message: impl Into<String>,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    Ok(Err(RevertRefusal::NotRevertible(message.into())))
}

/// Records revert `pending` (of change `of`) done, with its audit row: the file's state
/// after the revert is read on the blocking pool.
pub(super) async fn finish(
    log: &ChangeLog,
    place: Arc<Place>,
    pending: &ChangeRow,
    of: &ChangeRow,
    by: By,
    note: Option<&str>,
) -> Result<ChangeRow> {
    let path = pending.change.path.clone().unwrap_or_default();
    let hash_max_bytes = log.settings().hash_max_bytes;
    let (fingerprint, bytes) = {
        let path = path.clone();
        blocking(move || {
            let jail = place.jail();
            let fingerprint = jail.fingerprint_with(&path, hash_max_bytes).ok();
            let bytes = jail
                .probe(&path)
                .ok()
                .filter(|probe| probe.is_file())
                .map(|probe| probe.size);
            (fingerprint, bytes)
        })
        .await?
    };
    let what = match (of.change.kind, &of.before) {
        (ChangeKind::Moved, _) => format!(
            "moved `{path}` back to `{}`",
            of.change.from_path.as_deref().unwrap_or("?")
        ),
        (ChangeKind::Deleted, _) => "restored what the agent deleted".to_owned(),
        (ChangeKind::FolderCreated, _) => "removed the folder the agent created".to_owned(),
        (_, Before::Absent) => "deleted the file the agent created".to_owned(),
        _ => "restored the content the agent replaced".to_owned(),
    };
    let audit = NewAudit {
        actor: Some(by.actor),
        user: by.user,
        tool: Some(of.change.tool.clone()),
        target: Some(path),
        approval_id: of.change.approval_id.clone(),
        detail: Some(format!(
            "reverted change {} ({}): {what}{}",
            of.change.id,
            of.change.kind.as_str(),
            note.unwrap_or_default()
        )),
        ..NewAudit::new(AuditAction::ChangeReverted)
    };
    Ok(log
        .book
        .finish_revert(&pending.change.id, fingerprint.as_deref(), bytes, audit)
        .await?)
}
