//! The scheduler on a manual clock (no real sleeps): cron parsing and errors, weekday
//! numbering, aliases, daylight saving in Europe/Berlin and America/New_York, catch-up,
//! overlap, exactly-once across two processes, paused schedules, and a scheduled write
//! that waits for a person.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use chrono::{Datelike, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use pp_model::ScriptedModel;
use pp_schedules::{
    ALIASES, Overlap, ScheduleEventKind, ScheduleRequest, Scheduler, SchedulerError, TickOutcome,
    Timetable,
};
use pp_store::{AuditFilter, Store};
use pp_tasks::{ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::TempTree;
use pp_types::{Actor, ApprovalState, Clock as _, ManualClock, TaskState, Timestamp};
use serde_json::json;

const MINUTE: Duration = Duration::from_secs(60);

/// A UTC time.
fn utc(year: i32, month: u32, day: u32, hour: u32, minute: u32) -> Timestamp {
    let time = Utc
        .with_ymd_and_hms(year, month, day, hour, minute, 0)
        .unwrap();
    Timestamp::from_millis(time.timestamp_millis())
}

/// A wall-clock time in `zone` that happens exactly once.
fn local(zone: &str, year: i32, month: u32, day: u32, hour: u32, minute: u32) -> Timestamp {
    let zone: Tz = zone.parse().unwrap();
    let time = zone
        .with_ymd_and_hms(year, month, day, hour, minute, 0)
        .single()
        .unwrap();
    Timestamp::from_millis(time.timestamp_millis())
}

/// A service and its scheduler over a temp database and workspace, on a manual clock.
/// No workers run: fired tasks stay `queued` unless a test runs them.
struct Fixture {
    tree: TempTree,
    data: tempfile::TempDir,
    clock: Arc<ManualClock>,
    service: TaskService,
    store: Store,
    scheduler: Scheduler,
}

impl Fixture {
    fn new(start: Timestamp) -> Self {
        Self::with_model(start, ModelSource::Scripted)
    }

    fn with_model(start: Timestamp, models: ModelSource) -> Self {
        let tree = TempTree::new();
        let data = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let (service, store) = service_on(
            data.path(),
            &clock,
            Workspaces::single("home", tree.workspace()),
            models,
        );
        let scheduler = Scheduler::new(service.clone(), store.clone());
        Self {
            tree,
            data,
            clock,
            service,
            store,
            scheduler,
        }
    }

    /// Another process on the same database, with its own configuration.
    fn another_process(&self, workspaces: Workspaces) -> Scheduler {
        let (service, store) = service_on(
            self.data.path(),
            &self.clock,
            workspaces,
            ModelSource::Scripted,
        );
        Scheduler::new(service, store)
    }

    async fn create(&self, name: &str, cron: &str, zone: &str, overlap: Overlap) -> String {
        self.scheduler
            .create(request(name, cron, zone, overlap), Actor::Operator)
            .await
            .unwrap()
            .id
    }

    /// Moves the clock to `now` and ticks.
    async fn tick(&self, now: Timestamp) -> Vec<(String, TickOutcome)> {
        self.clock.set(now);
        self.scheduler.tick().await.unwrap().outcomes
    }

    /// Ticks every `step` from the clock's time up to `end`; returns the occurrences
    /// each schedule fired, in order.
    async fn run_until(&self, end: Timestamp, step: Duration) -> Vec<(String, Timestamp)> {
        let mut fired = Vec::new();
        let mut now = self.clock.now();
        while now < end {
            now = now.saturating_add(step);
            for (id, outcome) in self.tick(now).await {
                if let TickOutcome::Fired {
                    occurrence, missed, ..
                } = outcome
                {
                    assert_eq!(missed, 0, "ticking often, nothing is missed");
                    fired.push((id, occurrence));
                }
            }
        }
        fired
    }

    async fn history(&self, id: &str) -> Vec<ScheduleEventKind> {
        let mut rows = self.store.schedule_history(id, 1000).await.unwrap();
        rows.reverse();
        rows.into_iter().map(|row| row.kind).collect()
    }
}

fn service_on(
    data: &Path,
    clock: &Arc<ManualClock>,
    workspaces: Workspaces,
    models: ModelSource,
) -> (TaskService, Store) {
    let store = Store::open_with_clock(&data.join("test.db"), Arc::clone(clock) as _).unwrap();
    let service = TaskService::new(store.clone(), TaskSettings::default(), workspaces, models);
    (service, store)
}

fn request(name: &str, cron: &str, zone: &str, overlap: Overlap) -> ScheduleRequest {
    ScheduleRequest {
        name: name.into(),
        cron: cron.into(),
        time_zone: Some(zone.into()),
        prompt: "Summarise last week's invoices".into(),
        workspace: None,
        session: None,
        overlap,
        enabled: true,
    }
}

fn only(fired: &[(String, Timestamp)], id: &str) -> Vec<Timestamp> {
    fired
        .iter()
        .filter(|(schedule, _)| schedule == id)
        .map(|(_, at)| *at)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

#[test]
fn weekdays_are_numbered_from_monday_and_sunday_is_0_or_7() {
    let sunday = utc(2026, 11, 29, 12, 0);
    let weekdays = |cron: &str| -> Vec<Weekday> {
        Timetable::parse(cron, "UTC")
            .unwrap()
            .upcoming(sunday, 10)
            .into_iter()
            .map(|at| Utc.timestamp_millis_opt(at.as_millis()).unwrap().weekday())
            .collect()
    };
    assert_eq!(
        weekdays("0 9 * * 1-5"),
        [
            Weekday::Mon,
            Weekday::Tue,
            Weekday::Wed,
            Weekday::Thu,
            Weekday::Fri,
            Weekday::Mon,
            Weekday::Tue,
            Weekday::Wed,
            Weekday::Thu,
            Weekday::Fri
        ]
    );
    assert_eq!(weekdays("0 9 * * MON-FRI"), weekdays("0 9 * * 1-5"));
    assert!(weekdays("0 9 * * 0").iter().all(|day| *day == Weekday::Sun));
    assert!(weekdays("0 9 * * 7").iter().all(|day| *day == Weekday::Sun));
    assert_eq!(weekdays("0 9 * * 6"), [Weekday::Sat; 10]);
}

#[test]
fn aliases_stand_for_their_five_fields() {
    let now = utc(2026, 11, 29, 10, 15); // a Sunday
    let next = |cron: &str| {
        Timetable::parse(cron, "UTC")
            .unwrap()
            .next_after(now)
            .unwrap()
    };
    assert_eq!(next("@hourly"), utc(2026, 11, 29, 11, 0));
    assert_eq!(next("@daily"), utc(2026, 11, 30, 0, 0));
    assert_eq!(next("@midnight"), utc(2026, 11, 30, 0, 0));
    assert_eq!(next("@weekly"), utc(2026, 12, 6, 0, 0), "the next Sunday");
    assert_eq!(next("@monthly"), utc(2026, 12, 1, 0, 0));
    assert_eq!(next("@yearly"), utc(2027, 1, 1, 0, 0));
    assert_eq!(next("@annually"), utc(2027, 1, 1, 0, 0));
    assert_eq!(next("@DAILY"), next("0 0 * * *"));
    for (alias, fields) in ALIASES {
        assert_eq!(next(alias), next(fields), "{alias}");
    }
}

#[tokio::test]
async fn invalid_expressions_name_the_field_and_token_at_fault() {
    let fixture = Fixture::new(utc(2026, 11, 29, 10, 0));
    let cases = [
        ("61 * * * *", "minute", "61"),
        ("* 24 * * *", "hour", "24"),
        ("0 0 32 * *", "day_of_month", "32"),
        ("0 0 * 13 *", "month", "13"),
        ("0 0 * * 8", "day_of_week", "8"),
        ("0 9 * * MON-FOO", "day_of_week", "MON-FOO"),
        ("0,15,99 * * * *", "minute", "99"),
        ("*/0 * * * *", "minute", "*/0"),
        ("* * *", "expression", "* * *"),
        ("0 0 0 * * *", "expression", "0 0 0 * * *"),
        ("@fortnightly", "expression", "@fortnightly"),
        ("0 0 30 2 *", "expression", "0 0 30 2 *"),
        ("", "expression", ""),
    ];
    for (cron, field, token) in cases {
        let error = fixture
            .scheduler
            .create(request("bad", cron, "UTC", Overlap::Skip), Actor::Operator)
            .await
            .unwrap_err();
        let SchedulerError::InvalidCron {
            field: found_field,
            token: found_token,
            ..
        } = &error
        else {
            panic!("{cron}: {error:?}")
        };
        assert_eq!(
            (*found_field, found_token.as_str()),
            (field, token),
            "{cron}: {error}"
        );
        assert_eq!(error.code(), "invalid_cron");
        assert!(error.to_string().contains(field), "{error}");
    }
    assert!(fixture.scheduler.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_unknown_time_zone_is_refused() {
    let fixture = Fixture::new(utc(2026, 11, 29, 10, 0));
    let error = fixture
        .scheduler
        .create(
            request("mars", "0 9 * * *", "Mars/Olympus_Mons", Overlap::Skip),
            Actor::Operator,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SchedulerError::UnknownTimeZone { zone } if zone == "Mars/Olympus_Mons"),
        "{error:?}"
    );
    assert_eq!(error.code(), "unknown_time_zone");
    assert!(fixture.scheduler.list().await.unwrap().is_empty());

    // No zone: the machine's, which is a zone the scheduler knows.
    let created = fixture
        .scheduler
        .create(
            ScheduleRequest {
                time_zone: None,
                ..request("here", "0 9 * * *", "UTC", Overlap::Skip)
            },
            Actor::Operator,
        )
        .await
        .unwrap();
    Timetable::parse(&created.spec.cron, &created.spec.time_zone).unwrap();
}

#[tokio::test]
async fn schedules_are_created_edited_disabled_and_removed_through_the_scheduler() {
    let fixture = Fixture::new(utc(2026, 11, 30, 8, 10));
    let created = fixture
        .scheduler
        .create(
            request("  invoices ", "0 9 * * 1", "Europe/Berlin", Overlap::Skip),
            Actor::Operator,
        )
        .await
        .unwrap();
    assert_eq!(created.spec.name, "invoices", "trimmed");
    assert_eq!(
        created.spec.workspace, "home",
        "the default workspace, by name"
    );
    assert_eq!(created.created_by, Actor::Operator);
    assert_eq!(created.next_fire_at, Some(utc(2026, 12, 7, 8, 0)));

    let taken = fixture
        .scheduler
        .create(
            request("invoices", "@daily", "UTC", Overlap::Skip),
            Actor::Operator,
        )
        .await
        .unwrap_err();
    assert_eq!(taken.code(), "conflict", "{taken}");
    let no_workspace = fixture
        .scheduler
        .create(
            ScheduleRequest {
                workspace: Some("nowhere".into()),
                ..request("x", "@daily", "UTC", Overlap::Skip)
            },
            Actor::Operator,
        )
        .await
        .unwrap_err();
    assert_eq!(no_workspace.code(), "not_found", "{no_workspace}");
    let empty = fixture
        .scheduler
        .create(
            ScheduleRequest {
                prompt: "  ".into(),
                ..request("y", "@daily", "UTC", Overlap::Skip)
            },
            Actor::Operator,
        )
        .await
        .unwrap_err();
    assert_eq!(empty.code(), "bad_request", "{empty}");

    let edited = fixture
        .scheduler
        .edit(
            "invoices",
            request("invoices", "@daily", "America/New_York", Overlap::Queue),
        )
        .await
        .unwrap();
    assert_eq!(edited.id, created.id);
    assert_eq!(
        edited.next_fire_at,
        Some(utc(2026, 12, 1, 5, 0)),
        "midnight in New York"
    );
    assert_eq!(edited.spec.overlap, Overlap::Queue);
    let invalid = fixture
        .scheduler
        .edit(
            "invoices",
            request("invoices", "0 25 * * *", "UTC", Overlap::Skip),
        )
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), "invalid_cron");
    assert_eq!(
        fixture.scheduler.find(&created.id).await.unwrap(),
        edited,
        "unchanged"
    );

    let disabled = fixture
        .scheduler
        .set_enabled(&created.id, false)
        .await
        .unwrap();
    assert!(!disabled.enabled);
    assert_eq!(disabled.next_fire_at, None);
    assert!(fixture.tick(utc(2026, 12, 3, 0, 0)).await.is_empty());

    fixture.scheduler.remove("invoices").await.unwrap();
    assert!(fixture.scheduler.list().await.unwrap().is_empty());
    assert_eq!(
        fixture.scheduler.find("invoices").await.unwrap_err().code(),
        "not_found"
    );
}

#[tokio::test]
async fn run_now_fires_outside_the_timetable_and_leaves_it_alone() {
    let fixture = Fixture::new(utc(2026, 11, 30, 8, 10));
    let id = fixture
        .create("invoices", "0 9 * * 1", "UTC", Overlap::Skip)
        .await;
    let before = fixture.scheduler.find(&id).await.unwrap();
    let first = fixture
        .scheduler
        .run_now("invoices", Actor::Operator)
        .await
        .unwrap();
    assert_eq!(first.created_by, Actor::Scheduler);
    assert_eq!(
        first.origin.as_deref(),
        Some("invoices"),
        "the schedule's name"
    );
    assert_eq!(first.state, TaskState::Queued);
    // The person asked: the previous task still being queued does not skip it.
    let second = fixture
        .scheduler
        .run_now(&id, Actor::Operator)
        .await
        .unwrap();
    let after = fixture.scheduler.find(&id).await.unwrap();
    assert_eq!(
        after.next_fire_at, before.next_fire_at,
        "the timetable is untouched"
    );
    assert_eq!(after.last_task_id, Some(second.id));
    let rows = fixture.store.schedule_history(&id, 10).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|row| row.kind == ScheduleEventKind::ScheduleFired
                && row.occurrence.is_none()
                && row.detail.as_deref() == Some("run now by operator"))
    );
    assert_eq!(
        fixture
            .scheduler
            .run_now("nope", Actor::Operator)
            .await
            .unwrap_err()
            .code(),
        "not_found"
    );
}

