//! Finding tasks for the task list: search, filters and paging backwards.

use pp_store::TaskFilter;
use pp_types::{TaskId, TaskRecord};

use crate::error::Result;
use crate::service::TaskService;

/// One page of tasks, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksPage {
    /// At most the requested number of tasks.
    pub tasks: Vec<TaskRecord>,
    /// When more tasks match: the id to pass as `before` for the next page (this page's
    /// last). `None` when this page holds the oldest match.
    pub next_before: Option<TaskId>,
}

impl TaskService {
    /// The tasks matching `filter`, newest first, and where the next page starts. A
    /// `limit` of 0 counts as 1.
    pub async fn search_tasks(&self, filter: TaskFilter) -> Result<TasksPage> {
        let limit = filter.limit.max(1);
        // One more than asked tells whether another page follows.
        let probe = TaskFilter {
            limit: limit.saturating_add(1),
            ..filter
        };
        let mut tasks = self.inner.store.search_tasks(&probe).await?;
        let more = tasks.len() > limit;
        tasks.truncate(limit);
        let next_before = more
            .then(|| tasks.last().map(|task| task.id.clone()))
            .flatten();
        Ok(TasksPage { tasks, next_before })
    }
}
