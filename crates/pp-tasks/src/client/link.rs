//! The link between an MCP client's calls and the loop: a stand-in [`Model`] whose
//! assistant turns are the client's calls, one call per turn, and an [`EventSink`] that
//! hands each call's outcome back to the client as the loop reports it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use pp_agent::{BoxFuture, EventSink, Model, ModelError, ModelRequest, ModelResponse};
use pp_types::{Event, EventKind, TaskId, TaskRecord, TaskState, ToolCall};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

/// What the final turn of a connection's task says (the client disconnected).
const DISCONNECTED: &str = "The MCP client disconnected; the session ended.";
/// What the final turn says when another process ended the task (a cancel).
const ENDED_ELSEWHERE: &str = "This task was ended by the operator; the MCP client's next call \
                               starts a new task.";
/// What the final turn says when the task took its share of the connection's calls.
const HANDED_ON: &str = "This task took its share of the MCP client's calls; the next call \
                         continues in a new task of the same connection.";

/// How one call of the client ended, as far as this process saw it.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The loop answered the call (a result, an ordinary error or a denial).
    Done {
        /// The text the tool gave (or the gate's explanation).
        text: String,
        /// Whether it is an error or a denial.
        is_error: bool,
    },
    /// The call needs a person's approval: `task` is waiting for it.
    Suspended {
        /// The task that holds the approval.
        task: TaskId,
    },
    /// The task ended (failed, cancelled, timed out) before it answered the call.
    Ended {
        /// The task as stored when its run ended.
        task: Box<TaskRecord>,
    },
}

/// A call waiting for the loop to take it.
struct Queued {
    id: String,
    name: String,
    arguments: Value,
    reply: oneshot::Sender<Reply>,
}

/// A call the loop has taken, waiting for its outcome.
struct Handed {
    task: Option<TaskId>,
    reply: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    handed: HashMap<String, Handed>,
    /// The task whose loop takes the calls now, when it began and how many it took.
    task: Option<Current>,
    next_call: u64,
    /// Calls taken by any task so far.
    taken: u64,
    closed: bool,
}

/// The task whose loop takes the calls now.
struct Current {
    id: TaskId,
    began: tokio::time::Instant,
    calls: u32,
    /// Someone else ended it (a cancel from another process): its loop ends at its next
    /// turn.
    ended: bool,
}

/// How much of a connection one task takes before the next call starts a new one, so a
/// task can always be resumed elsewhere after an approval within the steps and the
/// running time any process gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskShare {
    /// Calls per task.
    pub calls: u32,
    /// Running time per task.
    pub time: Duration,
}

impl TaskShare {
    /// The share for tasks of `settings`: two steps short of the step limit (the resumed
    /// loop needs one for the approved call's turn, one for its closing turn) and half
    /// the running time.
    pub fn of(settings: &crate::settings::TaskSettings) -> Self {
        Self {
            calls: settings.max_steps.saturating_sub(2).max(1),
            time: settings.timeout / 2,
        }
    }
}

/// The stand-in model and event observer of one MCP client connection.
///
/// Give it to the service twice: as [`crate::ModelSource::Driven`] and as the event
/// observer; [`crate::ClientSession`] feeds it the client's calls.
pub struct ClientLink {
    state: Mutex<State>,
    work: Notify,
    share: TaskShare,
}

impl std::fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientLink")
    }
}

impl ClientLink {
    /// A link with no calls yet, giving each task `share` of the connection.
    pub fn new(share: TaskShare) -> Self {
        Self {
            state: Mutex::new(State::default()),
            work: Notify::new(),
            share,
        }
    }

    /// Calls taken by the loop so far (all tasks).
    pub(crate) fn taken(&self) -> u64 {
        self.state.lock().map_or(0, |state| state.taken)
    }

    /// Queues a call for the loop; gives its call id, and the receiver of its outcome.
    pub(crate) fn submit(
        &self,
        name: &str,
        arguments: Value,
    ) -> (String, oneshot::Receiver<Reply>) {
        let (reply, receiver) = oneshot::channel();
        let mut id = String::new();
        if let Ok(mut state) = self.state.lock() {
            state.next_call += 1;
            id = format!("mcp_{}", state.next_call);
            state.queue.push_back(Queued {
                id: id.clone(),
                name: name.to_owned(),
                arguments,
                reply,
            });
        }
        self.work.notify_waiters();
        (id, receiver)
    }

