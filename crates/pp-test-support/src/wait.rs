//! Waiting for something to happen: poll a condition until it holds or a deadline
//! passes, never a fixed sleep that hopes the other side was quick enough.
//!
//! The deadline is the wall clock's (`std::time::Instant`): it only bounds how long a
//! broken test hangs, so it holds on paused tokio time too. [`wait_until`] blocks the
//! thread (tests of the binary); [`wait_until_async`] sleeps on tokio's clock between
//! polls, so on paused time it costs no real time.
//!
//! ```
//! use std::time::Duration;
//!
//! let mut polls = 0;
//! assert!(pp_test_support::wait_until(Duration::from_secs(5), || {
//!     polls += 1;
//!     polls == 3
//! }));
//! assert!(!pp_test_support::wait_until(Duration::from_millis(30), || false));
//! ```

use std::time::{Duration, Instant};

/// How long to wait between two polls.
const POLL: Duration = Duration::from_millis(10);

/// Polls `condition` every 10 ms until it holds (`true`) or `within` has passed
/// (`false`; the condition is asked once more at the deadline). Blocks the thread.
pub fn wait_until(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// [`wait_until`] for async tests: `condition` is awaited, and the pause between polls
/// is a `tokio::time::sleep`.
pub async fn wait_until_async(within: Duration, mut condition: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}
