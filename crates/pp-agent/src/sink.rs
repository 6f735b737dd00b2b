//! Where the loop reports events as they happen.

use std::sync::Mutex;

use pp_types::Event;

/// Receives every event the loop emits, in order, as it happens.
///
/// The CLI prints them live, the task service appends them to the store; tests collect
/// them with [`EventLog`].
pub trait EventSink: Send + Sync {
    /// Called once per event.
    fn emit(&self, event: &Event);
}

/// An [`EventSink`] that keeps every event in memory.
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<Event>>,
}

impl EventLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .map(|events| events.clone())
            .unwrap_or_default()
    }
}

impl EventSink for EventLog {
    fn emit(&self, event: &Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

/// Emits nothing; for callers that only want the [`crate::Outcome`].
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: &Event) {}
}
