//! Test-only hooks: unit tests observe or perturb the jail at fixed points of an
//! operation, deterministically (no timing, no second thread needed).
//!
//! A hook is per thread, so tests running in parallel never see each other's hooks.

use std::cell::RefCell;
use std::io;
use std::path::Path;

use cap_std::fs::Dir;

/// Where a hook fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
    /// Opening a file for reading, after the type check of the resolved path and before
    /// the open; arguments: the root handle and the resolved relative path. An error
    /// returned by the hook is reported as the open's error.
    BeforeOpen,
    /// Writing, after all the content is in the temp file and before the temp file gets
    /// its final mode; arguments: the parent directory handle and the temp file's name.
    TempWritten,
    /// Moving, after every check and right before the `renameat`; arguments: the
    /// destination's folder handle and the destination's name.
    BeforeRename,
}

type Hook = Box<dyn Fn(Point, &Dir, &Path) -> io::Result<()>>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Installs `hook` on this thread until [`clear`] (or the thread ends).
pub(crate) fn set(hook: impl Fn(Point, &Dir, &Path) -> io::Result<()> + 'static) {
    HOOK.with_borrow_mut(|slot| *slot = Some(Box::new(hook)));
}

/// Removes this thread's hook.
pub(crate) fn clear() {
    HOOK.with_borrow_mut(|slot| *slot = None);
}

/// Runs this thread's hook, if any.
pub(crate) fn fire(point: Point, dir: &Dir, path: &Path) -> io::Result<()> {
    HOOK.with_borrow(|slot| slot.as_ref().map_or(Ok(()), |hook| hook(point, dir, path)))
}
