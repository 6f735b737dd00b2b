//! The open-file limit (`RLIMIT_NOFILE`): `serve` raises its soft limit to the hard one
//! so that many connections cannot exhaust it, and every child it starts gets the
//! original soft limit back.
//!
//! This is the one piece of process state in this crate. It lives here because every
//! crate that starts a child (pp-sandbox, pp-docs, pp-mcp, pp-tasks) may depend on
//! pp-types and on nothing else in common: the original limit is recorded once, at
//! start, where each spawner can read it, and each spawn site calls [`give_back`] with
//! the child's pid right after spawning it (`unsafe` is forbidden, so nothing can run
//! between `fork` and `exec`; `prlimit(2)` on the new pid is the safe way).

use std::sync::OnceLock;

use rustix::process::{Pid, Resource, Rlimit, getrlimit, prlimit, setrlimit};

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
/// limit it had, which [`give_back`] then hands to every child. Calling it again
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

/// Gives the child `pid` the soft `RLIMIT_NOFILE` this process had before [`raise`]
/// (its hard limit stays). Does nothing when the limit was not raised. A child that
/// already exited, or any other failure, is ignored: the child keeps the raised limit,
/// which only ever allows it more.
pub fn give_back(pid: u32) {
    let Some(original) = original_soft() else {
        return;
    };
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let hard = getrlimit(Resource::Nofile).maximum;
    let _ = prlimit(
        Some(pid),
        Resource::Nofile,
        Rlimit {
            current: Some(hard.map_or(original, |hard| original.min(hard))),
            maximum: hard,
        },
    );
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
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

        // The child waits for a line before it looks, so `give_back` has landed.
        let mut child = Command::new("/bin/sh")
            .args(["-c", "read line; ulimit -S -n"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        give_back(child.id());
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
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
