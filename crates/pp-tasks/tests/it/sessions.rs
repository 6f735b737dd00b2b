//! Chat sessions: turns as tasks, the busy rule, history and summarisation.

use std::collections::HashSet;
use std::sync::Arc;

use pp_agent::ModelRequest;
use pp_chat::{NewSession, Sessions};
use pp_model::ScriptedModel;
use pp_tasks::{Error, ModelSource, TaskSettings};
use pp_types::{Actor, Message, TaskRecord, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fixture::{Fixture, approve};

fn scripted(turns: Value) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::from_value(turns).unwrap())
}

fn fixture_with(model: &Arc<ScriptedModel>, settings: TaskSettings) -> Fixture {
    Fixture::with_model(settings, ModelSource::Provider(Arc::clone(model) as _))
}

/// Sends `text` to `session` and runs the turn it starts, here; the turn as it ended
/// (or paused).
async fn take_turn(fixture: &Fixture, session: &str, text: &str) -> TaskRecord {
    let task = sessions(fixture)
        .send_message(session, text.into(), Actor::Operator, None)
        .await
        .unwrap();
    fixture.service.run_now(&task.id).await.unwrap()
}

/// The chat sessions of the fixture's service, as the front ends build them (`pp-chat`).
fn sessions(fixture: &Fixture) -> Sessions {
    Sessions::new(fixture.service.clone(), fixture.store().clone())
}

async fn new_session(fixture: &Fixture) -> String {
    sessions(fixture)
        .create_session(NewSession {
            workspace: None,
            title: Some("  Notes  ".into()),
            actor: Actor::Operator,
        })
        .await
        .unwrap()
        .id
}

/// Every assistant tool call is answered right after it, once; no result is orphaned.
fn assert_pairs_intact(request: &ModelRequest) {
    let mut open: Vec<String> = Vec::new();
    let mut answered = HashSet::new();
    for message in &request.messages {
        match message {
            Message::Tool { tool_call_id, .. } => {
                let position = open.iter().position(|id| id == tool_call_id);
                assert!(
                    position.is_some(),
                    "orphaned result {tool_call_id}: {request:#?}"
                );
                open.retain(|id| id != tool_call_id);
                assert!(answered.insert(tool_call_id.clone()), "answered twice");
            }
            other => {
                assert!(open.is_empty(), "unanswered calls {open:?}: {request:#?}");
                if let Message::Assistant { tool_calls, .. } = other {
                    open = tool_calls.iter().map(|call| call.id.clone()).collect();
                }
            }
        }
    }
    assert!(open.is_empty(), "unanswered calls {open:?}");
}

