//! Schedules: CRUD, the occurrence claim (exactly once across connections), overlap,
//! missed counts, pauses and chat-session schedules.

use std::time::Duration;

use pp_store::{
    Error, FireOccurrence, Fired, NewChatSession, NewSchedule, NewTask, Overlap, Schedule,
    ScheduleEventKind, ScheduleSpec, Store, TaskChange,
};
use pp_types::{Actor, TaskState, Timestamp};

use crate::{START, TestDb};

const HOUR: Duration = Duration::from_secs(3600);

pub(crate) fn spec(name: &str) -> ScheduleSpec {
    ScheduleSpec {
        name: name.into(),
        cron: "0 * * * *".into(),
        time_zone: "UTC".into(),
        prompt: "Summarise the invoices".into(),
        workspace: "home".into(),
        session: None,
        overlap: Overlap::Skip,
    }
}

fn at(offset: Duration) -> Timestamp {
    START.saturating_add(offset)
}

pub(crate) async fn create(store: &Store, spec: ScheduleSpec) -> Schedule {
    store
        .create_schedule(&NewSchedule {
            spec,
            enabled: true,
            created_by: Actor::Operator,
            next_fire_at: Some(at(HOUR)),
        })
        .await
        .unwrap()
}

fn scheduled_task() -> NewTask {
    NewTask {
        prompt: "Summarise the invoices".into(),
        workspace: "home".into(),
        workspace_path: "/srv/home".into(),
        created_by: Actor::Scheduler,
        origin: None,
        script: None,
    }
}

/// Fires the schedule's stored next occurrence, planning the one after it an hour later.
pub(crate) async fn fire(store: &Store, schedule: &Schedule) -> Fired {
    let next = schedule.next_fire_at.unwrap();
    store
        .fire_schedule(occurrence(schedule, next, 0))
        .await
        .unwrap()
}

fn occurrence(schedule: &Schedule, occurrence: Timestamp, missed: u64) -> FireOccurrence {
    FireOccurrence {
        schedule_id: schedule.id.clone(),
        expected_next: schedule.next_fire_at.unwrap(),
        expected_updated: schedule.updated_at,
        occurrence,
        missed,
        next_fire_at: Some(occurrence.saturating_add(HOUR)),
        task: scheduled_task(),
    }
}

async fn kinds(store: &Store, id: &str) -> Vec<ScheduleEventKind> {
    let mut rows = store.schedule_history(id, 100).await.unwrap();
    rows.reverse();
    rows.into_iter().map(|row| row.kind).collect()
}

