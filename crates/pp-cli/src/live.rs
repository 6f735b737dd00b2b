//! The live view of a run on stderr: one line per step, results under their call, a
//! spinner with the elapsed time while the model or a tool works (only on a terminal;
//! in `run` it says "Ctrl+C to stop", and "stopping…" once Ctrl+C was pressed), and the
//! model's text as it streams in.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pp_agent::EventSink;
use pp_model::StreamDelta;
use pp_types::{Event, EventKind};

use crate::render::{live_lines, terminal_safe};
use crate::style::{Paint, Palette, cut_to_width, terminal_columns};

/// How often the spinner redraws.
const TICK: Duration = Duration::from_millis(100);

/// Spinner frames.
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Prints each event on stderr while the task runs (see the module docs).
pub(crate) struct LiveView {
    shared: Arc<Shared>,
    /// The spinner's thread; stopped and joined on drop.
    ticker: Mutex<Option<JoinHandle<()>>>,
}

/// What the view and its spinner thread share.
struct Shared {
    state: Mutex<State>,
    /// Colours for stderr.
    palette: Palette,
    /// The terminal's width.
    columns: usize,
    /// `--json`: nothing is printed here (the events go to stdout instead).
    quiet: bool,
    /// Tells the spinner thread to end.
    stop: AtomicBool,
}

#[derive(Default)]
struct State {
    /// What is being waited for, and since when; `None` when nothing is.
    spinner: Option<(String, Instant)>,
    /// Whether the spinner's line is on screen (cleared before anything else prints).
    drawn: bool,
    /// Whether streamed model text is being printed (its line is open).
    streaming: bool,
    /// Whether this turn's text was streamed (its `assistant_message` is not repeated).
    streamed: bool,
    /// Frame counter.
    frame: usize,
    /// Whether the spinner says "Ctrl+C to stop" (`run`, [`LiveView::show_stop_hint`]).
    stop_hint: bool,
    /// Since when the task is stopping (Ctrl+C was pressed, [`LiveView::stopping`]): the
    /// spinner says so until the run ends, whatever the task does meanwhile.
    stopping: Option<Instant>,
}

