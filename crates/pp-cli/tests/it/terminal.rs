//! `pocketpilot` under a pseudo-terminal (util-linux `script`), for `run` and `chat`:
//! answers are typed only once the question they answer is on screen, as a person would
//! (input typed earlier is discarded on purpose).

use std::io::Write as _;
use std::process::Stdio;

use crate::isolate;

/// The question `run` and `chat` ask at each approval.
pub(crate) const PROMPT: &str = "[a]pprove  [r]eject  [e]dit  [d]etails  [?] help › ";

/// A program running in a pseudo-terminal, and everything it has shown.
pub(crate) struct Terminal {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    screen: std::sync::Arc<std::sync::Mutex<String>>,
    updates: std::sync::mpsc::Receiver<()>,
}

impl Terminal {
    /// Runs the shell command `command` in a pseudo-terminal with its data directory at
    /// `home`, colours off (unless `env` turns them on with `NO_COLOR=""`) and `PAGER=cat`.
    ///
    /// `script` runs `command` with `$SHELL -c`. A command whose program gets Ctrl+C as a
    /// signal must start with `exec`: a shell that stays (dash, `/bin/sh` when `SHELL` is
    /// unset, as in CI) gets the signal too and dies of it once the program has exited.
    pub(crate) fn spawn(command: &str, home: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let mut child = std::process::Command::new("script");
        child.args(["-qefc", command, "/dev/null"]);
        isolate(&mut child, home);
        child.env("NO_COLOR", "1").env_remove("CLICOLOR_FORCE");
        child.env("PAGER", "cat");
        for (key, value) in env {
            child.env(key, value);
        }
        let mut child = child
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux `script` provides the pseudo-terminal");
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (notify, updates) = std::sync::mpsc::channel();
        let shared = std::sync::Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // A character split between two reads is decoded once it is whole.
            let mut pending: Vec<u8> = Vec::new();
            loop {
                match std::io::Read::read(&mut stdout, &mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(read) => {
                        pending.extend_from_slice(&buffer[..read]);
                        let whole = match std::str::from_utf8(&pending) {
                            Ok(_) => pending.len(),
                            Err(error) if error.error_len().is_none() => error.valid_up_to(),
                            Err(_) => pending.len(),
                        };
                        let text: Vec<u8> = pending.drain(..whole).collect();
                        shared
                            .lock()
                            .unwrap()
                            .push_str(&String::from_utf8_lossy(&text));
                        if notify.send(()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Self {
            child,
            stdin,
            screen,
            updates,
        }
    }

    pub(crate) fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until the approval question has been asked `count` times.
    pub(crate) fn wait_for_prompt(&self, count: usize) {
        self.wait_for(PROMPT, count);
    }

    /// Waits until `text` has been shown `count` times.
    pub(crate) fn wait_for(&self, text: &str, count: usize) {
        while self.screen().matches(text).count() < count {
            // A guard against a hang, not a timing assertion.
            if self
                .updates
                .recv_timeout(std::time::Duration::from_secs(120))
                .is_err()
            {
                panic!(
                    "the program ended or stalled before `{text}` #{count}:\n{}",
                    self.screen()
                );
            }
        }
    }

    pub(crate) fn type_text(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Answers question 1, 2, … in turn, each once it is on screen.
    pub(crate) fn answer(&mut self, answers: &[&str]) {
        for (index, answer) in answers.iter().enumerate() {
            self.wait_for_prompt(index + 1);
            self.type_text(answer);
        }
    }

    /// Closes the keyboard and returns the exit code and everything shown.
    pub(crate) fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        while self.updates.recv().is_ok() {}
        (status.code().unwrap_or(-1), self.screen())
    }
}