both!(a_schedule_is_stored_found_by_id_or_name_edited_and_removed);
async fn a_schedule_is_stored_found_by_id_or_name_edited_and_removed(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    assert!(schedule.id.starts_with("sc_"), "{}", schedule.id);
    assert!(schedule.enabled);
    assert_eq!(schedule.next_fire_at, Some(at(HOUR)));
    assert_eq!(schedule.created_at, START);
    assert_eq!(schedule.last_task_id, None);
    assert_eq!(db.store.schedule(&schedule.id).await.unwrap(), schedule);
    assert_eq!(db.store.find_schedule("invoices").await.unwrap(), schedule);
    assert_eq!(
        db.store.find_schedule(&schedule.id).await.unwrap(),
        schedule
    );

    let taken = db
        .store
        .create_schedule(&NewSchedule {
            spec: spec("invoices"),
            enabled: true,
            created_by: Actor::Operator,
            next_fire_at: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(taken, Error::NameTaken { .. }), "{taken:?}");

    db.clock.advance(Duration::from_secs(5));
    let edited = db
        .store
        .update_schedule(
            &schedule.id,
            &ScheduleSpec {
                cron: "30 9 * * 1-5".into(),
                overlap: Overlap::Queue,
                ..spec("weekday invoices")
            },
            Some(at(2 * HOUR)),
        )
        .await
        .unwrap();
    assert_eq!(edited.spec.name, "weekday invoices");
    assert_eq!(edited.spec.overlap, Overlap::Queue);
    assert_eq!(edited.next_fire_at, Some(at(2 * HOUR)));
    assert_eq!(edited.updated_at, at(Duration::from_secs(5)));

    let disabled = db
        .store
        .set_schedule_enabled(&schedule.id, false, Some(at(HOUR)))
        .await
        .unwrap();
    assert!(!disabled.enabled);
    assert_eq!(
        disabled.next_fire_at, None,
        "a disabled schedule has no next fire"
    );
    assert!(
        db.store
            .due_schedules(at(10 * HOUR), 10)
            .await
            .unwrap()
            .is_empty()
    );

    db.store.delete_schedule(&schedule.id).await.unwrap();
    assert!(matches!(
        db.store.find_schedule("weekday invoices").await,
        Err(Error::NotFound {
            what: "schedule",
            ..
        })
    ));
    assert!(db.store.schedules().await.unwrap().is_empty());
}

both!(due_schedules_are_the_enabled_ones_at_or_before_now);
async fn due_schedules_are_the_enabled_ones_at_or_before_now(db: TestDb) {
    let first = create(&db.store, spec("a")).await;
    let later = db
        .store
        .create_schedule(&NewSchedule {
            next_fire_at: Some(at(3 * HOUR)),
            ..new(spec("b"))
        })
        .await
        .unwrap();
    assert!(
        db.store
            .due_schedules(at(HOUR - Duration::from_millis(1)), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let due = db.store.due_schedules(at(HOUR), 10).await.unwrap();
    assert_eq!(
        due.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [first.id.as_str()]
    );
    let due = db.store.due_schedules(at(5 * HOUR), 10).await.unwrap();
    assert_eq!(due.len(), 2);
    assert_eq!(due[1].id, later.id);
}

fn new(spec: ScheduleSpec) -> NewSchedule {
    NewSchedule {
        spec,
        enabled: true,
        created_by: Actor::Operator,
        next_fire_at: Some(at(HOUR)),
    }
}

both!(firing_creates_the_task_as_the_scheduler_and_moves_to_the_next_occurrence);
async fn firing_creates_the_task_as_the_scheduler_and_moves_to_the_next_occurrence(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    db.clock.set(at(HOUR));
    let Fired::Task(task) = fire(&db.store, &schedule).await else {
        panic!("not fired")
    };
    assert_eq!(task.state, TaskState::Queued);
    assert_eq!(task.created_by, Actor::Scheduler);
    let after = db.store.schedule(&schedule.id).await.unwrap();
    assert_eq!(after.next_fire_at, Some(at(2 * HOUR)));
    assert_eq!(after.last_fired_at, Some(at(HOUR)));
    assert_eq!(after.last_task_id.as_ref(), Some(&task.id));
    assert_eq!(after.last_task_state, Some(TaskState::Queued));
    let history = db.store.schedule_history(&schedule.id, 10).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, ScheduleEventKind::ScheduleFired);
    assert_eq!(history[0].task_id.as_ref(), Some(&task.id));
    assert_eq!(history[0].occurrence, Some(at(HOUR)));

    // The same occurrence again (a second process that read the old row) loses.
    assert_eq!(fire(&db.store, &schedule).await, Fired::Lost);
    assert_eq!(db.store.list_tasks(None, 10).await.unwrap().len(), 1);
}

both!(an_edit_since_the_read_makes_the_fire_lose);
async fn an_edit_since_the_read_makes_the_fire_lose(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    db.clock.advance(Duration::from_secs(1));
    db.store
        .update_schedule(&schedule.id, &spec("invoices"), schedule.next_fire_at)
        .await
        .unwrap();
    assert_eq!(fire(&db.store, &schedule).await, Fired::Lost);
    assert!(db.store.list_tasks(None, 10).await.unwrap().is_empty());
}

both!(missed_occurrences_are_recorded_once_with_their_count);
async fn missed_occurrences_are_recorded_once_with_their_count(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    db.clock.set(at(5 * HOUR));
    let fired = db
        .store
        .fire_schedule(occurrence(&schedule, at(4 * HOUR), 3))
        .await
        .unwrap();
    assert!(matches!(fired, Fired::Task(_)));
    let history = db.store.schedule_history(&schedule.id, 10).await.unwrap();
    assert_eq!(
        kinds(&db.store, &schedule.id).await,
        [
            ScheduleEventKind::ScheduleMissed,
            ScheduleEventKind::ScheduleFired
        ]
    );
    assert_eq!(history[1].missed, 3);
    assert_eq!(
        history[1].occurrence,
        Some(at(HOUR)),
        "the first missed one"
    );
    assert_eq!(history[0].occurrence, Some(at(4 * HOUR)));
    assert_eq!(db.store.list_tasks(None, 10).await.unwrap().len(), 1);
}

both!(skip_waits_for_the_previous_task_and_queue_does_not);
async fn skip_waits_for_the_previous_task_and_queue_does_not(db: TestDb) {
    let skip = create(&db.store, spec("skip")).await;
    let queue = create(
        &db.store,
        ScheduleSpec {
            overlap: Overlap::Queue,
            ..spec("queue")
        },
    )
    .await;
    let Fired::Task(first) = fire(&db.store, &skip).await else {
        panic!("not fired")
    };
    assert!(matches!(fire(&db.store, &queue).await, Fired::Task(_)));

    // The previous task is still queued: skip skips, queue queues.
    let skip = db.store.schedule(&skip.id).await.unwrap();
    let queue = db.store.schedule(&queue.id).await.unwrap();
    assert_eq!(
        fire(&db.store, &skip).await,
        Fired::Skipped {
            task: first.id.clone()
        }
    );
    assert!(matches!(fire(&db.store, &queue).await, Fired::Task(_)));
    assert_eq!(
        kinds(&db.store, &skip.id).await,
        [
            ScheduleEventKind::ScheduleFired,
            ScheduleEventKind::ScheduleSkipped
        ]
    );
    let after = db.store.schedule(&skip.id).await.unwrap();
    assert_eq!(
        after.next_fire_at,
        Some(at(3 * HOUR)),
        "a skipped occurrence is spent"
    );
    assert_eq!(after.last_task_id.as_ref(), Some(&first.id));

    // Once it ended, the next occurrence fires.
    db.store
        .claim(&first.id, &[TaskState::Queued])
        .await
        .unwrap();
    db.store
        .transition(
            &first.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Completed),
        )
        .await
        .unwrap();
    assert!(matches!(fire(&db.store, &after).await, Fired::Task(_)));
}

both!(a_paused_schedule_records_why_and_stops_firing);
async fn a_paused_schedule_records_why_and_stops_firing(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    assert!(
        !db.store
            .pause_schedule(&schedule.id, at(7 * HOUR), "stale")
            .await
            .unwrap()
    );
    assert!(
        db.store
            .pause_schedule(
                &schedule.id,
                at(HOUR),
                "workspace `home` is no longer configured"
            )
            .await
            .unwrap()
    );
    let paused = db.store.schedule(&schedule.id).await.unwrap();
    assert!(!paused.enabled);
    assert_eq!(
        paused.paused_reason.as_deref(),
        Some("workspace `home` is no longer configured")
    );
    assert_eq!(paused.next_fire_at, None);
    assert_eq!(
        kinds(&db.store, &schedule.id).await,
        [ScheduleEventKind::SchedulePaused]
    );
    assert_eq!(fire(&db.store, &schedule).await, Fired::Lost);

    let enabled = db
        .store
        .set_schedule_enabled(&schedule.id, true, Some(at(9 * HOUR)))
        .await
        .unwrap();
    assert!(enabled.enabled);
    assert_eq!(enabled.paused_reason, None);
    assert_eq!(enabled.next_fire_at, Some(at(9 * HOUR)));
}

both!(a_session_schedule_adds_turns_and_skips_while_one_is_active);
async fn a_session_schedule_adds_turns_and_skips_while_one_is_active(db: TestDb) {
    let session = db
        .store
        .create_chat_session(
            NewChatSession {
                title: None,
                workspace: "home".into(),
                created_by: Actor::Operator,
            },
            None,
        )
        .await
        .unwrap();
    let schedule = create(
        &db.store,
        ScheduleSpec {
            session: Some(session.id.clone()),
            overlap: Overlap::Queue,
            ..spec("standup")
        },
    )
    .await;
    let Fired::Task(task) = fire(&db.store, &schedule).await else {
        panic!("not fired")
    };
    let turns = db.store.chat_turns(&session.id).await.unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].task.id, task.id);

    // Even with `queue`, a session takes one turn at a time.
    let schedule = db.store.schedule(&schedule.id).await.unwrap();
    assert_eq!(
        fire(&db.store, &schedule).await,
        Fired::Skipped {
            task: task.id.clone()
        }
    );

    // A session that is gone pauses the schedule.
    let schedule = db.store.schedule(&schedule.id).await.unwrap();
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    db.store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Completed),
        )
        .await
        .unwrap();
    db.store
        .delete_chat_session(&session.id, None)
        .await
        .unwrap();
    let Fired::Paused { reason } = fire(&db.store, &schedule).await else {
        panic!("not paused")
    };
    assert!(reason.contains("no longer exists"), "{reason}");
    assert!(!db.store.schedule(&schedule.id).await.unwrap().enabled);
}

