//! What a tool call knows about the run it belongs to: the task, its deadline, and a
//! cooperative interrupt the task service triggers on cancel or timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use pp_types::Actor;

/// The context every tool call receives next to its arguments.
///
/// Tools do their blocking work off the async threads; the task service may stop waiting
/// for them (cancel, timeout). The [`Interrupt`] is how that reaches the work itself: a
/// tool checks it before anything irreversible (a write's final rename) and gives up
/// instead of landing an effect nobody is waiting for any more.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// The task the call belongs to (`None` outside the task service: tests, tools).
    pub task_id: Option<String>,
    /// Who started the task (operator, scheduler, webhook). A tool never widens anything
    /// because of it; it is there for the ledger and for tools that say who asked.
    pub actor: Option<Actor>,
    /// When the task's running time ends, if it has a limit; for tools that size their
    /// own work (the service itself triggers the interrupt when it passes).
    pub deadline: Option<Instant>,
    /// Triggered when the task is cancelled or times out.
    pub interrupt: Interrupt,
}

impl ToolContext {
    /// A context for `task_id` with a fresh interrupt.
    pub fn for_task(task_id: impl Into<String>, deadline: Option<Instant>) -> Self {
        Self {
            task_id: Some(task_id.into()),
            actor: None,
            deadline,
            interrupt: Interrupt::default(),
        }
    }

    /// The same context, naming the task's `actor`.
    pub fn with_actor(mut self, actor: Actor) -> Self {
        self.actor = Some(actor);
        self
    }

    /// Whether the call should stop now: the task was cancelled or timed out. Only the
    /// service decides that (so a tool never gives up a moment before the service records
    /// the timeout, and the task ends the way the ledger says).
    pub fn should_stop(&self) -> bool {
        self.interrupt.is_triggered()
    }
}

/// A cooperative stop signal shared by the service and the tool calls of one segment,
/// plus a count of tool calls in flight (so the service can let a call that already
/// passed its last check finish, and record its outcome, before it gives up on the run).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<InterruptState>);

#[derive(Debug, Default)]
struct InterruptState {
    triggered: AtomicBool,
    in_flight: AtomicUsize,
}

impl Interrupt {
    /// Asks every tool call of the segment to stop at its next check.
    pub fn trigger(&self) {
        self.0.triggered.store(true, Ordering::SeqCst);
    }

    /// Whether [`Interrupt::trigger`] was called.
    pub fn is_triggered(&self) -> bool {
        self.0.triggered.load(Ordering::SeqCst)
    }

    /// Whether a tool call is running right now.
    pub fn tool_in_flight(&self) -> bool {
        self.0.in_flight.load(Ordering::SeqCst) > 0
    }

    /// Marks a tool call as running until the guard is dropped.
    pub fn enter(&self) -> InFlight {
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(Arc::clone(&self.0))
    }
}

/// Marks one tool call as running; see [`Interrupt::enter`].
#[derive(Debug)]
pub struct InFlight(Arc<InterruptState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_counts_guards() {
        let interrupt = Interrupt::default();
        assert!(!interrupt.tool_in_flight());
        let first = interrupt.enter();
        let shared = interrupt.clone();
        let second = shared.enter();
        assert!(interrupt.tool_in_flight());
        drop(first);
        assert!(interrupt.tool_in_flight());
        drop(second);
        assert!(!interrupt.tool_in_flight());
    }

    #[test]
    fn trigger_reaches_clones() {
        let context = ToolContext::for_task("t", Some(Instant::now()));
        let clone = context.clone();
        assert!(!clone.should_stop(), "only the service decides to stop");
        context.interrupt.trigger();
        assert!(clone.should_stop());
    }
}
