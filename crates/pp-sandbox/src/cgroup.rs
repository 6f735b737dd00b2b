//! A pids cgroup per run: the process limit of a command that keeps uid 0 (which
//! `RLIMIT_NPROC` does not bind), and one more way to kill everything it started.
//!
//! The runner (root only) makes `pocketpilot-sandbox-PID-N` in the first place that
//! takes it: its own cgroup, then the root of the hierarchy it sees; the cgroup v2
//! (unified) hierarchy first, then a v1 `pids` hierarchy. The sandbox child joins it
//! before it starts anything; the runner kills whatever is left in it and removes it
//! once the run is over. A confined command cannot leave it: `/sys` is not reachable.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Cgroups made by this process so far (their names are unique).
static MADE: AtomicU64 = AtomicU64::new(0);

/// A cgroup made for one run; killed and removed when dropped.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// A new cgroup holding at most `max` processes (threads count), or why none can be
    /// made here.
    pub(crate) fn create(max: u64) -> Result<Self, String> {
        let candidates = candidates();
        if candidates.is_empty() {
            return Err("no cgroup hierarchy with the pids controller is mounted".to_owned());
        }
        let mut why = Vec::new();
        for (parent, v2) in candidates {
            if v2 && !enable_pids(&parent) {
                why.push(format!("{}: pids is not enabled", parent.display()));
                continue;
            }
            let name = format!(
                "pocketpilot-sandbox-{}-{}",
                std::process::id(),
                MADE.fetch_add(1, Ordering::Relaxed)
            );
            let dir = parent.join(name);
            if let Err(error) = make_dir(&dir) {
                why.push(format!("{}: {error}", parent.display()));
                continue;
            }
            match write(&dir.join("pids.max"), &max.to_string()) {
                Ok(()) => return Ok(Self { dir }),
                Err(error) => {
                    why.push(format!("{}: pids.max: {error}", dir.display()));
                    let _ = remove_dir(&dir);
                }
            }
        }
        Err(format!("no pids cgroup could be made ({})", why.join("; ")))
    }

    /// The cgroup's folder.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Kills every process in it.
    fn kill_all(&self) {
        // cgroup v2 (Linux 5.14): one write kills them all, new forks included.
        if write(&self.dir.join("cgroup.kill"), "1").is_ok() {
            return;
        }
        for pid in read(&self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
        {
            if let Some(pid) = pid
                .trim()
                .parse()
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let started = Instant::now();
        loop {
            self.kill_all();
            if remove_dir(&self.dir).is_ok() || started.elapsed() > Duration::from_secs(2) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Puts the calling process into the cgroup at `dir` (the sandbox child, first thing).
pub(crate) fn join(dir: &Path) -> std::io::Result<()> {
    write(&dir.join("cgroup.procs"), &std::process::id().to_string())
}

/// Where a pids cgroup could be made, best first, each with whether it is cgroup v2.
fn candidates() -> Vec<(PathBuf, bool)> {
    let (Ok(own), Ok(mounts)) = (
        read(Path::new("/proc/self/cgroup")),
        read(Path::new("/proc/self/mountinfo")),
    ) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for v2 in [true, false] {
        let Some((point, root)) = mounts.lines().find_map(|line| hierarchy(line, v2)) else {
            continue;
        };
        let Some(path) = own.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let ours = if v2 {
                controllers.is_empty()
            } else {
                controllers.split(',').any(|name| name == "pids")
            };
            ours.then(|| path.to_owned())
        }) else {
            continue;
        };
        let relative = Path::new(&path)
            .strip_prefix(&root)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let mine = point.join(relative);
        if mine != point {
            found.push((mine, v2));
        }
        found.push((point, v2));
    }
    found
}

/// A mountinfo line's mount point and root, if it is the cgroup v2 hierarchy (`v2`) or
/// the v1 hierarchy with the pids controller.
fn hierarchy(line: &str, v2: bool) -> Option<(PathBuf, String)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields.iter().position(|field| *field == "-")?;
    let fstype = *fields.get(dash + 1)?;
    let options = *fields.get(dash + 3)?;
    let matches = if v2 {
        fstype == "cgroup2"
    } else {
        fstype == "cgroup" && options.split(',').any(|option| option == "pids")
    };
    matches.then(|| (PathBuf::from(fields[4]), fields[3].to_owned()))
}

/// Whether the v2 cgroup `parent` hands the pids controller to its children (turning it
/// on where it may: a cgroup with processes of its own may not).
fn enable_pids(parent: &Path) -> bool {
    let on = |text: String| text.split_whitespace().any(|name| name == "pids");
    if read(&parent.join("cgroup.subtree_control")).is_ok_and(on) {
        return true;
    }
    write(&parent.join("cgroup.subtree_control"), "+pids").is_ok()
}

#[expect(
    clippy::disallowed_methods,
    reason = "cgroup files under /sys/fs/cgroup and /proc/self, never a model-supplied path"
)]
fn read(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

#[expect(
    clippy::disallowed_methods,
    reason = "cgroup files under /sys/fs/cgroup, never a model-supplied path"
)]
fn write(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

fn make_dir(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir(path)
}

fn remove_dir(path: &Path) -> std::io::Result<()> {
    std::fs::remove_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_hierarchies_are_found_in_mountinfo() {
        let v1 = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids";
        let v2 = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            hierarchy(v1, false),
            Some((PathBuf::from("/sys/fs/cgroup/pids"), "/".to_owned()))
        );
        assert_eq!(hierarchy(v1, true), None);
        assert_eq!(
            hierarchy(v2, true),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), "/".to_owned()))
        );
        let memory = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory";
        assert_eq!(hierarchy(memory, false), None);
    }
}