// ---------------------------------------------------------------------------------------
// Daylight saving
// ---------------------------------------------------------------------------------------

/// Spring forward: 02:00 becomes 03:00 (Berlin on 2026-03-29, New York on 2026-03-08).
/// A daily 02:30 job fires once that day, at 03:00 (the first instant after the gap),
/// and at 02:30 on the days around it.
#[tokio::test]
async fn a_daily_job_in_the_skipped_hour_fires_once_at_the_end_of_the_gap() {
    for (zone, year, month, day) in [
        ("Europe/Berlin", 2026, 3, 29),
        ("America/New_York", 2026, 3, 8),
    ] {
        let start = local(zone, year, month, day - 2, 12, 0);
        let fixture = Fixture::new(start);
        let daily = fixture
            .create("daily", "30 2 * * *", zone, Overlap::Queue)
            .await;
        let hourly = fixture
            .create("hourly", "0 * * * *", zone, Overlap::Queue)
            .await;
        let fired = fixture
            .run_until(local(zone, year, month, day + 2, 0, 0), 5 * MINUTE)
            .await;
        assert_eq!(
            only(&fired, &daily),
            [
                local(zone, year, month, day - 1, 2, 30),
                local(zone, year, month, day, 3, 0),
                local(zone, year, month, day + 1, 2, 30),
            ],
            "{zone}"
        );
        // The wall clock has 23 hours that day, and an hourly job fires 23 times.
        let (midnight, next_midnight) = (
            local(zone, year, month, day, 0, 0),
            local(zone, year, month, day + 1, 0, 0),
        );
        let that_day = only(&fired, &hourly)
            .into_iter()
            .filter(|at| *at >= midnight && *at < next_midnight)
            .count();
        assert_eq!(that_day, 23, "{zone}");
    }
}

