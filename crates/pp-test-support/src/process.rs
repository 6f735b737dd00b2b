//! Runs the real `pocketpilot` binary: `serve` as a child process that can be killed with
//! SIGKILL and restarted, and one-shot CLI commands, all against one data directory and
//! one config file.

use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::http::Endpoint;

/// The binary plus the `--home` and `--config` every command gets.
#[derive(Debug, Clone)]
pub struct Pocketpilot {
    /// The `pocketpilot` executable.
    pub bin: PathBuf,
    /// The data directory.
    pub home: PathBuf,
    /// The config file.
    pub config: PathBuf,
    /// Where `serve`'s stderr is appended (one file across restarts).
    pub log: PathBuf,
}

/// What a CLI command printed and how it ended.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// The exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl CliOutput {
    /// Standard output as JSON.
    pub fn json(&self) -> io::Result<Value> {
        serde_json::from_str(&self.stdout).map_err(|error| {
            io::Error::other(format!(
                "not JSON ({error}); exit {:?}; stderr: {}",
                self.code, self.stderr
            ))
        })
    }
}

/// The default binary for a cargo profile: `target/<profile>/pocketpilot` under the
/// current directory (run the binaries from the repository root).
pub fn default_bin(profile: &str) -> PathBuf {
    Path::new("target").join(profile).join("pocketpilot")
}

impl Pocketpilot {
    /// A command for `args` with `--home` and `--config` set and a clean environment for
    /// the variables PocketPilot reads (no provider key or other home leaks in).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .arg("--home")
            .arg(&self.home)
            .arg("--config")
            .arg(&self.config)
            .args(args);
        for variable in [
            "POCKETPILOT_HOME",
            "POCKETPILOT_CONFIG",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "DEEPSEEK_API_KEY",
            "DASHSCOPE_API_KEY",
            "OPENROUTER_API_KEY",
        ] {
            command.env_remove(variable);
        }
        command
    }

    /// Runs a CLI command to the end (tokio-friendly), killing it after `limit`.
    pub async fn cli(&self, args: &[&str], limit: Duration) -> io::Result<CliOutput> {
        self.cli_killed_after(args, None, limit).await
    }

    /// Runs a CLI command; with `kill_after`, SIGKILLs it at that moment if it is still
    /// running (then `code` is `None`). A command still running after `limit` is killed
    /// and reported as an error.
    pub async fn cli_killed_after(
        &self,
        args: &[&str],
        kill_after: Option<Duration>,
        limit: Duration,
    ) -> io::Result<CliOutput> {
        let mut command = tokio::process::Command::from(self.command(args));
        command
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let stop_at = kill_after.map_or(limit, |after| after.min(limit));
        let status = match tokio::time::timeout(stop_at, child.wait()).await {
            Ok(status) => Some(status?),
            Err(_) => {
                child.kill().await?;
                if kill_after.is_none_or(|after| after >= limit) {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "pocketpilot {}: still running after {limit:?}",
                            args.join(" ")
                        ),
                    ));
                }
                None
            }
        };
        let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
        Ok(CliOutput {
            code: status.and_then(|status| status.code()),
            stdout: text(stdout.await.unwrap_or_default()),
            stderr: text(stderr.await.unwrap_or_default()),
        })
    }

    /// Starts `serve --port 0` plus `extra` and waits (at most `limit`) for the line that
    /// names its port and token.
    pub fn serve(&self, extra: &[&str], limit: Duration) -> io::Result<Serve> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(extra);
        let mut child = self
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("serve has no stdout"))?;
        let (sender, receiver) = mpsc::channel();
        // Reads the console line, then drains stdout until the process ends.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(endpoint) = parse_console_line(&line) {
                    let _ = sender.send(endpoint);
                }
            }
        });
        match receiver.recv_timeout(limit) {
            Ok(endpoint) => Ok(Serve { child, endpoint }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other(format!(
                    "serve did not print its address within {limit:?} (log: {})",
                    self.log.display()
                )))
            }
        }
    }
}

/// Reads a child's pipe to the end on a task of its own.
fn drain(
    pipe: Option<impl tokio::io::AsyncRead + Unpin + Send + 'static>,
) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut pipe, &mut bytes).await;
        }
        bytes
    })
}

/// `PocketPilot console: http://127.0.0.1:PORT/login?token=TOKEN`.
fn parse_console_line(line: &str) -> Option<Endpoint> {
    let rest = line.split("http://127.0.0.1:").nth(1)?;
    let (port, rest) = rest.split_once('/')?;
    let token = rest.split("token=").nth(1)?.trim();
    Some(Endpoint {
        port: port.parse().ok()?,
        token: token.to_owned(),
    })
}

/// A running `serve`; killed with SIGKILL when dropped.
#[derive(Debug)]
pub struct Serve {
    child: Child,
    /// Its port and token.
    pub endpoint: Endpoint,
}

impl Serve {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then reaps the process.
    pub fn kill(mut self) -> io::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// A `VmHWM` / `VmRSS` line of `/proc/<pid>/status`, in KiB.
    pub fn memory_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status.lines().find_map(|line| {
            let value = line.strip_prefix(field)?.strip_prefix(':')?;
            value.trim().trim_end_matches("kB").trim().parse().ok()
        })
    }
}

/// CPU time (user + system, all threads) process `pid` has used so far, from
/// `/proc/PID/stat` (clock ticks of 10 ms: `sysconf(_SC_CLK_TCK)` is 100 on Linux).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are space-separated.
    let (_, fields) = stat.rsplit_once(')')?;
    let mut fields = fields.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tiny xorshift generator: the fault binaries need reproducible randomness (print the
/// seed, pass `--seed` to replay), not cryptographic quality.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded; a zero seed is replaced by a fixed odd constant.
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// A seed from the clock.
    pub fn clock_seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-ish in `low..high` (`low` when the range is empty).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            low
        } else {
            low + self.next_u64() % (high - low)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_console_line() {
        let endpoint =
            parse_console_line("PocketPilot console: http://127.0.0.1:40123/login?token=abc-DEF")
                .unwrap();
        assert_eq!((endpoint.port, endpoint.token.as_str()), (40123, "abc-DEF"));
        assert!(parse_console_line("model: scripted").is_none());
    }

    #[test]
    fn the_generator_stays_in_range_and_replays() {
        let mut first = Rng::new(7);
        let mut second = Rng::new(7);
        for _ in 0..1000 {
            let value = first.range(10, 20);
            assert!((10..20).contains(&value));
            assert_eq!(value, second.range(10, 20));
        }
    }
}