/// A compact view of a request: `role: text` per message (tool calls by name).
fn transcript(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { .. } => "system".to_owned(),
            Message::User { content } => format!("user: {content}"),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } if tool_calls.is_empty() => {
                format!("assistant: {}", content.as_deref().unwrap_or(""))
            }
            Message::Assistant { tool_calls, .. } => {
                let names: Vec<&str> = tool_calls.iter().map(|call| call.name.as_str()).collect();
                format!("calls: {}", names.join(","))
            }
            Message::Tool { content, .. } => {
                format!("result: {}", content.chars().take(20).collect::<String>())
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_waiting_for_approval_makes_the_session_busy_until_it_is_resolved() {
    let model = scripted(json!([
        {"content": "one"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\n"}}]},
        {"content": "written"},
        {"content": "three"},
    ]));
    let fixture = fixture_with(&model, TaskSettings::default());
    let session = new_session(&fixture).await;
    let service = &fixture.service;
    let chat = sessions(&fixture);

    let first = take_turn(&fixture, &session, "first").await;
    assert_eq!(first.state, TaskState::Completed);

    let second = chat
        .send_message(&session, " second ".into(), Actor::Operator, None)
        .await
        .unwrap();
    assert_eq!(second.prompt, "second");
    let waiting = service.run_now(&second.id).await.unwrap();
    assert_eq!(waiting.state, TaskState::WaitingApproval);

    let busy = chat
        .send_message(&session, "third".into(), Actor::Operator, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&busy, Error::SessionBusy { id, task_id } if *id == session && *task_id == second.id),
        "{busy:?}"
    );
    assert!(matches!(
        chat.delete_session(&session).await,
        Err(Error::SessionBusy { .. })
    ));

    let pending = fixture.pending(&second.id).await;
    let done = service.resolve(&pending.id, approve()).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("notes.txt"), "hi\n");

    let third = take_turn(&fixture, &session, "third").await;
    assert_eq!(third.state, TaskState::Completed);

    let requests = model.requests();
    let mut lines = transcript(requests.last().unwrap());
    assert!(lines[5].starts_with("result: "), "{lines:?}");
    lines[5] = "result".into();
    assert_eq!(
        lines,
        [
            "system",
            "user: first",
            "assistant: one",
            "user: second",
            "calls: write_file",
            "result",
            "assistant: written",
            "user: third",
        ]
    );
    requests.iter().for_each(assert_pairs_intact);

    let view = chat.session(&session).await.unwrap();
    assert_eq!(view.session.title.as_deref(), Some("Notes"));
    assert_eq!(view.summary, None);
    let turns: Vec<(u32, &str, TaskState, Option<&str>)> = view
        .turns
        .iter()
        .map(|turn| {
            (
                turn.index,
                turn.prompt.as_str(),
                turn.state,
                turn.final_text.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [
            (1, "first", TaskState::Completed, Some("one")),
            (2, "second", TaskState::Completed, Some("written")),
            (3, "third", TaskState::Completed, Some("three")),
        ]
    );
    assert_eq!(view.turns[1].task_id, second.id);
    // Each turn is a task of its own, with its own audit trail.
    assert_eq!(fixture.audit_count("task_created").await, 3);
    assert_eq!(fixture.audit_count("approval_approved").await, 1);

    chat.delete_session(&session).await.unwrap();
    assert!(matches!(
        chat.session(&session).await,
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
    assert_eq!(
        service.task(&second.id).await.unwrap().state,
        TaskState::Completed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_history_is_summarised_whole_turns_at_a_time() {
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]});
    let model = scripted(json!([
        read, {"content": "one"},
        read, {"content": "two"},
        read, {"content": "three"},
        {"content": "SUMMARY: the user read big.txt twice.",
         "usage": {"prompt_tokens": 700, "completion_tokens": 30}},
        {"content": "four"},
    ]));
    // Each turn reads ~20 000 characters (~5 000 tokens): turn 4 starts with ~15 000
    // tokens of history, past 80 % of 15 000; folding turns 1 and 2 gets it under half.
    let settings = TaskSettings {
        context_window: Some(15_000),
        ..TaskSettings::default()
    };
    let fixture = fixture_with(&model, settings);
    fixture.tree.file("big.txt", &"lorem ipsum ".repeat(1700));
    let session = new_session(&fixture).await;
    let mut tasks = Vec::new();
    for prompt in ["first", "second", "third", "fourth"] {
        let done = take_turn(&fixture, &session, prompt).await;
        assert_eq!(done.state, TaskState::Completed, "{done:?}");
        tasks.push(done.id);
    }

    let requests = model.requests();
    assert_eq!(requests.len(), 8);
    // Turns 1-3 summarised nothing.
    for (task, _) in tasks.iter().zip(0..3) {
        assert!(
            !fixture
                .event_types(task)
                .await
                .contains(&"session_summarised")
        );
    }
    let summarising = &requests[6];
    assert!(summarising.tools.is_empty());
    assert_eq!(
        summarising.messages[0],
        Message::system(pp_tasks::SUMMARY_INSTRUCTION)
    );
    let Message::User { content } = &summarising.messages[1] else {
        panic!("{summarising:?}");
    };
    assert!(
        content.contains("Turn 1:\nUser: first\nAssistant called `read_file`"),
        "{content}"
    );
    assert!(content.contains("Turn 2:\nUser: second"), "{content}");
    assert!(!content.contains("Turn 3:"), "{content}");

    let fourth = &requests[7];
    assert_pairs_intact(fourth);
    let Message::System { content: system } = &fourth.messages[0] else {
        panic!("{fourth:?}");
    };
    assert!(
        system.contains("SUMMARY: the user read big.txt twice."),
        "{system}"
    );
    let lines = transcript(fourth);
    assert_eq!(lines[1..2], ["user: third".to_owned()]);
    assert_eq!(lines[2], "calls: read_file");
    assert!(lines[3].starts_with("result: "));
    assert_eq!(
        lines[4..],
        ["assistant: three".to_owned(), "user: fourth".to_owned()]
    );

    let events = fixture.store().task_events(&tasks[3], 0).await.unwrap();
    let summarised: Vec<&pp_types::EventKind> = events
        .iter()
        .map(|stored| &stored.event.kind)
        .filter(|kind| matches!(kind, pp_types::EventKind::SessionSummarised { .. }))
        .collect();
    assert_eq!(summarised.len(), 1);
    let pp_types::EventKind::SessionSummarised {
        session_id,
        through_turn,
        turns,
        tokens_before,
        tokens_after,
        usage,
    } = summarised[0]
    else {
        unreachable!()
    };
    assert_eq!(
        (session_id.as_str(), *through_turn, *turns),
        (session.as_str(), 2, 2)
    );
    // The summarising call counts in the turn's usage, as a model call of its own.
    assert_eq!(usage.map(|usage| usage.total()), Some(730));
    let fourth_task = fixture.store().task(&tasks[3]).await.unwrap();
    assert_eq!(fourth_task.usage.model_calls, 2);
    assert_eq!(fourth_task.usage.total_tokens, 730);
    assert!(
        tokens_before > &12_000 && tokens_after < &7_500,
        "{tokens_before} {tokens_after}"
    );
    assert!(
        !fixture
            .event_types(&tasks[3])
            .await
            .contains(&"context_trimmed")
    );

    // The summarised turns stay in the store.
    let view = sessions(&fixture).session(&session).await.unwrap();
    assert_eq!(view.turns.len(), 4);
    assert_eq!(
        view.summary.as_deref(),
        Some("SUMMARY: the user read big.txt twice.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_summary_the_drop_oldest_trimming_is_the_last_resort() {
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]});
    let model = scripted(json!([
        read, {"content": "one"},
        read, {"content": "two"},
        read, {"content": "three"},
        // The summarising call gets no text back: no summary.
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"content": "four"},
    ]));
    let settings = TaskSettings {
        context_window: Some(15_000),
        ..TaskSettings::default()
    };
    let fixture = fixture_with(&model, settings);
    fixture.tree.file("big.txt", &"lorem ipsum ".repeat(1700));
    let session = new_session(&fixture).await;
    let mut last = None;
    for prompt in ["first", "second", "third", "fourth"] {
        let done = take_turn(&fixture, &session, prompt).await;
        assert_eq!(done.state, TaskState::Completed, "{done:?}");
        last = Some(done.id);
    }
    let last = last.unwrap();
    let types = fixture.event_types(&last).await;
    assert!(!types.contains(&"session_summarised"), "{types:?}");
    assert!(types.contains(&"context_trimmed"), "{types:?}");
    let requests = model.requests();
    let fourth = requests.last().unwrap();
    assert_pairs_intact(fourth);
    let lines = transcript(fourth);
    assert!(!lines.contains(&"user: first".to_owned()), "{lines:?}");
    assert_eq!(lines.last().unwrap(), "user: fourth");
    let view = sessions(&fixture).session(&session).await.unwrap();
    assert_eq!(view.summary, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cancelled_while_waiting_is_remembered_with_its_call_answered() {
    let model = scripted(json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
        {"content": "two"},
    ]));
    let fixture = fixture_with(&model, TaskSettings::default());
    let session = new_session(&fixture).await;
    let service = &fixture.service;
    let first = take_turn(&fixture, &session, "first").await;
    assert_eq!(first.state, TaskState::WaitingApproval);
    service.cancel(&first.id).await.unwrap();
    let second = take_turn(&fixture, &session, "second").await;
    assert_eq!(second.state, TaskState::Completed);
    let requests = model.requests();
    let last = requests.last().unwrap();
    assert_pairs_intact(last);
    assert_eq!(
        transcript(last),
        [
            "system",
            "user: first",
            "calls: write_file",
            "result: error: not run (the ",
            "assistant: (this turn ended cancelled without an answer)",
            "user: second",
        ]
    );
    assert!(!fixture.tree.exists("a.txt"));
}