both!(many_connections_firing_one_occurrence_at_once_fire_it_once);
async fn many_connections_firing_one_occurrence_at_once_fire_it_once(db: TestDb) {
    const THREADS: usize = 8;
    let schedule = create(&db.store, spec("race")).await;
    let mut stores = Vec::new();
    for _ in 0..THREADS {
        stores.push(db.open_again().await);
    }
    let outcomes: Vec<Fired> = crate::race(stores, |_, store| {
        let schedule = schedule.clone();
        async move { fire(&store, &schedule).await }
    })
    .await;
    let fired = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Fired::Task(_)))
        .count();
    assert_eq!(fired, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|outcome| matches!(outcome, Fired::Task(_) | Fired::Lost))
    );
    assert_eq!(db.store.list_tasks(None, 100).await.unwrap().len(), 1);
    assert_eq!(
        kinds(&db.store, &schedule.id).await,
        [ScheduleEventKind::ScheduleFired]
    );
}

both!(history_goes_with_its_schedule_and_the_task_stays);
async fn history_goes_with_its_schedule_and_the_task_stays(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    let Fired::Task(task) = fire(&db.store, &schedule).await else {
        panic!("not fired")
    };
    assert_eq!(
        kinds(&db.store, &schedule.id).await,
        [ScheduleEventKind::ScheduleFired]
    );
    db.store.delete_schedule(&schedule.id).await.unwrap();
    assert!(kinds(&db.store, &schedule.id).await.is_empty());
    assert_eq!(
        db.store.task(&task.id).await.unwrap().created_by,
        Actor::Scheduler
    );
}

