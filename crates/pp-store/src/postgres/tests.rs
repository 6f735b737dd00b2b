//! The PostgreSQL backend against a real server (`PP_TEST_POSTGRES_URL`): migrations,
//! claim exclusivity, event order under concurrent writers, the LISTEN wake-up, and one
//! pass over every store method. Each test works in a schema of its own (`pgh_…`,
//! dropped at the end). Without the variable the tests are skipped with a message,
//! except under `CI=true`, where they fail.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pp_types::{
    Actor, ApprovalState, AuditAction, Checkpoint, Event, EventKind, ManualClock, NewAudit,
    ResolutionKind, Risk, TaskState, Timestamp,
};
use serde_json::json;

use crate::Store;
use crate::StoreUrl;
use crate::types::{
    AuditFilter, Before, ChannelChange, DeliveryStatus, FireOccurrence, Fired, NewApproval,
    NewChange, NewChannel, NewChatSession, NewModelCall, NewSchedule, NewTask, Overlap, Resolve,
    ScheduleSpec, TaskChange, TaskFilter,
};

/// Where every test's manual clock starts.
const START: Timestamp = Timestamp::from_millis(1_795_984_016_123);

/// The server to test against, or `None` (skip) when none is configured.
#[expect(
    clippy::disallowed_methods,
    reason = "the test server's address comes from the environment, as in the conformance suite"
)]
fn server() -> Option<String> {
    match std::env::var("PP_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PP_TEST_POSTGRES_URL must be set under CI"
            );
            eprintln!("skipped: PP_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

/// A fresh schema on the test server; `url` puts it first on the search path.
struct Schema {
    base: String,
    name: String,
    url: String,
}

impl Schema {
    async fn new(base: &str) -> Schema {
        let name = format!("pgh_{}", crate::ids::random_suffix().unwrap());
        let (client, connection) =
            tokio_postgres::connect(base, super::tls::MakeRustls::new().unwrap())
                .await
                .unwrap();
        let driver = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        drop(client);
        let _ = driver.await;
        let separator = if base.contains('?') { '&' } else { '?' };
        let url =
            format!("{base}{separator}options=-csearch_path%3D{name}&application_name={name}");
        Schema {
            base: base.to_owned(),
            name,
            url,
        }
    }

    async fn store(&self, clock: Arc<ManualClock>) -> Store {
        Store::connect(&StoreUrl::parse(&self.url).unwrap(), clock)
            .await
            .unwrap()
    }

    async fn drop_schema(self) {
        let (client, connection) =
            tokio_postgres::connect(&self.base, super::tls::MakeRustls::new().unwrap())
                .await
                .unwrap();
        let driver = tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .unwrap();
        drop(client);
        let _ = driver.await;
    }
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(START))
}

fn new_task(prompt: &str) -> NewTask {
    NewTask {
        prompt: prompt.into(),
        workspace: "home".into(),
        workspace_path: "/srv/home".into(),
        created_by: Actor::Operator,
        origin: None,
        script: None,
    }
}

fn started(step: u32) -> Event {
    Event {
        step,
        kind: EventKind::TaskStarted {
            prompt: format!("step {step}"),
        },
    }
}

fn checkpoint() -> Checkpoint {
    serde_json::from_value(json!({
        "version": pp_types::CHECKPOINT_VERSION,
        "pending": {
            "call": {"id": "call_1", "name": "write_file", "arguments": "{}"},
            "arguments": {"path": "a.md"},
            "capability": "file:write",
            "risk": "high",
            "preview": null
        },
        "later_calls": [],
        "messages": [],
        "step": 1,
        "denials": 0,
        "tokens_used": 0,
        "last_usage": null,
        "events": []
    }))
    .unwrap()
}

fn new_approval() -> NewApproval {
    NewApproval {
        tool: "write_file".into(),
        capability: "file:write".into(),
        risk: Risk::High,
        label: None,
        target: Some("a.md".into()),
        arguments: json!({"path": "a.md"}),
        fingerprint: Some("absent".into()),
        checkpoint: checkpoint(),
        call_id: "call_1".into(),
        changeset_id: None,
        revertible: Some(true),
    }
}

fn approval_required() -> Event {
    Event {
        step: 1,
        kind: EventKind::ApprovalRequired {
            approval_id: None,
            changeset_id: None,
            call_id: "call_1".into(),
            name: "write_file".into(),
            capability: "file:write".into(),
            risk: Risk::High,
            arguments: json!({"path": "a.md"}),
            preview: None,
        },
    }
}

fn approve() -> Resolve {
    Resolve {
        state: ApprovalState::Approved,
        actor: Actor::Operator,
        reason: None,
        edited_arguments: Some(json!({"path": "b.md"})),
        edited_preview: None,
        fingerprint: None,
        audit: NewAudit::new(AuditAction::ApprovalApproved),
        task_to: TaskState::Running,
        events: vec![Event {
            step: 1,
            kind: EventKind::ApprovalResolved {
                call_id: "call_1".into(),
                decision: ResolutionKind::Approved,
                edited: true,
                reason: None,
                arguments: None,
                preview: None,
                edited_by: None,
            },
        }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_run_once_even_when_two_stores_start_together() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let (one, two) = tokio::join!(schema.store(clock()), schema.store(clock()));
    let three = schema.store(clock()).await;
    for store in [&one, &two, &three] {
        assert_eq!(
            store.schema_version().await.unwrap(),
            super::schema::SCHEMA_VERSION
        );
        assert_eq!(store.backend_name(), "postgres");
    }
    let task = one.create_task(new_task("hello")).await.unwrap();
    assert_eq!(three.task(&task.id).await.unwrap().prompt, "hello");
    drop((one, two, three));
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_claimers_never_claim_one_task_twice() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let store = schema.store(clock()).await;
    let mut created = HashSet::new();
    for index in 0..80 {
        let task = store
            .create_task(new_task(&format!("task {index}")))
            .await
            .unwrap();
        created.insert(task.id);
    }
    let mut workers = Vec::new();
    for _ in 0..8 {
        // Each claimer is its own store (its own pool), as separate processes are.
        let store = schema.store(clock()).await;
        workers.push(tokio::spawn(async move {
            let mut claimed = Vec::new();
            while let Some(task) = store.claim_queued().await.unwrap() {
                assert_eq!(task.state, TaskState::Running);
                claimed.push(task.id);
            }
            claimed
        }));
    }
    let mut claimed = Vec::new();
    for worker in workers {
        claimed.extend(worker.await.unwrap());
    }
    let unique: HashSet<_> = claimed.iter().cloned().collect();
    assert_eq!(claimed.len(), 80, "every task claimed exactly once");
    assert_eq!(unique, created);
    drop(store);
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reader_resuming_after_the_last_seq_never_skips_an_event() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let store = schema.store(clock()).await;
    const WRITERS: usize = 8;
    const ROUNDS: u32 = 40;
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let store = schema.store(clock()).await;
        let task = store
            .create_task(new_task(&format!("writer {writer}")))
            .await
            .unwrap();
        writers.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                // Two events per transaction, so transactions overlap while they insert.
                store
                    .append_events(&task.id, &[started(round), started(round)])
                    .await
                    .unwrap();
            }
        }));
    }
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let store = schema.store(clock()).await;
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut last = 0;
            loop {
                // Read the flag first: a page read after the writers finished is final.
                let finished = done.load(Ordering::SeqCst);
                let page = store.events_after(last, 7).await.unwrap();
                if page.is_empty() && finished {
                    return seen;
                }
                for event in page {
                    last = event.seq;
                    seen.push(event.seq);
                }
            }
        })
    };
    for writer in writers {
        writer.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let seen = reader.await.unwrap();
    let all: Vec<i64> = store
        .events_after(0, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|event| event.seq)
        .collect();
    let skipped: Vec<i64> = all
        .iter()
        .filter(|seq| !seen.contains(seq))
        .copied()
        .collect();
    assert_eq!(
        skipped,
        Vec::<i64>::new(),
        "the resuming reader skipped events"
    );
    assert_eq!(seen, all, "the resuming reader saw every event, in order");
    assert_eq!(all.len(), WRITERS * ROUNDS as usize * 2);
    assert_eq!(store.last_seq().await.unwrap(), *all.last().unwrap());
    drop(store);
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wait_for_events_wakes_on_a_commit_from_another_store() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let waiter = schema.store(clock()).await;
    let writer = schema.store(clock()).await;
    let task = writer.create_task(new_task("wake")).await.unwrap();
    let last = waiter.last_seq().await.unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            // A bound for liveness only: the wake-up must come from the notification.
            waiter
                .wait_for_events(last, Duration::from_secs(3600))
                .await;
        })
    };
    writer.append_events(&task.id, &[started(0)]).await.unwrap();
    tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("woken by the notification")
        .unwrap();
    assert_eq!(waiter.events_after(last, 10).await.unwrap().len(), 1);
    // Already past: returns at once.
    tokio::time::timeout(
        Duration::from_secs(120),
        waiter.wait_for_events(last, Duration::from_secs(3600)),
    )
    .await
    .expect("an event above after_seq is already known");
    drop((waiter, writer));
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sslmode_require_never_falls_back_to_a_plain_connection() {
    let Some(base) = server() else { return };
    // The test server speaks no TLS: a store that requires it must not connect.
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}sslmode=require");
    let error = Store::connect(&StoreUrl::parse(&url).unwrap(), clock())
        .await
        .unwrap_err();
    assert!(matches!(error, crate::Error::Postgres(_)), "{error}");
    // The message says what to change, not only "error performing TLS handshake".
    let message = error.to_string();
    assert!(
        message.contains("this server does not offer TLS") && message.contains("sslmode=prefer"),
        "{message}"
    );
}

