//! The change log's rows, read the same way by both backends, and the columns of a
//! file mode.

use pp_types::{ApprovalId, Change, ChangeId, ChangeKind, ChangeRoot, FileMode, TaskId, Timestamp};

use super::columns::{Columns, FromColumns};
use crate::error::{Error, Result};
use crate::types::{Before, ChangeRow, ChangeState};

/// A `changes` row before decoding.
pub(crate) struct RawChange {
    id: String,
    task_id: String,
    approval_id: Option<String>,
    tool: String,
    kind: String,
    path: Option<String>,
    bytes: Option<i64>,
    at: i64,
    before_state: String,
    before_sha256: Option<String>,
    after_fingerprint: Option<String>,
    after_sha256: Option<String>,
    reverts: Option<String>,
    reverted_by: Option<String>,
    state: String,
    root: String,
    from_path: Option<String>,
    before_mode: Option<i64>,
    before_uid: Option<i64>,
    before_gid: Option<i64>,
}

/// A mode and owner from their three columns (`None` without a mode).
fn mode_from_columns(mode: Option<i64>, uid: Option<i64>, gid: Option<i64>) -> Option<FileMode> {
    let id = |value: Option<i64>| value.and_then(|value| u32::try_from(value).ok());
    Some(FileMode {
        mode: id(mode)?,
        uid: id(uid),
        gid: id(gid),
    })
}

/// A mode and owner as their three columns.
pub(crate) fn mode_columns(mode: Option<&FileMode>) -> [Option<i64>; 3] {
    match mode {
        Some(mode) => [
            Some(i64::from(mode.mode)),
            mode.uid.map(i64::from),
            mode.gid.map(i64::from),
        ],
        None => [None; 3],
    }
}

impl FromColumns for RawChange {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.text()?,
            task_id: columns.text()?,
            approval_id: columns.text_opt()?,
            tool: columns.text()?,
            kind: columns.text()?,
            path: columns.text_opt()?,
            bytes: columns.int_opt()?,
            at: columns.int()?,
            before_state: columns.text()?,
            before_sha256: columns.text_opt()?,
            after_fingerprint: columns.text_opt()?,
            after_sha256: columns.text_opt()?,
            reverts: columns.text_opt()?,
            reverted_by: columns.text_opt()?,
            state: columns.text()?,
            root: columns.text()?,
            from_path: columns.text_opt()?,
            before_mode: columns.int_opt()?,
            before_uid: columns.int_opt()?,
            before_gid: columns.int_opt()?,
        })
    }
}

impl RawChange {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<ChangeRow> {
        let corrupt = |column: &'static str, value: &str| Error::Corrupt {
            table: "changes",
            column,
            id: self.id.clone(),
            source: serde::de::Error::custom(format!("unknown value `{value}`")),
        };
        let kind = ChangeKind::parse(&self.kind).ok_or_else(|| corrupt("kind", &self.kind))?;
        let before = match (self.before_state.as_str(), self.before_sha256.clone()) {
            ("absent", _) => Before::Absent,
            ("kept", Some(sha256)) => Before::Kept(sha256),
            ("not_kept", _) => Before::NotKept,
            ("expired", _) => Before::Expired,
            ("folder", _) => Before::Folder,
            ("none", _) => Before::Unknown,
            (other, _) => return Err(corrupt("before_state", other)),
        };
        let root = ChangeRoot::parse(&self.root).ok_or_else(|| corrupt("root", &self.root))?;
        let state = ChangeState::parse(&self.state).ok_or_else(|| corrupt("state", &self.state))?;
        let revertible = matches!(
            kind,
            ChangeKind::Created
                | ChangeKind::Overwritten
                | ChangeKind::Edited
                | ChangeKind::Moved
                | ChangeKind::Deleted
                | ChangeKind::FolderCreated
        ) && matches!(before, Before::Absent | Before::Kept(_) | Before::Folder)
            && (kind != ChangeKind::Moved || self.from_path.is_some())
            && self.reverted_by.is_none()
            && state == ChangeState::Done
            && self.path.is_some();
        Ok(ChangeRow {
            change: Change {
                id: ChangeId(self.id),
                task_id: TaskId(self.task_id),
                approval_id: self.approval_id.map(ApprovalId),
                tool: self.tool,
                kind,
                path: self.path,
                from_path: self.from_path,
                root,
                bytes: self.bytes.and_then(|bytes| u64::try_from(bytes).ok()),
                at: Timestamp::from_millis(self.at),
                revertible,
                reverted_by: self.reverted_by.map(ChangeId),
            },
            before,
            before_mode: mode_from_columns(self.before_mode, self.before_uid, self.before_gid),
            after_fingerprint: self.after_fingerprint,
            after_sha256: self.after_sha256,
            reverts: self.reverts.map(ChangeId),
            state,
        })
    }
}