    /// No more calls will come: the loop's next turn ends the task.
    pub(crate) fn close(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.closed = true;
        }
        self.work.notify_waiters();
    }

    /// Waits until a call is queued (`true`) or the link is closed with nothing queued
    /// (`false`).
    pub(crate) async fn wait_for_work(&self) -> bool {
        loop {
            let notified = self.work.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            match self.state.lock() {
                Ok(state) if !state.queue.is_empty() => return true,
                Ok(state) if state.closed => return false,
                Ok(_) => {}
                Err(_) => return false,
            }
            notified.await;
        }
    }

    /// The loop of `task` takes the calls from now on.
    pub(crate) fn serve_task(&self, task: &TaskId) {
        if let Ok(mut state) = self.state.lock() {
            state.task = Some(Current {
                id: task.clone(),
                began: tokio::time::Instant::now(),
                calls: 0,
                ended: false,
            });
        }
    }

    /// `task` was ended by someone else (cancelled from the console): its loop takes no
    /// more calls; the next one starts a new task.
    pub(crate) fn end_task(&self, task: &TaskId) {
        if let Ok(mut state) = self.state.lock()
            && let Some(current) = state.task.as_mut()
            && current.id == *task
        {
            current.ended = true;
        }
        self.work.notify_waiters();
    }

    /// The run of `task` ended as `record`: every call it took and did not answer learns
    /// why (waiting for an approval, or the task ended).
    pub(crate) fn run_ended(&self, task: &TaskId, record: Option<&TaskRecord>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.task = None;
        let ids: Vec<String> = state
            .handed
            .iter()
            .filter(|(_, handed)| handed.task.as_ref().is_none_or(|id| id == task))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let Some(handed) = state.handed.remove(&id) else {
                continue;
            };
            let reply = match record {
                Some(record) if record.state == TaskState::WaitingApproval => {
                    Reply::Suspended { task: task.clone() }
                }
                Some(record) => Reply::Ended {
                    task: Box::new(record.clone()),
                },
                None => Reply::Done {
                    text: format!("task {task} could not run the call"),
                    is_error: true,
                },
            };
            let _ = handed.reply.send(reply);
        }
    }

    /// Answers every queued call with `message` (the task could not even be created).
    pub(crate) fn fail_queued(&self, message: &str) {
        if let Ok(mut state) = self.state.lock() {
            for queued in state.queue.drain(..) {
                let _ = queued.reply.send(Reply::Done {
                    text: message.to_owned(),
                    is_error: true,
                });
            }
        }
    }

    /// The next turn: the next queued call, or a closing text once the link is closed
    /// or the task took its share; `Err` with how long the task may still wait.
    fn next_turn(&self) -> Result<ModelResponse, Duration> {
        let closing = |text: &str| {
            Ok(ModelResponse {
                content: Some(text.to_owned()),
                ..ModelResponse::default()
            })
        };
        let Ok(mut state) = self.state.lock() else {
            return closing(DISCONNECTED);
        };
        if state.task.as_ref().is_some_and(|task| task.ended) {
            return closing(ENDED_ELSEWHERE);
        }
        let (calls, left) = state.task.as_ref().map_or((0, self.share.time), |task| {
            (
                task.calls,
                self.share.time.saturating_sub(task.began.elapsed()),
            )
        });
        if calls >= self.share.calls || left.is_zero() {
            return closing(HANDED_ON);
        }
        if let Some(call) = state.queue.pop_front() {
            state.taken += 1;
            if let Some(task) = state.task.as_mut() {
                task.calls += 1;
            }
            let task = state.task.as_ref().map(|task| task.id.clone());
            state.handed.insert(
                call.id.clone(),
                Handed {
                    task,
                    reply: call.reply,
                },
            );
            return Ok(ModelResponse {
                tool_calls: vec![ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments.to_string(),
                }],
                ..ModelResponse::default()
            });
        }
        if state.closed {
            return closing(DISCONNECTED);
        }
        Err(left)
    }

    fn answer(&self, call_id: &str, text: &str, is_error: bool) {
        let handed = self
            .state
            .lock()
            .ok()
            .and_then(|mut state| state.handed.remove(call_id));
        if let Some(handed) = handed {
            let _ = handed.reply.send(Reply::Done {
                text: text.to_owned(),
                is_error,
            });
        }
    }
}

impl Model for ClientLink {
    fn name(&self) -> String {
        "mcp-client".to_owned()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            loop {
                let notified = self.work.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                match self.next_turn() {
                    Ok(turn) => return Ok(turn),
                    // Wakes at the end of the task's share to close it.
                    Err(left) => {
                        let _ = tokio::time::timeout(left, notified).await;
                    }
                }
            }
        })
    }
}

impl EventSink for ClientLink {
    fn emit(&self, event: &Event) {
        match &event.kind {
            EventKind::ToolResult {
                call_id, content, ..
            } => self.answer(call_id, content, false),
            EventKind::ToolError {
                call_id, message, ..
            }
            | EventKind::ToolDenied {
                call_id, message, ..
            } => self.answer(call_id, message, true),
            _ => {}
        }
    }
}

/// The outcome of `call_id` among `events`, if the loop answered it.
pub(crate) fn outcome_of<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    call_id: &str,
) -> Option<(String, bool)> {
    events.into_iter().find_map(|event| match &event.kind {
        EventKind::ToolResult {
            call_id: id,
            content,
            ..
        } if id == call_id => Some((content.clone(), false)),
        EventKind::ToolError {
            call_id: id,
            message,
            ..
        }
        | EventKind::ToolDenied {
            call_id: id,
            message,
            ..
        } if id == call_id => Some((message.clone(), true)),
        _ => None,
    })
}
