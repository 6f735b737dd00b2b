//! Events: append-only, with one global sequence number across all tasks.
//!
//! # Why a lock before every insert
//!
//! `seq` comes from an identity (a sequence). PostgreSQL hands sequence values out when a
//! row is inserted, not when its transaction commits: writer A may take 10, writer B 11,
//! and B commit first. A reader that saw 11 then resumes "after 11" and never sees 10.
//! So every transaction that inserts events first takes one transaction-level advisory
//! lock ([`lock`]), held until it commits or rolls back: only one transaction at a time
//! holds unassigned-or-uncommitted seqs, so seqs become visible in the order they were
//! handed out and `events_after(last)` never skips one. (A rolled-back transaction leaves
//! a gap, which readers never wait for.) The lock is taken as late as possible (right
//! before the first event insert, after the transaction's row locks) and everything after
//! it only inserts, so it cannot deadlock with row locks and is held briefly.
//!
//! The same transaction calls `pg_notify` with the newest seq: listeners are told on
//! commit (see `listener`).

use deadpool_postgres::GenericClient;
use pp_types::{Event, NewAudit, StoredEvent, TaskId, Timestamp};

use super::rows::{self, EVENT_COLUMNS};
use super::{PgStore, changes, execute, model_calls, query, query_one, query_opt};
use crate::error::{Error, Result};
use crate::mapping::{encode, limit as row_limit};
use crate::types::{NewChange, NewModelCall};

/// The advisory lock key serialising event inserts ("ppevents" as bytes).
const EVENTS_LOCK: i64 = 0x7070_6576_656e_7473;

impl PgStore {
    /// Appends `events` to `task` in one transaction and returns them with their sequence
    /// numbers ([`Error::NotFound`] if the task does not exist).
    pub(crate) async fn append_events(
        &self,
        task: &TaskId,
        events: &[Event],
    ) -> Result<Vec<StoredEvent>> {
        self.append_events_with_calls(task, events, Vec::new(), Vec::new(), Vec::new())
            .await
    }

    /// Appends `events` to `task` and the `audit` rows they caused, in one transaction.
    pub(crate) async fn append_events_with_audit(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
    ) -> Result<Vec<StoredEvent>> {
        self.append_events_with_calls(task, events, audit, Vec::new(), Vec::new())
            .await
    }

    /// [`crate::Store::append_events_with_audit`] plus the change-log rows, all in one
    /// transaction.
    pub(crate) async fn append_events_with_records(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
        changes: Vec<NewChange>,
    ) -> Result<Vec<StoredEvent>> {
        self.append_events_with_calls(task, events, audit, changes, Vec::new())
            .await
    }

    /// [`crate::Store::append_events_with_records`] plus the model calls the events
    /// report, all in one transaction.
    pub(crate) async fn append_events_with_calls(
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
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let stored = if events.is_empty() {
            ensure_exists(&transaction, task).await?;
            Vec::new()
        } else {
            // One round trip: the task exists, and the events lock is taken.
            query_opt(
                &transaction,
                "SELECT pg_advisory_xact_lock($2) IS NULL FROM tasks WHERE id = $1",
                &[&task.as_str(), &EVENTS_LOCK],
            )
            .await?
            .ok_or_else(|| Error::NotFound {
                what: "task",
                id: task.to_string(),
            })?;
            insert_locked(&transaction, task, events.to_vec(), now).await?
        };
        for entry in audit {
            super::audit::insert(&transaction, entry, now).await?;
        }
        for change in changes {
            changes::insert(&transaction, change, crate::types::ChangeState::Done, now).await?;
        }
        model_calls::insert(&transaction, task, calls, now).await?;
        transaction.commit().await?;
        Ok(stored)
    }