/// Fall back: an hour happens twice (Berlin 02:00–03:00 on 2026-10-25, New York
/// 01:00–02:00 on 2026-11-01). A daily job at a time in that hour fires once, on the
/// first pass; an hourly job fires on both passes (25 times that day).
#[tokio::test]
async fn a_daily_job_in_the_repeated_hour_fires_once_not_twice() {
    type Date = (i32, u32, u32);
    let cases: [(&str, Date, Date, Date, u32); 2] = [
        (
            "Europe/Berlin",
            (2026, 10, 24),
            (2026, 10, 25),
            (2026, 10, 26),
            2,
        ),
        (
            "America/New_York",
            (2026, 10, 31),
            (2026, 11, 1),
            (2026, 11, 2),
            1,
        ),
    ];
    for (zone, before, (year, month, day), after, hour) in cases {
        let at =
            |(year, month, day): Date, hour, minute| local(zone, year, month, day, hour, minute);
        let fixture = Fixture::new(at(before, 0, 0));
        let daily = fixture
            .create("daily", &format!("30 {hour} * * *"), zone, Overlap::Queue)
            .await;
        let hourly = fixture
            .create("hourly", "0 * * * *", zone, Overlap::Queue)
            .await;
        let fired = fixture.run_until(at(after, 23, 0), 5 * MINUTE).await;
        let zone_tz: Tz = zone.parse().unwrap();
        let first_pass = zone_tz
            .with_ymd_and_hms(year, month, day, hour, 30, 0)
            .earliest()
            .unwrap();
        assert_eq!(
            only(&fired, &daily),
            [
                at(before, hour, 30),
                Timestamp::from_millis(first_pass.timestamp_millis()),
                at(after, hour, 30),
            ],
            "{zone}"
        );
        let that_day = only(&fired, &hourly)
            .into_iter()
            .filter(|time| *time >= at((year, month, day), 0, 0) && *time < at(after, 0, 0))
            .count();
        assert_eq!(that_day, 25, "{zone}");
    }
}