#[test]
fn a_tls_mismatch_says_what_to_change() {
    use tokio_postgres::config::SslMode;
    let plain = "error performing TLS handshake: server does not support TLS";
    assert!(super::tls_hint(plain, SslMode::Require).contains("does not offer TLS"));
    let untrusted = "error performing TLS handshake: invalid peer certificate: UnknownIssuer";
    assert!(super::tls_hint(untrusted, SslMode::Require).contains("SSL_CERT_FILE"));
    let only_tls = "db error: FATAL: no pg_hba.conf entry for host \"127.0.0.1\", user \"p\", \
                    database \"p\", no encryption";
    assert!(super::tls_hint(only_tls, SslMode::Prefer).contains("sslmode=require"));
    assert!(super::tls_hint(only_tls, SslMode::Disable).contains("sslmode=require"));
    assert_eq!(super::tls_hint("connection refused", SslMode::Require), "");
    assert_eq!(super::tls_hint(plain, SslMode::Prefer), "");
}

/// A server with TLS (`PP_TEST_POSTGRES_TLS_URL`, with `sslmode=require`; its
/// certificate trusted through `SSL_CERT_FILE`): skipped when unset, also under CI.
#[expect(
    clippy::disallowed_methods,
    reason = "the TLS test server's address comes from the environment"
)]
fn tls_server() -> Option<String> {
    let url = std::env::var("PP_TEST_POSTGRES_TLS_URL")
        .ok()
        .filter(|url| !url.is_empty());
    if url.is_none() {
        eprintln!("skipped: PP_TEST_POSTGRES_TLS_URL is not set");
    }
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sslmode_require_connects_over_verified_tls() {
    let Some(base) = tls_server() else { return };
    let schema = Schema::new(&base).await;
    let waiter = schema.store(clock()).await;
    let writer = schema.store(clock()).await;
    let task = writer.create_task(new_task("over tls")).await.unwrap();
    let last = waiter.last_seq().await.unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            waiter
                .wait_for_events(last, Duration::from_secs(3600))
                .await;
        })
    };
    writer.append_events(&task.id, &[started(0)]).await.unwrap();
    tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("the listener, over TLS too, woke the waiter")
        .unwrap();
    let (admin, connection) =
        tokio_postgres::connect(&base, super::tls::MakeRustls::new().unwrap())
            .await
            .unwrap();
    let driver = tokio::spawn(connection);
    let row = admin
        .query_one(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.application_name LIKE $1",
            &[&format!("{}%", schema.name)],
        )
        .await
        .unwrap();
    let (all, encrypted): (i64, i64) = (row.get(0), row.get(1));
    assert!(all >= 4, "two pools and two listeners: {all}");
    assert_eq!(all, encrypted, "every connection is encrypted");
    drop(admin);
    let _ = driver.await;
    drop((waiter, writer));
    schema.drop_schema().await;
}