impl LiveView {
    /// A live view on stderr; the spinner runs only when stderr is a terminal. `quiet`
    /// prints nothing at all (`run --json`).
    pub(crate) fn new(quiet: bool) -> Arc<Self> {
        let is_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            palette: Palette::stderr(),
            columns: terminal_columns(),
            quiet,
            stop: AtomicBool::new(false),
        });
        let ticker = (is_terminal && !quiet).then(|| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(TICK);
                    shared.tick();
                }
            })
        });
        Arc::new(Self {
            shared,
            ticker: Mutex::new(ticker),
        })
    }

    /// Clears the spinner and ends a streamed line, so a card or question starts on a
    /// clean line; the spinner stays off until the next event starts it.
    pub(crate) fn pause(&self) {
        let mut state = self.shared.lock();
        state.spinner = None;
        state.stopping = None;
        self.shared.clear(&mut state);
    }

    /// Adds "Ctrl+C to stop" to the spinner (`run`, where Ctrl+C stops the task).
    pub(crate) fn show_stop_hint(&self) {
        self.shared.lock().stop_hint = true;
    }

    /// Ctrl+C was pressed: the spinner says "stopping…" from now on (the first press
    /// starts its clock).
    pub(crate) fn stopping(&self) {
        let mut state = self.shared.lock();
        state.stopping.get_or_insert_with(Instant::now);
        if state.spinner.is_none() {
            state.spinner = Some((String::new(), Instant::now()));
        }
    }

    /// Prints `line` above the spinner (which goes on).
    pub(crate) fn note(&self, line: &str) {
        if self.shared.quiet {
            return;
        }
        let mut state = self.shared.lock();
        self.shared.clear(&mut state);
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{}", terminal_safe(line));
        let _ = stderr.flush();
    }

    /// Receives a piece of the model's answer as it streams in.
    pub(crate) fn delta(&self, delta: StreamDelta<'_>) {
        if self.shared.quiet {
            return;
        }
        let mut state = self.shared.lock();
        match delta {
            StreamDelta::Text(text) if !text.is_empty() => {
                let mut stderr = std::io::stderr().lock();
                if state.drawn {
                    let _ = write!(stderr, "\r\x1b[2K");
                    state.drawn = false;
                }
                if !state.streaming {
                    let _ = write!(
                        stderr,
                        "{}",
                        self.shared.palette.paint(Paint::Dim, "model › ")
                    );
                    state.streaming = true;
                    state.streamed = true;
                }
                let _ = write!(stderr, "{}", terminal_safe(text));
                let _ = stderr.flush();
            }
            StreamDelta::Reasoning(_) => {
                if let Some((label, _)) = &mut state.spinner {
                    "reasoning".clone_into(label);
                }
            }
            StreamDelta::ToolCall { name, .. } => {
                let since = state
                    .spinner
                    .as_ref()
                    .map_or_else(Instant::now, |(_, at)| *at);
                state.spinner = Some((
                    format!("preparing {}", crate::render::one_line(name)),
                    since,
                ));
            }
            StreamDelta::Text(_) => {}
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Removes the spinner's line and closes a streamed line.
    fn clear(&self, state: &mut State) {
        let mut stderr = std::io::stderr().lock();
        if state.drawn {
            let _ = write!(stderr, "\r\x1b[2K");
            state.drawn = false;
        }
        if state.streaming {
            let _ = writeln!(stderr);
            state.streaming = false;
        }
        let _ = stderr.flush();
    }

    /// Redraws the spinner, if one runs and no text is streaming.
    fn tick(&self) {
        let mut state = self.lock();
        if state.streaming {
            return;
        }
        let Some(line) = spinner_line(&state) else {
            return;
        };
        // One line, whatever the width: a wrapped spinner could not be cleared.
        let (line, _) = cut_to_width(&line, self.columns.saturating_sub(1));
        let line = self.palette.paint(Paint::Dim, line);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
        state.frame += 1;
        state.drawn = true;
    }
}

/// The spinner's line: frame, what is waited for, elapsed time and the Ctrl+C hint;
/// `None` when nothing is waited for.
fn spinner_line(state: &State) -> Option<String> {
    let frame = FRAMES[state.frame % FRAMES.len()];
    let (label, since) = state.spinner.as_ref()?;
    if let Some(since) = state.stopping {
        return Some(format!(
            "{frame} stopping… {:.1}s · waiting for the running call to end (Ctrl+C again to \
             leave at once)",
            since.elapsed().as_secs_f64()
        ));
    }
    let hint = if state.stop_hint {
        " · Ctrl+C to stop"
    } else {
        ""
    };
    Some(format!(
        "{frame} {label} {:.1}s{hint}",
        since.elapsed().as_secs_f64()
    ))
}

impl EventSink for LiveView {
    fn emit(&self, event: &Event) {
        if self.shared.quiet {
            return;
        }
        let mut state = self.shared.lock();
        self.shared.clear(&mut state);
        let lines = match &event.kind {
            EventKind::AssistantMessage { .. } if state.streamed => {
                // Already on screen as it streamed.
                Vec::new()
            }
            _ => live_lines(event, self.shared.palette, self.shared.columns),
        };
        let mut stderr = std::io::stderr().lock();
        for line in lines {
            let _ = writeln!(stderr, "{line}");
        }
        let _ = stderr.flush();
        state.spinner = match &event.kind {
            EventKind::ModelRequest { .. } => {
                state.streamed = false;
                Some(("waiting for the model".to_owned(), Instant::now()))
            }
            EventKind::ToolCall { name, .. } => Some((
                format!("running {}", crate::render::one_line(name)),
                Instant::now(),
            )),
            // The approved call runs now (its `tool_call` was shown before the card).
            EventKind::ApprovalResolved {
                decision: pp_types::ResolutionKind::Approved,
                ..
            } => Some(("running the approved call".to_owned(), Instant::now())),
            // Stopping goes on until the run ends, whatever the events say.
            _ if state.stopping.is_some() => Some((String::new(), Instant::now())),
            _ => None,
        };
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let ticker = self
            .ticker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(ticker) = ticker {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
        let mut state = self.shared.lock();
        state.spinner = None;
        self.shared.clear(&mut state);
    }
}
