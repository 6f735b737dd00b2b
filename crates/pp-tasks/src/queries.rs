//! Async reads and small writes of the store for front ends (the HTTP server), through
//! the task service: the store is async (its SQLite calls run on the blocking pool inside
//! `pp_store`), so none of these holds up the async threads that answer other requests.

use std::time::Duration;

use pp_store::AuditFilter;
use pp_types::{ApprovalRecord, AuditEntry, NewAudit, StoredEvent, TaskId, TaskRecord, TaskState};

use crate::error::Result;
use crate::service::TaskService;

/// One page of a task's events: at most the requested number, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct EventsPage {
    /// The events with `seq` greater than the requested one, oldest first.
    pub events: Vec<StoredEvent>,
    /// When more events follow this page: the `seq` to ask for the next page after (the
    /// last event's). `None` when this page reaches the task's newest event.
    pub next_after: Option<i64>,
}

impl TaskService {
    /// The `origin` of each of `ids` that has one (the schedule's, webhook channel's or
    /// MCP client's name), for the audit ledger; unknown ids are left out.
    pub async fn task_origins(
        &self,
        ids: Vec<TaskId>,
    ) -> Result<std::collections::HashMap<TaskId, String>> {
        let mut unique = Vec::with_capacity(ids.len());
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            if seen.insert(id.clone()) {
                unique.push(id);
            }
        }
        // One read for all of them; unknown ids are simply not found.
        let origins = self
            .inner
            .store
            .tasks_by_ids(&unique)
            .await?
            .into_iter()
            .filter_map(|task| Some((task.id, task.origin?)))
            .collect();
        Ok(origins)
    }

    /// One task ([`crate::error::Error::NotFound`] if there is none).
    pub async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        Ok(self.inner.store.task(id).await?)
    }

    /// Up to `limit` tasks in `state` (all states when `None`), newest first.
    pub async fn list_tasks(
        &self,
        state: Option<TaskState>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>> {
        Ok(self.inner.store.list_tasks(state, limit).await?)
    }

    /// Up to `limit` (at least 1) of the task's events with `seq > after`, oldest first,
    /// and where the next page starts. [`crate::error::Error::NotFound`] if the task does not
    /// exist.
    pub async fn task_events_page(
        &self,
        task: &TaskId,
        after: i64,
        limit: usize,
    ) -> Result<EventsPage> {
        let limit = limit.max(1);
        let store = &self.inner.store;
        store.task(task).await?;
        // One more than asked tells whether another page follows.
        let mut events = store
            .task_events_page(task, after, limit.saturating_add(1))
            .await?;
        let more = events.len() > limit;
        events.truncate(limit);
        let next_after = more.then(|| events.last().map(|event| event.seq)).flatten();
        Ok(EventsPage { events, next_after })
    }

    /// Up to `limit` events of all tasks with `seq > after`, oldest first.
    pub async fn events_after(&self, after: i64, limit: usize) -> Result<Vec<StoredEvent>> {
        Ok(self.inner.store.events_after(after, limit).await?)
    }

    /// Waits until an event after `after` may have been stored, or `at_most` passes
    /// ([`pp_store::Store::wait_for_events`]: a wake-up from the database where it can
    /// announce new events, polling otherwise); then read with
    /// [`TaskService::events_after`].
    pub async fn wait_for_events(&self, after: i64, at_most: Duration) {
        self.inner.store.wait_for_events(after, at_most).await;
    }

    /// The newest event's sequence number; 0 when there are none.
    pub async fn last_seq(&self) -> Result<i64> {
        Ok(self.inner.store.last_seq().await?)
    }

    /// Audit rows matching `filter`, newest first.
    pub async fn list_audit(&self, filter: AuditFilter) -> Result<Vec<AuditEntry>> {
        Ok(self.inner.store.list_audit(&filter).await?)
    }

    /// Appends one audit row.
    pub async fn append_audit(&self, entry: NewAudit) -> Result<AuditEntry> {
        Ok(self.inner.store.append_audit(entry).await?)
    }

    /// Every approval of `task`, oldest first.
    pub async fn approvals_for_task(&self, task: &TaskId) -> Result<Vec<ApprovalRecord>> {
        Ok(self.inner.store.approvals_for_task(task).await?)
    }

    /// The task of every pending approval, one per approval (an inbox badge's count,
    /// without reading any card).
    pub async fn pending_approval_tasks(&self) -> Result<Vec<TaskId>> {
        Ok(self.inner.store.pending_approval_tasks().await?)
    }

    /// Every event of `task` with `seq > after`, oldest first.
    pub async fn task_events(&self, task: &TaskId, after: i64) -> Result<Vec<StoredEvent>> {
        Ok(self.inner.store.task_events(task, after).await?)
    }
}

#[cfg(test)]
mod tests {
    use pp_store::Store;
    use pp_types::{Actor, Event, EventKind};

    use super::*;
    use crate::model::ModelSource;
    use crate::settings::{TaskSettings, Workspaces};

    fn service(dir: &std::path::Path) -> TaskService {
        let clock = std::sync::Arc::new(pp_types::ManualClock::new(pp_types::Timestamp::now()));
        let store = Store::open_with_clock(&dir.join("db.sqlite"), clock).unwrap();
        TaskService::new(
            store,
            TaskSettings::default(),
            Workspaces::single("default", dir),
            ModelSource::Scripted,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn events_come_in_pages_with_a_next_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let service = service(dir.path());
        let task = service
            .create(crate::service::CreateTask {
                prompt: "page me".into(),
                workspace: None,
                actor: Actor::Operator,
                script: None,
            })
            .await
            .unwrap();
        let before = service.task_events_page(&task.id, 0, 5000).await.unwrap();
        let extra: Vec<Event> = (0..5)
            .map(|step| Event {
                step,
                kind: EventKind::TaskStarted {
                    prompt: format!("m{step}"),
                },
            })
            .collect();
        service
            .store()
            .append_events(&task.id, &extra)
            .await
            .unwrap();
        let total = before.events.len() + 5;

        let mut seen = Vec::new();
        let mut after = 0;
        loop {
            let page = service.task_events_page(&task.id, after, 2).await.unwrap();
            assert!(page.events.len() <= 2);
            seen.extend(page.events.iter().map(|event| event.seq));
            match page.next_after {
                Some(next) => after = next,
                None => break,
            }
        }
        assert_eq!(seen.len(), total);
        assert!(seen.windows(2).all(|pair| pair[0] < pair[1]));
        let missing = service
            .task_events_page(&TaskId("nope".into()), 0, 10)
            .await
            .unwrap_err();
        assert!(matches!(missing, crate::error::Error::NotFound { .. }));
    }
}
