//! The scheduler's narrow way into the store: the schedules, their history and the
//! store's clock, and nothing else. Tasks are reached through the task service; the two
//! store calls here that create one ([`ScheduleBook::fire`], [`ScheduleBook::run_now`])
//! do so in the same transaction as the schedule's own row, which is what makes each
//! occurrence fire once across processes. A person's changes to the schedules are
//! audited through it too ([`ScheduleBook::audit`]).

use pp_store::{
    FireOccurrence, Fired, NewSchedule, NewTask, Result, Schedule, ScheduleEvent, ScheduleSpec,
    Store,
};
use pp_types::{Actor, TaskRecord, Timestamp};

/// The schedules of one store.
#[derive(Debug, Clone)]
pub(crate) struct ScheduleBook(Store);

impl ScheduleBook {
    /// The schedules kept in `store`.
    pub(crate) fn new(store: Store) -> Self {
        Self(store)
    }

    /// Now, on the store's clock (a [`pp_types::ManualClock`] in tests).
    pub(crate) fn now(&self) -> Timestamp {
        self.0.clock().now()
    }

    /// Appends the audit row of a person's change to a schedule.
    pub(crate) async fn audit(&self, entry: pp_types::NewAudit) -> Result<()> {
        self.0.append_audit(entry).await.map(|_| ())
    }

    /// Stores a new schedule.
    pub(crate) async fn create(&self, new: &NewSchedule) -> Result<Schedule> {
        self.0.create_schedule(new).await
    }

    /// Replaces a schedule's definition and its next occurrence.
    pub(crate) async fn update(
        &self,
        id: &str,
        spec: &ScheduleSpec,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        self.0.update_schedule(id, spec, next_fire_at).await
    }

    /// Enables or disables a schedule, setting its next occurrence.
    pub(crate) async fn set_enabled(
        &self,
        id: &str,
        enabled: bool,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        self.0.set_schedule_enabled(id, enabled, next_fire_at).await
    }

    /// Creates a schedule's task now, at `actor`'s request, with its history row.
    pub(crate) async fn run_now(
        &self,
        id: &str,
        task: NewTask,
        actor: Actor,
    ) -> Result<TaskRecord> {
        self.0.run_schedule_now(id, task, actor).await
    }

    /// Removes a schedule and its history.
    pub(crate) async fn delete(&self, id: &str) -> Result<()> {
        self.0.delete_schedule(id).await
    }

    /// One schedule, by id or name.
    pub(crate) async fn find(&self, id_or_name: &str) -> Result<Schedule> {
        self.0.find_schedule(id_or_name).await
    }

    /// Every schedule, by name.
    pub(crate) async fn list(&self) -> Result<Vec<Schedule>> {
        self.0.schedules().await
    }

    /// A schedule's history, newest first.
    pub(crate) async fn history(&self, id: &str, limit: usize) -> Result<Vec<ScheduleEvent>> {
        self.0.schedule_history(id, limit).await
    }

    /// The enabled schedules due at `now`, at most `limit`.
    pub(crate) async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<Schedule>> {
        self.0.due_schedules(now, limit).await
    }

    /// The earliest planned occurrence of any enabled schedule.
    pub(crate) async fn earliest_fire_at(&self) -> Result<Option<Timestamp>> {
        self.0.earliest_fire_at().await
    }

    /// Pauses a schedule whose next occurrence is still `expected_next`; whether it did.
    pub(crate) async fn pause(
        &self,
        id: &str,
        expected_next: Timestamp,
        reason: &str,
    ) -> Result<bool> {
        self.0.pause_schedule(id, expected_next, reason).await
    }

    /// Fires one occurrence (compare-and-set on the schedule's next occurrence).
    pub(crate) async fn fire(&self, fire: FireOccurrence) -> Result<Fired> {
        self.0.fire_schedule(fire).await
    }
}
