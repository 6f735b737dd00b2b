//! Per-name fixed-window counters: the budgets of accepted and of logged refused
//! deliveries per channel name.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Per-name fixed-window counters.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    /// Name → its current window.
    windows: HashMap<String, Window>,
    /// The window every name shares while `windows` is full of live windows.
    overflow: Window,
}

/// One name's window of a [`Limiter`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// When it started, in ms.
    pub(crate) start: i64,
    /// What it counted within its budget.
    count: u32,
    /// What it counted past its budget.
    pub(crate) excess: u32,
}

/// Most names the limiter tracks; past it, windows that ended are dropped first.
const LIMITER_NAMES: usize = 4096;

impl Limiter {
    /// The current window of `name` at `now` (a fresh one when the last has ended).
    fn window(&mut self, name: &str, now: i64, period: i64) -> &mut Window {
        if self.windows.len() >= LIMITER_NAMES && !self.windows.contains_key(name) {
            self.windows.retain(|_, window| now - window.start < period);
        }
        let window = if self.windows.len() >= LIMITER_NAMES && !self.windows.contains_key(name) {
            // Still full of live windows: a flood of names. They share one window, so
            // the map cannot grow without bound.
            &mut self.overflow
        } else {
            self.windows.entry(name.to_owned()).or_insert(Window {
                start: now,
                ..Window::default()
            })
        };
        if now - window.start >= period {
            *window = Window {
                start: now,
                ..Window::default()
            };
        }
        window
    }

    /// Counts one for `name` at `now` against `budget`: `Ok(count)` within it, or
    /// `Err(excess)`, how many this window has counted past it, this one included.
    pub(crate) fn count(
        &mut self,
        name: &str,
        now: i64,
        period: i64,
        budget: u32,
    ) -> std::result::Result<u32, u32> {
        let window = self.window(name, now, period);
        if window.count < budget {
            window.count += 1;
            Ok(window.count)
        } else {
            window.excess = window.excess.saturating_add(1);
            Err(window.excess)
        }
    }

    /// Gives back one count within the budget (what was taken for a delivery that was
    /// then not accepted).
    pub(crate) fn uncount(&mut self, name: &str, now: i64, period: i64) {
        let window = self.window(name, now, period);
        window.count = window.count.saturating_sub(1);
    }

    /// Removes and returns the window of `name` if it has ended by `now` with counts
    /// past its budget (to be reported once).
    pub(crate) fn take_ended_excess(
        &mut self,
        name: &str,
        now: i64,
        period: i64,
    ) -> Option<Window> {
        let window = *self.windows.get(name)?;
        if now - window.start < period || window.excess == 0 {
            return None;
        }
        self.windows.remove(name);
        Some(window)
    }
}

/// Locks a limiter; a panic elsewhere while holding it leaves counts that are still
/// usable.
pub(crate) fn lock(limiter: &Mutex<Limiter>) -> std::sync::MutexGuard<'_, Limiter> {
    limiter.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_names_shares_one_window_and_the_map_stays_bounded() {
        let mut limiter = Limiter::default();
        for index in 0..LIMITER_NAMES {
            assert_eq!(
                limiter.count(&format!("n{index}"), 0, 60_000, u32::MAX),
                Ok(1)
            );
        }
        assert_eq!(limiter.count("one-more", 1, 60_000, u32::MAX), Ok(1));
        assert_eq!(limiter.count("and-another", 2, 60_000, u32::MAX), Ok(2));
        assert_eq!(limiter.windows.len(), LIMITER_NAMES);
        assert_eq!(
            limiter.count("n0", 3, 60_000, u32::MAX),
            Ok(2),
            "known names keep their window"
        );
        // Once the windows have ended, new names get their own again.
        assert_eq!(limiter.count("later", 60_000, 60_000, u32::MAX), Ok(1));
        assert!(limiter.windows.contains_key("later"));
        assert_eq!(limiter.windows.len(), 1);
    }
}