// ---------------------------------------------------------------------------------------
// Catch-up, overlap
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn missed_fires_while_down_fire_once_with_the_missed_count() {
    let start = utc(2026, 11, 30, 8, 10);
    let fixture = Fixture::new(start);
    let id = fixture
        .create("hourly", "0 * * * *", "UTC", Overlap::Skip)
        .await;
    // Down from 08:10 to 13:20: 09:00, 10:00, 11:00, 12:00 and 13:00 passed.
    let outcomes = fixture.tick(utc(2026, 11, 30, 13, 20)).await;
    let [
        (
            schedule,
            TickOutcome::Fired {
                occurrence, missed, ..
            },
        ),
    ] = outcomes.as_slice()
    else {
        panic!("{outcomes:?}")
    };
    assert_eq!(schedule, &id);
    assert_eq!(
        *occurrence,
        utc(2026, 11, 30, 13, 0),
        "the latest due one fires"
    );
    assert_eq!(*missed, 4);
    assert_eq!(
        fixture.history(&id).await,
        [
            ScheduleEventKind::ScheduleMissed,
            ScheduleEventKind::ScheduleFired
        ]
    );
    let rows = fixture.store.schedule_history(&id, 10).await.unwrap();
    assert_eq!(rows[1].missed, 4);
    assert_eq!(rows[1].occurrence, Some(utc(2026, 11, 30, 9, 0)));
    assert_eq!(fixture.store.list_tasks(None, 100).await.unwrap().len(), 1);
    let schedule = fixture.scheduler.find("hourly").await.unwrap();
    assert_eq!(schedule.next_fire_at, Some(utc(2026, 11, 30, 14, 0)));
    assert_eq!(schedule.last_fired_at, Some(utc(2026, 11, 30, 13, 20)));

    // Nothing more is due until 14:00.
    assert!(fixture.tick(utc(2026, 11, 30, 13, 59)).await.is_empty());
}