both!(the_earliest_fire_time_is_that_of_the_enabled_schedules);
async fn the_earliest_fire_time_is_that_of_the_enabled_schedules(db: TestDb) {
    assert_eq!(db.store.earliest_fire_at().await.unwrap(), None);
    let soon = create(&db.store, spec("soon")).await;
    db.store
        .create_schedule(&NewSchedule {
            next_fire_at: Some(at(3 * HOUR)),
            ..new(spec("later"))
        })
        .await
        .unwrap();
    assert_eq!(db.store.earliest_fire_at().await.unwrap(), Some(at(HOUR)));
    db.store
        .set_schedule_enabled(&soon.id, false, None)
        .await
        .unwrap();
    assert_eq!(
        db.store.earliest_fire_at().await.unwrap(),
        Some(at(3 * HOUR)),
        "a disabled schedule plans nothing"
    );
}

both!(run_now_creates_the_task_off_the_timetable_and_names_who_asked);
async fn run_now_creates_the_task_off_the_timetable_and_names_who_asked(db: TestDb) {
    let schedule = create(&db.store, spec("invoices")).await;
    db.clock.advance(Duration::from_secs(60));
    let task = db
        .store
        .run_schedule_now(&schedule.id, scheduled_task(), Actor::Operator)
        .await
        .unwrap();
    assert_eq!(task.state, TaskState::Queued);
    assert_eq!(task.created_by, Actor::Scheduler);
    let after = db.store.schedule(&schedule.id).await.unwrap();
    assert_eq!(after.next_fire_at, schedule.next_fire_at, "left alone");
    assert_eq!(after.last_task_id.as_ref(), Some(&task.id));
    assert_eq!(
        after.last_fired_at,
        Some(START.saturating_add(Duration::from_secs(60)))
    );
    let history = db.store.schedule_history(&schedule.id, 10).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, ScheduleEventKind::ScheduleFired);
    assert_eq!(history[0].occurrence, None);
    assert_eq!(history[0].task_id.as_ref(), Some(&task.id));
    assert_eq!(history[0].detail.as_deref(), Some("run now by operator"));
    // Even with `skip` and the last task still queued: the person asked for this run.
    db.store
        .run_schedule_now(&schedule.id, scheduled_task(), Actor::Operator)
        .await
        .unwrap();
    assert_eq!(db.store.list_tasks(None, 10).await.unwrap().len(), 2);
    assert!(matches!(
        db.store
            .run_schedule_now("sch_nope", scheduled_task(), Actor::Operator)
            .await,
        Err(Error::NotFound { .. })
    ));
}
