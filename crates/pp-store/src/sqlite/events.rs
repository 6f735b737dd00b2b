//! Events: append-only, with one global sequence number across all tasks.

use pp_types::{Event, NewAudit, StoredEvent, TaskId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore as Store;
use super::rows::{self, EVENT_COLUMNS};
use crate::error::{Error, Result};
use crate::mapping::{self, RawEvent};
use crate::types::{NewChange, NewModelCall};

impl Store {
    /// Appends `events` to `task` in one transaction and returns them with their sequence
    /// numbers ([`crate::Error::NotFound`] if the task does not exist).
    pub(crate) fn append_events(
        &self,
        task: &TaskId,
        events: &[Event],
    ) -> Result<Vec<StoredEvent>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        self.write(|transaction| {
            ensure_exists(transaction, task)?;
            insert(transaction, task, events.to_vec(), now)
        })
    }

    /// Appends `events` to `task` and the `audit` rows they caused, in one transaction:
    /// an approved call's result is never stored without its audit row, nor the other
    /// way round.
    pub(crate) fn append_events_with_audit(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
    ) -> Result<Vec<StoredEvent>> {
        self.append_events_with_records(task, events, audit, Vec::new())
    }

    /// [`crate::Store::append_events_with_audit`] plus the change-log rows the approved call's
    /// outcome produced, all in one transaction.
    pub(crate) fn append_events_with_records(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
        changes: Vec<NewChange>,
    ) -> Result<Vec<StoredEvent>> {
        self.append_events_with_calls(task, events, audit, changes, Vec::new())
    }

    /// [`crate::Store::append_events_with_records`] plus the model calls the events report
    /// (their `assistant_message` events carry the usage), all in one transaction, so a
    /// task's usage and its events never disagree.
    pub(crate) fn append_events_with_calls(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
        changes: Vec<NewChange>,
        calls: Vec<NewModelCall>,
    ) -> Result<Vec<StoredEvent>> {
        if events.is_empty() && audit.is_empty() && changes.is_empty() && calls.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        self.write(|transaction| {
            ensure_exists(transaction, task)?;
            let stored = insert(transaction, task, events.to_vec(), now)?;
            for entry in audit {
                super::audit::insert(transaction, entry, now)?;
            }
            for change in changes {
                super::changes::insert(transaction, change, crate::types::ChangeState::Done, now)?;
            }
            super::model_calls::insert(transaction, task, calls, now)?;
            Ok(stored)
        })
    }

    /// The task's events with `seq > after_seq`, oldest first (`after_seq = 0`: all).
    pub(crate) fn task_events(&self, task: &TaskId, after_seq: i64) -> Result<Vec<StoredEvent>> {
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE task_id = ?1 AND seq > ?2 \
                     ORDER BY seq"
                ))?
                .query_map(params![task.as_str(), after_seq], rows::raw::<RawEvent>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawEvent::decode).collect()
        })
    }

    /// Up to `limit` of the task's events with `seq > after_seq`, oldest first: one page
    /// (pass the last `seq` of a page to get the next one; an empty page is the end).
    pub(crate) fn task_events_page(
        &self,
        task: &TaskId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE task_id = ?1 AND seq > ?2 \
                     ORDER BY seq LIMIT ?3"
                ))?
                .query_map(
                    params![task.as_str(), after_seq, mapping::limit(limit)],
                    rows::raw::<RawEvent>,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawEvent::decode).collect()
        })
    }

    /// Up to `limit` events of all tasks with `seq > after_seq`, oldest first.
    pub(crate) fn events_after(&self, after_seq: i64, limit: usize) -> Result<Vec<StoredEvent>> {
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
                ))?
                .query_map(
                    params![after_seq, mapping::limit(limit)],
                    rows::raw::<RawEvent>,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawEvent::decode).collect()
        })
    }

    /// The newest event's sequence number; 0 when there are none.
    pub(crate) fn last_seq(&self) -> Result<i64> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events")?
                .query_row([], |row| row.get(0))?)
        })
    }
}

/// Appends `events` inside the caller's transaction.
pub(crate) fn insert(
    connection: &Connection,
    task: &TaskId,
    events: Vec<Event>,
    at: Timestamp,
) -> Result<Vec<StoredEvent>> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut statement = connection.prepare_cached(
        "INSERT INTO events (task_id, at, type, step, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut stored = Vec::with_capacity(events.len());
    for event in events {
        let payload = mapping::encode("event", &event)?;
        statement.execute(params![
            task.as_str(),
            at.as_millis(),
            event.type_name(),
            event.step,
            payload,
        ])?;
        stored.push(StoredEvent {
            seq: connection.last_insert_rowid(),
            task_id: task.clone(),
            at,
            event,
        });
    }
    Ok(stored)
}

/// Whether the task exists ([`Error::NotFound`] if not).
pub(crate) fn ensure_exists(connection: &Connection, id: &TaskId) -> Result<()> {
    connection
        .prepare_cached("SELECT 1 FROM tasks WHERE id = ?1")?
        .query_row([id.as_str()], |_| Ok(()))
        .optional()?
        .ok_or_else(|| Error::not_found("task", id))
}