#[tokio::test]
async fn skip_skips_while_the_previous_task_is_active_and_queue_creates_anyway() {
    let fixture = Fixture::new(utc(2026, 11, 30, 8, 10));
    let skip = fixture
        .create("skip", "0 * * * *", "UTC", Overlap::Skip)
        .await;
    let queue = fixture
        .create("queue", "0 * * * *", "UTC", Overlap::Queue)
        .await;
    let first = fixture.tick(utc(2026, 11, 30, 9, 0)).await;
    assert!(
        first
            .iter()
            .all(|(_, outcome)| matches!(outcome, TickOutcome::Fired { .. }))
    );
    let skip_task = fixture
        .scheduler
        .find(&skip)
        .await
        .unwrap()
        .last_task_id
        .unwrap();

    // Both previous tasks are still queued (no worker runs here).
    let second = fixture.tick(utc(2026, 11, 30, 10, 0)).await;
    let outcome = |id: &str, outcomes: &[(String, TickOutcome)]| {
        outcomes
            .iter()
            .find(|(schedule, _)| schedule == id)
            .map(|(_, outcome)| outcome.clone())
            .unwrap()
    };
    assert_eq!(
        outcome(&skip, &second),
        TickOutcome::Skipped {
            task: skip_task.clone()
        }
    );
    assert!(matches!(
        outcome(&queue, &second),
        TickOutcome::Fired { .. }
    ));
    assert_eq!(
        fixture.history(&skip).await,
        [
            ScheduleEventKind::ScheduleFired,
            ScheduleEventKind::ScheduleSkipped
        ]
    );
    assert_eq!(
        fixture.history(&queue).await,
        [
            ScheduleEventKind::ScheduleFired,
            ScheduleEventKind::ScheduleFired
        ]
    );

    // Once the previous task has ended, `skip` fires again.
    fixture.service.cancel(&skip_task).await.unwrap();
    let third = fixture.tick(utc(2026, 11, 30, 11, 0)).await;
    assert!(matches!(outcome(&skip, &third), TickOutcome::Fired { .. }));
}

// ---------------------------------------------------------------------------------------
// Exactly once across processes
// ---------------------------------------------------------------------------------------

