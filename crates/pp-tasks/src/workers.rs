//! Several worker processes sharing one database (team mode, docs/team.md): the worker
//! registry (each process registers the workspace names it has and sends heartbeats),
//! claiming only tasks this process can run, running a task at this host's path for its
//! workspace name, and saying why a queued task waits when no live worker has its
//! workspace. A worker that died is remembered for [`REMEMBER_LEASES`] leases (a new task
//! may still name its workspace, and waits for it); then every heartbeat forgets it.
//!
//! Outside team mode none of this applies: the one process claims every queued task and
//! runs it at the path stored with it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pp_store::{NewWorker, WorkerRecord};
use pp_types::TaskRecord;

use crate::error::{Error, Result};
use crate::settings::TeamWorker;
use crate::shared::Shared;

/// How many leases ([`crate::TaskSettings::lease`]) a silent worker's row is kept: its
/// workspace names stay known for new tasks that long, then its row is deleted.
pub(crate) const REMEMBER_LEASES: u32 = 10;

impl Shared {
    /// The folder `task` runs in here: in team mode this host's folder for the task's
    /// workspace name ([`Error::NotFound`] when this process has no such workspace),
    /// otherwise the path stored with the task.
    pub(crate) fn workspace_root(&self, task: &TaskRecord) -> Result<String> {
        if self.settings.team.is_none() {
            return Ok(task.workspace_path.clone());
        }
        self.workspaces
            .find(Some(&task.workspace))
            .map(|workspace| workspace.path.display().to_string())
            .ok_or_else(|| Error::NotFound {
                what: "workspace on this host",
                id: task.workspace.clone(),
            })
    }

    /// The names of the workspaces this process has.
    fn workspace_names(&self) -> Vec<String> {
        self.workspaces
            .list
            .iter()
            .map(|workspace| workspace.name.clone())
            .collect()
    }

    /// Claims the oldest queued task this process can run: in team mode only tasks of
    /// its workspaces, otherwise any.
    pub(crate) async fn claim_next(&self) -> Result<Option<TaskRecord>> {
        if self.settings.team.is_some() {
            Ok(self.store.claim_queued_in(&self.workspace_names()).await?)
        } else {
            Ok(self.store.claim_queued().await?)
        }
    }

    /// Registers this process in the worker registry (team mode), or sends its
    /// heartbeat; registers again when its row was removed (a long pause made others
    /// forget it). Forgets, on the way, the workers silent for [`REMEMBER_LEASES`] leases.
    pub(crate) async fn worker_heartbeat(&self, team: &TeamWorker) -> Result<()> {
        if self.registration.left.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.store
            .forget_workers(self.settings.lease.saturating_mul(REMEMBER_LEASES))
            .await?;
        if let Some(id) = self.registration.get() {
            match self.store.worker_heartbeat(&id).await {
                Ok(()) => return Ok(()),
                Err(pp_store::Error::NotFound { .. }) => self.registration.set(None),
                Err(error) => return Err(error.into()),
            }
        }
        let record = self
            .store
            .register_worker(NewWorker {
                host: team.host.clone(),
                pid: std::process::id(),
                workspaces: self.workspace_names(),
            })
            .await?;
        self.registration.set(Some(record.id));
        Ok(())
    }
}

/// The heartbeat period of a worker whose tasks' lease is `lease`.
pub(crate) fn heartbeat_every(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(100))
}

/// Whether one of `workers` has the workspace `name`.
pub(crate) fn serves(workers: &[WorkerRecord], name: &str) -> bool {
    workers
        .iter()
        .any(|worker| worker.workspaces.iter().any(|have| have == name))
}

/// Why a queued `task` waits, given the live `workers`.
pub(crate) fn waiting_reason(task: &TaskRecord, workers: &[WorkerRecord]) -> Option<String> {
    (!serves(workers, &task.workspace)).then(|| {
        format!(
            "no live worker has workspace `{}`; it runs when one that has it starts",
            task.workspace
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pp_types::{TaskState, Timestamp};

    fn task(workspace: &str) -> TaskRecord {
        crate::test_records::task(workspace, TaskState::Queued, None)
    }

    fn worker(workspaces: &[&str]) -> WorkerRecord {
        WorkerRecord {
            id: "w_1".into(),
            host: "a".into(),
            pid: 1,
            workspaces: workspaces.iter().map(|name| (*name).to_owned()).collect(),
            started_at: Timestamp::from_millis(0),
            heartbeat_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_task_waits_visibly_only_when_no_live_worker_has_its_workspace() {
        assert_eq!(
            waiting_reason(&task("finance"), &[worker(&["finance", "research"])]),
            None
        );
        let reason = waiting_reason(&task("legal"), &[worker(&["finance"])]).unwrap();
        assert!(reason.contains("`legal`"), "{reason}");
        assert!(waiting_reason(&task("legal"), &[]).is_some());
    }

    #[test]
    fn heartbeats_go_out_three_times_a_lease() {
        assert_eq!(
            heartbeat_every(Duration::from_secs(30)),
            Duration::from_secs(10)
        );
        assert_eq!(
            heartbeat_every(Duration::from_millis(60)),
            Duration::from_millis(100)
        );
    }
}
