//! The open-file limit (`RLIMIT_NOFILE`): `serve` raises its soft limit to the hard one
//! so that many connections cannot exhaust it, and every child it starts gets the
//! original soft limit back.
//!
//! This is the one piece of process state in this crate. It lives here because every
//! crate that starts a child (pp-sandbox, pp-docs, pp-mcp, pp-tasks) may depend on
//! pp-types and on nothing else in common: the original limit is recorded once, at
//! start, where each spawner can read it, and each spawn site spawns inside
//! [`spawn_with_original`], which puts the original soft limit back for the moment of
//! the spawn (`unsafe` is forbidden, so nothing can run between `fork` and `exec`; a
//! `prlimit(2)` on the new pid after the spawn would race with a child that looks at
//! its limit at once).

use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The soft limit before [`raise`]; set once, by the first successful call.
static ORIGINAL_SOFT: OnceLock<Option<u64>> = OnceLock::new();

/// What [`raise`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    /// The soft limit before (`None`: unlimited).
    pub before: Option<u64>,
    /// The soft limit now, the hard limit (`None`: unlimited).
    pub after: Option<u64>,
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit and records the soft
/// limit it had, which [`spawn_with_original`] then hands to every child. Calling it again
/// changes nothing and reports the first call's limits.
pub fn raise() -> std::io::Result<Raised> {
    let limit = getrlimit(Resource::Nofile);
    if let Some(before) = ORIGINAL_SOFT.get() {
        return Ok(Raised {
            before: *before,
            after: limit.current,
        });
    }
    let before = limit.current;
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
    }
    let recorded = *ORIGINAL_SOFT.get_or_init(|| before);
    Ok(Raised {
        before: recorded,
        after: limit.maximum,
    })
}

/// The soft limit this process had before [`raise`]; `None` when it was not raised (or
/// was unlimited), and then children inherit this process's limit unchanged.
pub fn original_soft() -> Option<u64> {
    ORIGINAL_SOFT.get().copied().flatten()
}

/// Serialises spawns made under the original limit (see [`spawn_with_original`]).
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `spawn` (which starts one child process) with this process's soft
/// `RLIMIT_NOFILE` put back to the original for the moment of the spawn, so the child
/// starts with the limit that was in force before [`raise`] — inherited at `fork`, with
/// no window in which the child runs with the raised one. Without a raise it just
/// spawns. Another thread of this process that opens a file past the original limit
/// during that moment (one `fork`/`exec`, under a millisecond) gets `EMFILE`: only a
/// process already holding that many files can notice it.
pub fn spawn_with_original<T>(spawn: impl FnOnce() -> T) -> T {
    let Some(original) = original_soft() else {
        return spawn();
    };
    let _one_at_a_time = SPAWNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let raised = getrlimit(Resource::Nofile);
    let lowered = Rlimit {
        current: Some(raised.maximum.map_or(original, |hard| original.min(hard))),
        maximum: raised.maximum,
    };
    if raised.current == lowered.current || setrlimit(Resource::Nofile, lowered).is_err() {
        return spawn();
    }
    let spawned = spawn();
    let _ = setrlimit(Resource::Nofile, raised);
    spawned
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;
    use std::process::{Command, Stdio};

    use super::*;

    /// The whole sequence in one test: it changes this process's limit.
    #[test]
    fn raise_lifts_the_soft_limit_and_children_get_the_original_back() {
        assert_eq!(original_soft(), None, "nothing recorded before a raise");
        let hard = getrlimit(Resource::Nofile).maximum;
        let lowered = hard.map_or(256, |hard| hard.min(256));
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(lowered),
                maximum: hard,
            },
        )
        .unwrap();

        let raised = raise().unwrap();
        assert_eq!(raised.before, Some(lowered));
        assert_eq!(raised.after, hard);
        assert_eq!(getrlimit(Resource::Nofile).current, hard);
        assert_eq!(original_soft(), Some(lowered));
        assert_eq!(raise().unwrap().before, Some(lowered), "recorded once");

        // The child looks at once: it has the original from its first instruction.
        let mut child = spawn_with_original(|| {
            Command::new("/bin/sh")
                .args(["-c", "ulimit -S -n"])
                .stdout(Stdio::piped())
                .spawn()
        })
        .unwrap();
        assert_eq!(getrlimit(Resource::Nofile).current, hard, "raised again");
        let mut seen = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut seen)
            .unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(seen.trim(), lowered.to_string());
    }
}