/// Two schedulers (two task services, two connections to one database file, as two
/// `serve` processes have) tick at the same moments on two threads: every occurrence of
/// every schedule fires exactly once.
#[test]
fn two_schedulers_ticking_at_once_fire_each_occurrence_exactly_once() {
    const SCHEDULES: usize = 20;
    const MINUTES: u32 = 30;
    let start = utc(2026, 11, 30, 8, 0);
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let (first_runtime, second_runtime) = (runtime(), runtime());
    let fixture = Fixture::new(start);
    let other = fixture.another_process(Workspaces::single("home", fixture.tree.workspace()));
    let ids: Vec<String> = first_runtime.block_on(async {
        let mut ids = Vec::new();
        for index in 0..SCHEDULES {
            ids.push(
                fixture
                    .create(
                        &format!("every minute {index}"),
                        "* * * * *",
                        "UTC",
                        Overlap::Queue,
                    )
                    .await,
            );
        }
        ids
    });
    let barrier = Barrier::new(2);
    for minute in 1..=MINUTES {
        fixture.clock.set(start.saturating_add(MINUTE * minute));
        std::thread::scope(|scope| {
            for (scheduler, runtime) in [
                (&fixture.scheduler, &first_runtime),
                (&other, &second_runtime),
            ] {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    runtime.block_on(scheduler.tick()).unwrap()
                });
            }
        });
    }
    first_runtime.block_on(async {
        let store = &fixture.store;
        let tasks = store.list_tasks(None, 10_000).await.unwrap();
        assert_eq!(tasks.len(), SCHEDULES * MINUTES as usize);
        assert!(tasks.iter().all(|task| task.created_by == Actor::Scheduler));
        for id in &ids {
            let fired: Vec<_> = store
                .schedule_history(id, 1000)
                .await
                .unwrap()
                .into_iter()
                .filter(|row| row.kind == ScheduleEventKind::ScheduleFired)
                .map(|row| row.occurrence.unwrap())
                .collect();
            let distinct: BTreeSet<_> = fired.iter().collect();
            assert_eq!(fired.len(), MINUTES as usize, "{id}");
            assert_eq!(
                distinct.len(),
                fired.len(),
                "{id}: an occurrence fired twice"
            );
        }
    });
}

// ---------------------------------------------------------------------------------------
// Nobody is pardoned; a gone workspace pauses
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_write_waits_for_approval_with_nothing_on_disk() {
    let model = Arc::new(
        ScriptedModel::from_value(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "report.md", "content": "Invoices: 3"}}]},
            {"content": "done"}
        ]))
        .unwrap(),
    );
    let fixture = Fixture::with_model(utc(2026, 11, 30, 8, 10), ModelSource::Provider(model as _));
    fixture
        .create("weekly report", "0 9 * * 1", "Europe/Berlin", Overlap::Skip)
        .await;
    // Monday 2026-11-30 09:00 in Berlin is 08:00 UTC: next week's Monday.
    let outcomes = fixture
        .tick(local("Europe/Berlin", 2026, 12, 7, 9, 0))
        .await;
    let [(_, TickOutcome::Fired { task, .. })] = outcomes.as_slice() else {
        panic!("{outcomes:?}")
    };
    let record = fixture.service.run_now(task).await.unwrap();
    assert_eq!(record.state, TaskState::WaitingApproval);
    assert_eq!(record.created_by, Actor::Scheduler);
    assert_eq!(record.origin.as_deref(), Some("weekly report"));
    assert!(
        !fixture.tree.workspace().join("report.md").exists(),
        "nothing written"
    );
    let approvals = fixture.store.approvals_for_task(task).await.unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].state, ApprovalState::Pending);
    assert_eq!(approvals[0].tool, "write_file");
    let created = fixture
        .store
        .list_audit(&AuditFilter {
            task_id: Some(task.clone()),
            action: Some("task_created".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(created[0].actor, Actor::Scheduler);
    // Ticking on changes nothing about it: the scheduler never approves.
    fixture
        .tick(local("Europe/Berlin", 2026, 12, 7, 9, 5))
        .await;
    assert_eq!(
        fixture.store.approvals_for_task(task).await.unwrap()[0].state,
        ApprovalState::Pending
    );
    assert!(!fixture.tree.workspace().join("report.md").exists());
}

#[tokio::test]
async fn a_schedule_whose_workspace_is_gone_is_paused_with_the_reason() {
    let fixture = Fixture::new(utc(2026, 11, 30, 8, 10));
    let unconfigured = fixture.create("a", "0 * * * *", "UTC", Overlap::Skip).await;
    // A process whose configuration no longer has the workspace `home`.
    let other = fixture.another_process(Workspaces::single("elsewhere", fixture.tree.outside()));
    fixture.clock.set(utc(2026, 11, 30, 9, 0));
    let outcomes = other.tick().await.unwrap().outcomes;
    let [(_, TickOutcome::Paused { reason })] = outcomes.as_slice() else {
        panic!("{outcomes:?}")
    };
    assert!(reason.contains("no longer configured"), "{reason}");
    let paused = fixture.scheduler.find(&unconfigured).await.unwrap();
    assert!(!paused.enabled);
    assert_eq!(paused.paused_reason.as_deref(), Some(reason.as_str()));
    assert_eq!(paused.next_fire_at, None);
    assert_eq!(
        fixture.history(&unconfigured).await,
        [ScheduleEventKind::SchedulePaused]
    );

    // The folder itself removed: paused too, and nothing crashes.
    let folder = fixture.create("b", "0 * * * *", "UTC", Overlap::Skip).await;
    std::fs::remove_dir_all(fixture.tree.workspace()).unwrap();
    let outcomes = fixture.tick(utc(2026, 11, 30, 10, 0)).await;
    let [(id, TickOutcome::Paused { reason })] = outcomes.as_slice() else {
        panic!("{outcomes:?}")
    };
    assert_eq!(id, &folder);
    assert!(reason.contains("is gone"), "{reason}");
    assert!(fixture.store.list_tasks(None, 10).await.unwrap().is_empty());
    assert!(fixture.tick(utc(2026, 11, 30, 11, 0)).await.is_empty());

    // Enabling it again clears the reason and plans from now.
    let enabled = fixture.scheduler.set_enabled("b", true).await.unwrap();
    assert_eq!(enabled.paused_reason, None);
    assert_eq!(enabled.next_fire_at, Some(utc(2026, 11, 30, 12, 0)));
}

/// The store's clock on tokio's timer, so the loop's sleeps and the stored times move
/// together on paused time.
#[derive(Debug)]
struct TokioClock {
    base: Timestamp,
    start: tokio::time::Instant,
}

impl pp_types::Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.base.saturating_add(self.start.elapsed())
    }
}