    /// The task's events with `seq > after_seq`, oldest first (`after_seq = 0`: all).
    pub(crate) async fn task_events(
        &self,
        task: &TaskId,
        after_seq: i64,
    ) -> Result<Vec<StoredEvent>> {
        let found = query(
            &self.client().await?,
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq"
            ),
            &[&task.as_str(), &after_seq],
        )
        .await?;
        rows::all(&found, rows::event)
    }

    /// Up to `limit` of the task's events with `seq > after_seq`, oldest first: one page.
    pub(crate) async fn task_events_page(
        &self,
        task: &TaskId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        let found = query(
            &self.client().await?,
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE task_id = $1 AND seq > $2 \
                 ORDER BY seq LIMIT $3"
            ),
            &[&task.as_str(), &after_seq, &row_limit(limit)],
        )
        .await?;
        rows::all(&found, rows::event)
    }

    /// Up to `limit` events of all tasks with `seq > after_seq`, oldest first.
    pub(crate) async fn events_after(
        &self,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        let found = query(
            &self.client().await?,
            &format!("SELECT {EVENT_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"),
            &[&after_seq, &row_limit(limit)],
        )
        .await?;
        rows::all(&found, rows::event)
    }

    /// The newest event's sequence number; 0 when there are none.
    pub(crate) async fn last_seq(&self) -> Result<i64> {
        let row = query_one(
            &self.client().await?,
            "SELECT COALESCE(MAX(seq), 0) FROM events",
            &[],
        )
        .await?;
        Ok(row.try_get(0)?)
    }
}

/// Takes the events lock for the rest of the caller's transaction (see the module docs).
async fn lock(db: &impl GenericClient) -> Result<()> {
    execute(db, "SELECT pg_advisory_xact_lock($1)", &[&EVENTS_LOCK]).await?;
    Ok(())
}

/// Appends `events` inside the caller's transaction: takes the events lock, inserts
/// them in order and announces the newest seq (delivered on commit).
pub(crate) async fn insert(
    db: &impl GenericClient,
    task: &TaskId,
    events: Vec<Event>,
    at: Timestamp,
) -> Result<Vec<StoredEvent>> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    lock(db).await?;
    insert_locked(db, task, events, at).await
}

/// [`insert`] for a caller already holding the events lock: one statement for the
/// whole batch, which also notifies `pp_events` with the newest seq.
///
/// The rows come from `unnest(…) WITH ORDINALITY` in the caller's order, and each row's
/// `seq` is drawn as it is inserted, so seqs follow that order (and, under the lock, are
/// consecutive); they are returned sorted and matched to the events in order. The
/// notification is sent once per row with the same payload, which PostgreSQL delivers
/// once per transaction.
async fn insert_locked(
    db: &impl GenericClient,
    task: &TaskId,
    events: Vec<Event>,
    at: Timestamp,
) -> Result<Vec<StoredEvent>> {
    let mut types = Vec::with_capacity(events.len());
    let mut steps = Vec::with_capacity(events.len());
    let mut payloads = Vec::with_capacity(events.len());
    for event in &events {
        types.push(event.type_name());
        steps.push(i64::from(event.step));
        payloads.push(encode("event", event)?);
    }
    let found = query(
        db,
        "WITH inserted AS (\
             INSERT INTO events (task_id, at, type, step, payload) \
             SELECT $1, $2, batch.type, batch.step, batch.payload \
             FROM unnest($3::TEXT[], $4::BIGINT[], $5::TEXT[]) \
                 WITH ORDINALITY AS batch (type, step, payload, position) \
             ORDER BY batch.position \
             RETURNING seq) \
         SELECT seq, pg_notify('pp_events', current_schema() || ':' || MAX(seq) OVER ()) IS NULL \
         FROM inserted ORDER BY seq",
        &[&task.as_str(), &at.as_millis(), &types, &steps, &payloads],
    )
    .await?;
    if found.len() != events.len() {
        return Err(Error::Postgres(format!(
            "{} events inserted, {} expected",
            found.len(),
            events.len()
        )));
    }
    events
        .into_iter()
        .zip(&found)
        .map(|(event, row)| {
            Ok(StoredEvent {
                seq: row.try_get(0)?,
                task_id: task.clone(),
                at,
                event,
            })
        })
        .collect()
}

/// Whether the task exists ([`Error::NotFound`] if not).
pub(crate) async fn ensure_exists(db: &impl GenericClient, id: &TaskId) -> Result<()> {
    query_opt(db, "SELECT 1 FROM tasks WHERE id = $1", &[&id.as_str()])
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::not_found("task", id))
}
