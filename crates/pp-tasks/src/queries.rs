//! Async reads and small writes of the store for front ends (the HTTP server), through
//! the task service: the store is async (its SQLite calls run on the blocking pool inside
//! `pp_store`), so none of these holds up the async threads that answer other requests.

use std::time::Duration;

use pp_store::AuditFilter;
use pp_types::{AuditEntry, NewAudit, StoredEvent, TaskId, TaskRecord, TaskState};

use crate::{Result, TaskService};

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
        let mut origins = std::collections::HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            if !seen.insert(id.clone()) {
                continue;
            }
            match self.store().task(&id).await {
                Ok(task) => {
                    if let Some(origin) = task.origin {
                        origins.insert(id, origin);
                    }
                }
                Err(pp_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(origins)
    }

    /// One task ([`crate::Error::NotFound`] if there is none).
    pub async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        Ok(self.store().task(id).await?)
    }

    /// Up to `limit` tasks in `state` (all states when `None`), newest first.
    pub async fn list_tasks(
        &self,
        state: Option<TaskState>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>> {
        Ok(self.store().list_tasks(state, limit).await?)
    }

    /// Up to `limit` (at least 1) of the task's events with `seq > after`, oldest first,
    /// and where the next page starts. [`crate::Error::NotFound`] if the task does not
    /// exist.
    pub async fn task_events_page(
        &self,
        task: &TaskId,
        after: i64,
        limit: usize,
    ) -> Result<EventsPage> {
        let limit = limit.max(1);
        let store = self.store();
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
        Ok(self.store().events_after(after, limit).await?)
    }

    /// Waits until an event after `after` may have been stored, or `at_most` passes
    /// ([`pp_store::Store::wait_for_events`]: a wake-up from the database where it can
    /// announce new events, polling otherwise); then read with
    /// [`TaskService::events_after`].
    pub async fn wait_for_events(&self, after: i64, at_most: Duration) {
        self.store().wait_for_events(after, at_most).await;
    }

    /// The newest event's sequence number; 0 when there are none.
    pub async fn last_seq(&self) -> Result<i64> {
        Ok(self.store().last_seq().await?)
    }

    /// Audit rows matching `filter`, newest first.
    pub async fn list_audit(&self, filter: AuditFilter) -> Result<Vec<AuditEntry>> {
        Ok(self.store().list_audit(&filter).await?)
    }

    /// Appends one audit row.
    pub async fn append_audit(&self, entry: NewAudit) -> Result<AuditEntry> {
        Ok(self.store().append_audit(entry).await?)
    }

    /// Creates a console login lasting `ttl`; returns its secret id.
    pub async fn create_login(&self, ttl: Duration) -> Result<String> {
        Ok(self.store().create_login(ttl).await?)
    }

    /// Whether `login` names a live (unexpired) console login.
    pub async fn login_valid(&self, login: String) -> Result<bool> {
        Ok(self.store().login_valid(&login).await?)
    }

    /// Deletes a console login (logout); unknown logins are not an error.
    pub async fn delete_login(&self, login: String) -> Result<()> {
        Ok(self.store().delete_login(&login).await?)
    }
}

#[cfg(test)]
mod tests {
    use pp_store::Store;
    use pp_types::{Actor, Event, EventKind};

    use super::*;
    use crate::{ModelSource, TaskSettings, Workspaces};

    fn service(dir: &std::path::Path) -> TaskService {
        let store = Store::open(&dir.join("db.sqlite")).unwrap();
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
            .create(crate::CreateTask {
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
        assert!(matches!(missing, crate::Error::NotFound { .. }));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn logins_round_trip_off_thread() {
        let dir = tempfile::tempdir().unwrap();
        let service = service(dir.path());
        let login = service.create_login(Duration::from_secs(60)).await.unwrap();
        assert!(service.login_valid(login.clone()).await.unwrap());
        service.delete_login(login.clone()).await.unwrap();
        assert!(!service.login_valid(login).await.unwrap());
    }
}