#[tokio::test(start_paused = true)]
async fn the_loop_fires_each_occurrence_when_it_comes() {
    let tree = TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let clock = Arc::new(TokioClock {
        base: utc(2026, 11, 30, 8, 0).saturating_add(Duration::from_millis(12_345)),
        start: tokio::time::Instant::now(),
    });
    let store =
        Store::open_with_clock(&data.path().join("test.db"), Arc::clone(&clock) as _).unwrap();
    let service = TaskService::new(
        store.clone(),
        TaskSettings::default(),
        Workspaces::single("home", tree.workspace()),
        ModelSource::Scripted,
    );
    let scheduler = Scheduler::new(service.clone(), store.clone());
    let id = scheduler
        .create(
            request("every minute", "* * * * *", "UTC", Overlap::Queue),
            Actor::Operator,
        )
        .await
        .unwrap()
        .id;
    let ticks = Arc::new(std::sync::Mutex::new(0_usize));
    let counter = Arc::clone(&ticks);
    let running = tokio::spawn({
        let scheduler = scheduler.clone();
        async move {
            scheduler
                .run(Duration::from_secs(30), move |report| {
                    report.unwrap();
                    *counter.lock().unwrap() += 1;
                })
                .await;
        }
    });
    tokio::time::sleep(10 * MINUTE).await;
    running.abort();
    let mut rows = store.schedule_history(&id, 100).await.unwrap();
    rows.reverse();
    assert_eq!(rows.len(), 10, "{rows:?}");
    for (minute, row) in (1..).zip(&rows) {
        assert_eq!(row.kind, ScheduleEventKind::ScheduleFired);
        assert_eq!(row.occurrence, Some(utc(2026, 11, 30, 8, minute)));
        // Woken at the occurrence, not at the next poll.
        assert!(row.at >= row.occurrence.unwrap());
        assert!(
            row.at
                < row
                    .occurrence
                    .unwrap()
                    .saturating_add(Duration::from_secs(1))
        );
    }
    // One tick per minute, plus the polls in between (every 30 s at most).
    assert!(*ticks.lock().unwrap() <= 1 + 10 * 2 + 1);
}

