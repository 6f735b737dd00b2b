//! What the store keeps and takes, named once for both backends: the inputs of its
//! operations ([`NewTask`], [`TaskChange`], [`NewApproval`], [`Resolve`], filters) and
//! the stored rows that are not wire records of `pp-types` ([`ChangeRow`], [`Schedule`],
//! [`Channel`], [`ChatSession`], …). Plain data: no backend, no I/O.

mod approvals;
mod audit;
mod changes;
mod channels;
mod chat;
mod knowledge;
mod links;
mod model_calls;
mod prune;
mod remote;
mod schedules;
mod started;
mod tasks;
mod users;
mod workers;

pub use approvals::{Changeset, NewApproval, Resolve};
pub use audit::AuditFilter;
pub use changes::{Before, ChangeRow, ChangeState, NewChange};
pub use channels::{
    Channel, ChannelChange, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus, NewChannel,
};
pub use chat::{ACTIVE_TURN_STATES, ChatSession, ChatTurn, NewChatSession};
pub use knowledge::{SkillFile, TeamImport, TeamMemory, TeamSkill};
pub use links::{ApprovalLink, LinkEnd, NewApprovalLink};
pub use model_calls::{ModelCallRow, NewModelCall};
pub use prune::PruneReport;
pub use remote::{NewRemoteMessage, RemoteMessage};
pub use schedules::{
    FireOccurrence, Fired, NewSchedule, Overlap, Schedule, ScheduleEvent, ScheduleEventKind,
    ScheduleSpec,
};
pub use started::{NewStartedCall, StartedCall, StartedFile};
pub(crate) use started::{files_column, files_of};
pub use tasks::{NewTask, Recovered, TaskChange, TaskFilter};
pub use users::{LoginOwner, USER_TOKEN_PREFIX};
pub use workers::{NewWorker, WorkerRecord};

#[cfg(test)]
mod tests {
    use super::{ChangeState, DeliveryStatus, Overlap, ScheduleEventKind};

    /// The names as the hand-written tables stored them before `wire_enum!`: every
    /// value, its stored and JSON name.
    #[test]
    fn stored_names_are_unchanged() {
        let overlap = [(Overlap::Skip, "skip"), (Overlap::Queue, "queue")];
        let kinds = [
            (ScheduleEventKind::ScheduleFired, "schedule_fired"),
            (ScheduleEventKind::ScheduleSkipped, "schedule_skipped"),
            (ScheduleEventKind::ScheduleMissed, "schedule_missed"),
            (ScheduleEventKind::SchedulePaused, "schedule_paused"),
        ];
        let statuses = [
            (DeliveryStatus::Accepted, "accepted"),
            (DeliveryStatus::Refused, "refused"),
            (DeliveryStatus::RateLimited, "rate_limited"),
        ];
        let states = [
            (ChangeState::Done, "done"),
            (ChangeState::Pending, "pending"),
            (ChangeState::Abandoned, "abandoned"),
        ];
        assert_eq!(
            Overlap::ALL.map(|value| value.as_str()),
            overlap.map(|(_, name)| name)
        );
        assert_eq!(
            ScheduleEventKind::ALL.map(|value| value.as_str()),
            kinds.map(|(_, name)| name)
        );
        assert_eq!(
            DeliveryStatus::ALL.map(|value| value.as_str()),
            statuses.map(|(_, name)| name)
        );
        assert_eq!(
            ChangeState::ALL.map(|value| value.as_str()),
            states.map(|(_, name)| name)
        );
        for (value, name) in overlap {
            assert_eq!(value.as_str(), name);
            assert_eq!(Overlap::parse(name), Some(value));
            assert_eq!(
                serde_json::to_value(value).unwrap(),
                serde_json::json!(name)
            );
        }
        for (value, name) in kinds {
            assert_eq!(value.as_str(), name);
            assert_eq!(ScheduleEventKind::parse(name), Some(value));
            assert_eq!(
                serde_json::to_value(value).unwrap(),
                serde_json::json!(name)
            );
        }
        for (value, name) in statuses {
            assert_eq!(value.as_str(), name);
            assert_eq!(DeliveryStatus::parse(name), Some(value));
        }
        for (value, name) in states {
            assert_eq!(value.as_str(), name);
            assert_eq!(ChangeState::parse(name), Some(value));
        }
        assert_eq!(Overlap::default(), Overlap::Skip);
        assert_eq!(Overlap::parse("Skip"), None);
    }
}