/// One pass over every store method, checking what each returns: catches SQL the server
/// refuses and decoding mistakes before the conformance suite runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_method_works_on_postgres() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let clock = clock();
    let store = schema.store(clock.clone()).await;

    // Tasks.
    let task = store
        .create_task(new_task("Summarise Notes"))
        .await
        .unwrap();
    assert_eq!(task.state, TaskState::Queued);
    let running = store.create_running_task(new_task("mcp")).await.unwrap();
    assert_eq!(running.state, TaskState::Running);
    assert_eq!(store.list_tasks(None, 10).await.unwrap()[0].id, running.id);
    assert_eq!(
        store.list_tasks(Some(TaskState::Queued), 10).await.unwrap()[0].id,
        task.id
    );
    let claimed = store.claim_queued().await.unwrap().unwrap();
    assert_eq!(claimed.id, task.id);
    assert!(store.claim_queued().await.unwrap().is_none());
    let conflict = store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap_err();
    assert!(matches!(
        conflict,
        crate::Error::Conflict {
            current: TaskState::Running,
            ..
        }
    ));
    store.heartbeat(&task.id).await.unwrap();

    // Approvals.
    let (approval, events) = store
        .suspend(
            &task.id,
            vec![new_approval()],
            TaskChange {
                add_running_ms: 40,
                events: vec![approval_required()],
                ..TaskChange::to(TaskState::WaitingApproval)
            },
        )
        .await
        .map(|(mut approvals, events)| (approvals.remove(0), events))
        .unwrap();
    assert!(matches!(
        &events[0].event.kind,
        EventKind::ApprovalRequired { approval_id: Some(id), .. } if *id == approval.id.to_string()
    ));
    assert_eq!(store.approval(&approval.id).await.unwrap(), approval);
    assert_eq!(
        store
            .list_approvals(Some(ApprovalState::Pending), 5)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.list_approvals(None, 5).await.unwrap().len(), 1);
    assert_eq!(store.approvals_for_task(&task.id).await.unwrap().len(), 1);
    let (resolved, after) = store.resolve(&approval.id, approve()).await.unwrap();
    assert_eq!(resolved.state, ApprovalState::Approved);
    assert_eq!(resolved.edited_arguments, Some(json!({"path": "b.md"})));
    assert_eq!(after.state, TaskState::Running);
    assert_eq!(after.running_ms, 40);
    assert!(matches!(
        store.resolve(&approval.id, approve()).await.unwrap_err(),
        crate::Error::AlreadyResolved { .. }
    ));
    assert!(store.approved_call_pending(&task.id).await.unwrap());
    let refused = store
        .cancel_task(
            &task.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Cancelled),
            NewAudit::new(AuditAction::TaskCancelled),
        )
        .await
        .unwrap_err();
    assert!(matches!(refused, crate::Error::ApprovedCallPending { .. }));
    let stale = store
        .mark_stale(
            &approval.id,
            "changed",
            NewAudit::new(AuditAction::ApprovalStale),
        )
        .await
        .unwrap();
    assert_eq!(stale.state, ApprovalState::Stale);

    // Events, changes, model calls.
    let stored = store
        .append_events_with_calls(
            &task.id,
            &[started(2)],
            vec![NewAudit {
                approval_id: Some(approval.id.clone()),
                ..NewAudit::new(AuditAction::ToolExecuted)
            }],
            vec![NewChange {
                task_id: task.id.clone(),
                approval_id: Some(approval.id.clone()),
                tool: "write_file".into(),
                kind: pp_types::ChangeKind::Created,
                path: Some("a.md".into()),
                from_path: None,
                root: pp_types::ChangeRoot::Workspace,
                bytes: Some(3),
                before: Before::Absent,
                before_mode: None,
                after_fingerprint: Some("f".into()),
                after_sha256: Some("ab".into()),
            }],
            vec![NewModelCall {
                step: 2,
                model: "scripted".into(),
                usage: Some(pp_types::Usage {
                    prompt_tokens: 10,
                    completion_tokens: 5,
                    cached_tokens: 1,
                    reasoning_tokens: 0,
                }),
                cost: Some(pp_types::Cost {
                    amount: 0.5,
                    currency: "USD".into(),
                }),
            }],
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    store
        .append_events_with_records(&task.id, &[started(3)], Vec::new(), Vec::new())
        .await
        .unwrap();
    store
        .append_events_with_audit(&task.id, &[started(4)], Vec::new())
        .await
        .unwrap();
    let all = store.task_events(&task.id, 0).await.unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(
        store
            .task_events_page(&task.id, all[1].seq, 2)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(store.events_after(0, 100).await.unwrap(), all);
    assert_eq!(store.last_seq().await.unwrap(), all[4].seq);
    let record = store.task(&task.id).await.unwrap();
    assert_eq!(record.usage.total_tokens, 15);
    assert_eq!(
        record.usage.cost.as_ref().map(|cost| cost.amount),
        Some(0.5)
    );
    assert_eq!(record.changes.created, 1);
    assert_eq!(store.model_calls(&task.id).await.unwrap().len(), 1);
    let changes = store.task_changes(&task.id).await.unwrap();
    assert_eq!(changes.len(), 1);
    assert!(changes[0].change.revertible);
    assert_eq!(store.approval_changes(&approval.id).await.unwrap().len(), 1);
    assert_eq!(
        store.change(&changes[0].change.id).await.unwrap(),
        changes[0]
    );
    assert_eq!(store.approval_ledger(&approval.id).await.unwrap().len(), 3);
    let revert = NewChange {
        task_id: task.id.clone(),
        approval_id: None,
        tool: "revert".into(),
        kind: pp_types::ChangeKind::Reverted,
        path: Some("a.md".into()),
        from_path: None,
        root: pp_types::ChangeRoot::Workspace,
        bytes: None,
        before_mode: None,
        before: Before::Kept("ab".into()),
        after_fingerprint: None,
        after_sha256: None,
    };
    let intent = store
        .begin_revert(&changes[0].change.id, revert.clone())
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .begin_revert(&changes[0].change.id, revert)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.pending_reverts(None).await.unwrap().len(), 1);
    assert_eq!(
        store.pending_reverts(Some(&task.id)).await.unwrap().len(),
        1
    );
    let done = store
        .finish_revert(
            &intent.change.id,
            Some("g"),
            Some(0),
            NewAudit::new(AuditAction::ChangeReverted),
        )
        .await
        .unwrap();
    assert_eq!(done.state, crate::ChangeState::Done);
    store.abandon_revert(&intent.change.id).await.unwrap();
    clock.advance(Duration::from_secs(10));
    let (expired, kept) = store
        .expire_snapshots(Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!((expired, kept.len()), (1, 0));
    store
        .insert_change(NewChange {
            task_id: task.id.clone(),
            approval_id: None,
            tool: "write_file".into(),
            kind: pp_types::ChangeKind::EffectsUnknown,
            path: None,
            from_path: None,
            root: pp_types::ChangeRoot::Workspace,
            bytes: None,
            before: Before::Unknown,
            before_mode: None,
            after_fingerprint: None,
            after_sha256: None,
        })
        .await
        .unwrap();

    // Transitions, audit, search.
    let (finished, _) = store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange {
                final_text: Some("done".into()),
                events: vec![started(5)],
                ..TaskChange::to(TaskState::Completed)
            },
        )
        .await
        .unwrap();
    assert!(finished.finished_at.is_some());
    store
        .append_audit(NewAudit::new(AuditAction::ConsoleLogin))
        .await
        .unwrap();
    let audit = store
        .list_audit(&AuditFilter {
            task_id: Some(task.id.clone()),
            exclude: vec![AuditAction::ConsoleLogin],
            actor: Some(Actor::Operator),
            limit: 3,
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 3);
    assert!(audit[0].id > audit[1].id);
    let page = store
        .list_audit(&AuditFilter {
            before_id: Some(audit[0].id),
            task_id: Some(task.id.clone()),
            action: Some("task_created".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    let found = store
        .search_tasks(&TaskFilter {
            query: Some("notes".into()),
            state: Some(TaskState::Completed),
            workspace: Some("home".into()),
            created_by: Some(Actor::Operator),
            before: Some(running.id.clone()),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        store.interrupt_running("restart").await.unwrap(),
        vec![running.id.clone()]
    );
    store
        .claim(&running.id, &[TaskState::Interrupted])
        .await
        .unwrap();
    clock.advance(Duration::from_secs(600));
    assert_eq!(
        store
            .interrupt_stale("stale", Duration::from_secs(60))
            .await
            .unwrap()
            .interrupted,
        vec![running.id.clone()]
    );
    let reopened = store
        .reopen_approval(
            &running.id,
            &[TaskState::Interrupted],
            new_approval(),
            vec![approval_required()],
        )
        .await
        .unwrap();
    assert_eq!(reopened.state, ApprovalState::Pending);
    let cancelled = store
        .cancel_task(
            &running.id,
            &[TaskState::WaitingApproval],
            TaskChange {
                error: Some("stop".into()),
                ..TaskChange::to(TaskState::Cancelled)
            },
            NewAudit::new(AuditAction::TaskCancelled),
        )
        .await
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(
        store.approval(&reopened.id).await.unwrap().state,
        ApprovalState::Cancelled
    );

    // Chat sessions.
    let session = store
        .create_chat_session(
            NewChatSession {
                title: Some("chat".into()),
                workspace: "home".into(),
                created_by: Actor::Operator,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(store.chat_session(&session.id).await.unwrap(), session);
    let turn = store
        .add_chat_turn(&session.id, new_task("hi"), None)
        .await
        .unwrap();
    assert_eq!(turn.index, 1);
    assert!(matches!(
        store
            .add_chat_turn(&session.id, new_task("again"), None)
            .await,
        Err(crate::Error::SessionBusy { .. })
    ));
    assert_eq!(
        store.turn_of_task(&turn.task.id).await.unwrap(),
        Some((session.id.clone(), 1))
    );
    store
        .set_turn_messages(&turn.task.id, &[pp_types::Message::user("hi")])
        .await
        .unwrap();
    store
        .set_session_summary(&session.id, "summary", 1)
        .await
        .unwrap();
    let turns = store.chat_turns(&session.id).await.unwrap();
    assert_eq!(turns[0].messages.as_ref().map(Vec::len), Some(1));
    assert_eq!(
        store.chat_sessions(5).await.unwrap()[0].summarised_through,
        1
    );
    assert!(matches!(
        store.delete_chat_session(&session.id, None).await,
        Err(crate::Error::SessionBusy { .. })
    ));
    store
        .transition(
            &turn.task.id,
            &[TaskState::Queued],
            TaskChange::to(TaskState::Cancelled),
        )
        .await
        .unwrap();
    store.delete_chat_session(&session.id, None).await.unwrap();

    // Schedules.
    let spec = ScheduleSpec {
        name: "daily".into(),
        cron: "0 9 * * *".into(),
        time_zone: "UTC".into(),
        prompt: "report".into(),
        workspace: "home".into(),
        session: None,
        overlap: Overlap::Skip,
    };
    let next = START.saturating_add(Duration::from_secs(3600));
    let schedule = store
        .create_schedule(&NewSchedule {
            spec: spec.clone(),
            enabled: true,
            created_by: Actor::Operator,
            next_fire_at: Some(next),
        })
        .await
        .unwrap();
    assert!(matches!(
        store
            .create_schedule(&NewSchedule {
                spec: spec.clone(),
                enabled: true,
                created_by: Actor::Operator,
                next_fire_at: None,
            })
            .await,
        Err(crate::Error::NameTaken { .. })
    ));
    assert_eq!(store.schedule(&schedule.id).await.unwrap(), schedule);
    assert_eq!(store.find_schedule("daily").await.unwrap().id, schedule.id);
    assert_eq!(store.schedules().await.unwrap().len(), 1);
    assert_eq!(store.earliest_fire_at().await.unwrap(), Some(next));
    assert_eq!(store.due_schedules(next, 5).await.unwrap().len(), 1);
    let fire = FireOccurrence {
        schedule_id: schedule.id.clone(),
        expected_next: next,
        expected_updated: schedule.updated_at,
        occurrence: next,
        missed: 1,
        next_fire_at: Some(next.saturating_add(Duration::from_secs(86_400))),
        task: new_task("report"),
    };
    assert!(matches!(
        store.fire_schedule(fire.clone()).await.unwrap(),
        Fired::Task(_)
    ));
    assert_eq!(store.fire_schedule(fire).await.unwrap(), Fired::Lost);
    let now_task = store
        .run_schedule_now(&schedule.id, new_task("report"), Actor::Operator)
        .await
        .unwrap();
    assert_eq!(now_task.state, TaskState::Queued);
    assert_eq!(
        store
            .schedule_history(&schedule.id, 10)
            .await
            .unwrap()
            .len(),
        3
    );
    let updated = store
        .update_schedule(&schedule.id, &spec, Some(next))
        .await
        .unwrap();
    assert_eq!(updated.next_fire_at, Some(next));
    let disabled = store
        .set_schedule_enabled(&schedule.id, false, None)
        .await
        .unwrap();
    assert!(!disabled.enabled);
    assert!(
        !store
            .pause_schedule(&schedule.id, next, "gone")
            .await
            .unwrap()
    );
    store.delete_schedule(&schedule.id).await.unwrap();
    assert!(matches!(
        store.delete_schedule(&schedule.id).await,
        Err(crate::Error::NotFound { .. })
    ));

    // Channels and signatures.
    let channel = store
        .create_channel(&NewChannel {
            name: "forms".into(),
            template: None,
            workspace: None,
            secret_sealed: vec![1, 2, 3],
        })
        .await
        .unwrap();
    assert!(channel.enabled);
    let edited = store
        .edit_channel(
            "forms",
            ChannelChange {
                enabled: Some(false),
                secret_sealed: Some(vec![9]),
                ..ChannelChange::default()
            },
        )
        .await
        .unwrap();
    assert!(edited.rotated_at.is_some());
    assert_eq!(store.find_channel("forms").await.unwrap(), Some(edited));
    assert_eq!(store.list_channels().await.unwrap().len(), 1);
    store
        .record_delivery("forms", DeliveryStatus::Accepted, None, Some(&task.id))
        .await
        .unwrap();
    assert_eq!(store.channel_deliveries("forms", 5).await.unwrap().len(), 1);
    store.remove_channel("forms").await.unwrap();
    let expires = START.saturating_add(Duration::from_secs(86_400));
    assert!(store.claim_signature("forms:abc", expires).await.unwrap());
    assert!(!store.claim_signature("forms:abc", expires).await.unwrap());

    // Logins and retention.
    let login = store.create_login(Duration::from_secs(60)).await.unwrap();
    assert!(store.login_valid(&login).await.unwrap());
    store.delete_login(&login).await.unwrap();
    assert!(!store.login_valid(&login).await.unwrap());
    store.create_login(Duration::from_secs(60)).await.unwrap();
    assert_eq!(store.delete_all_logins().await.unwrap(), 1);
    clock.advance(Duration::from_secs(86_400 * 40));
    let report = store.prune(Duration::from_secs(86_400 * 30)).await.unwrap();
    assert!(report.tasks >= 2 && report.events >= 6, "{report:?}");
    assert!(store.task_events(&task.id, 0).await.unwrap().is_empty());
    assert_eq!(
        store.task(&task.id).await.unwrap().state,
        TaskState::Completed
    );

    drop(store);
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_listener_reconnects_after_its_connection_is_killed() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let waiter = schema.store(clock()).await;
    let writer = schema.store(clock()).await;
    let task = writer.create_task(new_task("wake")).await.unwrap();
    // Kill the waiter's and the writer's listening connections (named after the schema).
    let (admin, connection) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let listeners = format!("{} events", schema.name);
    // The listeners connect in the background: wait until both are there.
    for _ in 0..1200 {
        let row = admin
            .query_one(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&listeners],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1",
            &[&listeners],
        )
        .await
        .unwrap();
    assert_eq!(killed.len(), 2, "one listener per store");
    drop(admin);
    let _ = driver.await;
    let last = waiter.last_seq().await.unwrap();
    let waiting = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            waiter
                .wait_for_events(last, Duration::from_secs(3600))
                .await;
        })
    };
    writer.append_events(&task.id, &[started(0)]).await.unwrap();
    // Woken by a notification on the new connection, or by the newest seq it reads
    // after reconnecting: either way without waiting out the hour.
    tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("woken after the listener reconnected")
        .unwrap();
    drop((waiter, writer));
    schema.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_keep_their_order_and_seqs_under_concurrent_writers() {
    let Some(base) = server() else { return };
    let schema = Schema::new(&base).await;
    let store = schema.store(clock()).await;
    let mut writers = Vec::new();
    for writer in 0..8 {
        let store = store.clone();
        let task = store
            .create_task(new_task(&format!("batch {writer}")))
            .await
            .unwrap();
        writers.push(tokio::spawn(async move {
            let batch: Vec<Event> = (0..25).map(started).collect();
            let mut returned = Vec::new();
            for _ in 0..4 {
                returned.extend(store.append_events(&task.id, &batch).await.unwrap());
            }
            (task.id, returned)
        }));
    }
    for writer in writers {
        let (task, returned) = writer.await.unwrap();
        let stored = store.task_events(&task, 0).await.unwrap();
        assert_eq!(
            stored, returned,
            "what append_events returned is what was stored"
        );
        let steps: Vec<u32> = stored.iter().map(|event| event.event.step).collect();
        let expected: Vec<u32> = (0..4).flat_map(|_| 0..25).collect();
        assert_eq!(steps, expected, "each batch in its order");
        for pair in stored.windows(2) {
            assert!(pair[0].seq < pair[1].seq);
        }
    }
    drop(store);
    schema.drop_schema().await;
}