// ---------------------------------------------------------------------------------------
// Measurement (not a check): `cargo test -p pp-schedules --test it scheduler:: -- --ignored
// --nocapture tick_cost`.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn tick_cost_with_1000_schedules() {
    let start = utc(2026, 11, 30, 8, 0);
    let fixture = Fixture::new(start);
    for index in 0..1000 {
        fixture
            .create(
                &format!("s{index}"),
                "* * * * *",
                "Europe/Berlin",
                Overlap::Skip,
            )
            .await;
    }
    let mut report = String::new();
    for (label, at) in [
        ("all 1000 due, each fires", start.saturating_add(MINUTE)),
        (
            "all 1000 due, each skipped",
            start.saturating_add(MINUTE * 2),
        ),
        (
            "none due",
            start.saturating_add(MINUTE * 2 + Duration::from_secs(30)),
        ),
    ] {
        fixture.clock.set(at);
        let began = Instant::now();
        let outcomes = fixture.scheduler.tick().await.unwrap().outcomes;
        report.push_str(&format!(
            "{label}: {} outcomes in {:?}\n",
            outcomes.len(),
            began.elapsed()
        ));
    }
    let began = Instant::now();
    for _ in 0..1000 {
        let timetable = Timetable::parse("* * * * *", "Europe/Berlin").unwrap();
        timetable.due(start, start.saturating_add(MINUTE)).unwrap();
    }
    report.push_str(&format!("1000 parses + due: {:?}\n", began.elapsed()));
    println!("{report}");
}

/// The loop's drift on the real clock: how long after each occurrence its task was
/// created (`cargo test -p pp-schedules --test it scheduler:: -- --ignored --nocapture drift`;
/// takes three minutes of wall time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement on the real clock; run by hand"]
async fn drift_on_the_real_clock() {
    let tree = TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(&data.path().join("test.db")).unwrap();
    let service = TaskService::new(
        store.clone(),
        TaskSettings::default(),
        Workspaces::single("home", tree.workspace()),
        ModelSource::Scripted,
    );
    let scheduler = Scheduler::new(service.clone(), store.clone());
    let id = scheduler
        .create(
            request("every minute", "* * * * *", "UTC", Overlap::Queue),
            Actor::Operator,
        )
        .await
        .unwrap()
        .id;
    let running = tokio::spawn({
        let scheduler = scheduler.clone();
        async move { scheduler.run(Duration::from_secs(30), |_| {}).await }
    });
    tokio::time::sleep(3 * MINUTE).await;
    running.abort();
    for row in store.schedule_history(&id, 100).await.unwrap() {
        let occurrence = row.occurrence.unwrap();
        println!(
            "occurrence {} fired {} ms later",
            occurrence.to_rfc3339(),
            row.at.as_millis() - occurrence.as_millis()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Folders stored by path
// ---------------------------------------------------------------------------------------

/// A folder stored by its canonical path (`schedules add --workspace DIR` outside team
/// mode): only a scheduler `with_folders` (the CLI's, never the API's) stores one; it
/// fires, now and on its timetable, in another process that does not configure it, in
/// that folder; an edit that keeps it is accepted there too.
#[tokio::test]
async fn a_stored_folder_resolves_in_another_process_and_only_the_cli_stores_one() {
    let fixture = Fixture::new(utc(2026, 11, 30, 8, 10));
    let folder = fixture.tree.outside().to_path_buf();
    let path = folder.display().to_string();
    let mut wanted = request("weekly", "0 9 * * 1", "UTC", Overlap::Queue);
    wanted.workspace = Some(path.clone());
    let refused = fixture
        .scheduler
        .create(wanted.clone(), Actor::Operator)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "not_found");
    let created = fixture
        .scheduler
        .clone()
        .with_folders()
        .create(wanted.clone(), Actor::Operator)
        .await
        .unwrap();
    assert_eq!(created.spec.workspace, path);

    let other = fixture.another_process(Workspaces::single("elsewhere", fixture.tree.workspace()));
    let task = other.run_now("weekly", Actor::Operator).await.unwrap();
    assert_eq!(task.workspace_path, path);
    assert_eq!(
        task.workspace,
        folder.file_name().unwrap().to_string_lossy().as_ref()
    );
    fixture.clock.set(utc(2026, 11, 30, 9, 0));
    let outcomes = other.tick().await.unwrap().outcomes;
    let [(_, TickOutcome::Fired { task, .. })] = outcomes.as_slice() else {
        panic!("{outcomes:?}")
    };
    let fired = fixture.service.task(task).await.unwrap();
    assert_eq!(fired.workspace_path, path);

    let mut kept = wanted;
    kept.prompt = "Summarise this week's invoices".into();
    let edited = other.edit("weekly", kept).await.unwrap();
    assert_eq!(edited.spec.workspace, path);
}
