//! `run_command`: runs one program with its arguments in the workspace, confined.
//!
//! ## What it does
//! Runs `command` with `args` (exactly these strings, no shell: a shell runs only when
//! the model names one, `{"command": "sh", "args": ["-c", "…"]}`, and the card says so)
//! in `cwd` (a folder of the workspace, its root by default) through `pp-sandbox`:
//! Landlock keeps it to the workspace (read and write) and the system folders (read and
//! execute), with no TCP, and a seccomp filter leaves it no sockets at all; CPU, memory,
//! process and file-size limits; only `PATH`, `HOME` (the workspace) and `LANG` in its
//! environment; `stdin` if given; no capabilities, and under root the workspace owner's
//! uid. Every process it starts ends with the call (a PID namespace, else a
//! subreaper): at the wall clock (`timeout_secs`, the `[shell]` default, at most
//! `max_timeout_secs`), when the task is cancelled or times out, and when the command
//! ends. The answer gives the exit code and
//! stdout and stderr, each cut at `[shell] output_bytes` with a marker saying how much
//! there was.
//!
//! Its preview is what the approval card shows: label `run`, the exact argv, the
//! resolved working directory, whether it is a shell, whether it is confined and the
//! limits ([`pp_types::CommandPreview`]), and how much of the workspace a revert could
//! not cover (`uncovered`, measured by [`super::tree::measure`]). Nothing about it can
//! go stale (the fingerprint is a constant). It reports no per-file snapshot: the task
//! service snapshots the whole workspace before an approved command runs and records
//! what it changed (pp-tasks' `keep/workspace.rs`).
//!
//! ## Capabilities needed
//! `shell:execute` (requires approval), risk high; `cwd` is a path parameter, checked by
//! the jail.
//!
//! ## Example
//! ```json
//! {"command": "python3", "args": ["summarize.py", "data.csv"], "cwd": "scripts"}
//! ```
//! ```text
//! exit code 0 (0.4 s)
//! stdout:
//! 42 rows
//! stderr: (empty)
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_sandbox::{Captured, End, ResourceLimits, RunOptions, Spec};
use pp_types::{
    Capability, CommandPreview, EffectPreview, Risk, TargetState, ToolOutput, ToolSpec, WriteLabel,
};
use serde::{Deserialize, Deserializer, de};
use serde_json::{Value, json};

use super::ShellSettings;
use crate::args::parse;
use crate::blocking::SyncTool;
use crate::files::common::jail_error;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Run a program with arguments in the workspace (no shell: to \
run a shell script pass command \"sh\" and args [\"-c\", script]). Confined: it can read and \
write only inside the workspace, has no network, a cleared environment and time, CPU and \
memory limits; /tmp is not writable. Needs the operator's approval for every call.";

/// The preview's fingerprint: a command has no target state that could change between
/// the card and the run.
const FINGERPRINT: &str = "command";

/// Programs that run a script when started (`sh -c …`, `bash script.sh`).
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"];

/// The `run_command` tool.
pub(crate) struct RunCommand {
    /// The workspace: the working directory is checked through it.
    jail: Arc<Jail>,
    settings: Arc<ShellSettings>,
    spec: ToolSpec,
}

/// The arguments of `run_command`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The program.
    #[serde(borrow)]
    pub(crate) command: Program<'a>,
    /// Its arguments, each passed as is.
    #[serde(borrow)]
    pub(crate) args: Option<Words<'a>>,
    /// Wall-clock seconds before the command is killed.
    pub(crate) timeout_secs: Option<Seconds>,
    /// The working directory, relative to the workspace root (default: the root).
    #[serde(borrow)]
    pub(crate) cwd: Option<&'a str>,
    /// Text given on standard input.
    #[serde(borrow)]
    pub(crate) stdin: Option<&'a str>,
}

/// `command`: a non-empty string.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Program<'a>(pub(crate) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for Program<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match <&str>::deserialize(deserializer) {
            Ok(command) if !command.is_empty() => Ok(Self(command)),
            _ => Err(de::Error::custom("must be a non-empty string")),
        }
    }
}

/// `args`: a list of strings.
#[derive(Debug, Clone)]
pub(crate) struct Words<'a>(pub(crate) Vec<&'a str>);

impl<'de: 'a, 'a> Deserialize<'de> for Words<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer)
            .map(Self)
            .map_err(|_| de::Error::custom("must be an array of strings"))
    }
}

/// `timeout_secs`: a whole number of seconds, at least 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seconds(pub(crate) u64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match u64::deserialize(deserializer) {
            Ok(secs) if secs >= 1 => Ok(Self(secs)),
            _ => Err(de::Error::custom("must be a whole number of at least 1")),
        }
    }
}

/// A call's arguments, read.
struct Call<'a> {
    argv: Vec<String>,
    cwd: &'a str,
    timeout_secs: Option<u64>,
    stdin: Option<&'a str>,
}

impl RunCommand {
    pub(crate) fn new(jail: Arc<Jail>, settings: Arc<ShellSettings>) -> Self {
        let spec = ToolSpec {
            name: "run_command".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The program: a name looked up on PATH (/usr/bin, /bin, …) or a path inside the workspace"
                    },
                    "args": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Its arguments, each passed as is (no shell expansion)"
                    },
                    "cwd": {
                        "type": "string",
                        "description": "Working directory relative to the workspace root (default: the root)"
                    },
                    "timeout_secs": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Wall-clock seconds before the command is killed (default and maximum set by the operator)"
                    },
                    "stdin": {
                        "type": "string",
                        "description": "Text given on standard input"
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("shell:execute")),
            risk: Risk::High,
            path_params: vec!["cwd".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self {
            jail,
            settings,
            spec,
        }
    }

    fn read<'a>(arguments: &'a Value) -> Result<Call<'a>, ToolOutput> {
        let Arguments {
            command,
            args,
            timeout_secs,
            cwd,
            stdin,
        } = parse(arguments)?;
        let argv: Vec<String> = std::iter::once(command.0)
            .chain(args.map(|args| args.0).unwrap_or_default())
            .map(str::to_owned)
            .collect();
        if argv.iter().any(|arg| arg.contains('\0')) {
            return Err(ToolOutput::error(
                "the command and its arguments cannot contain NUL characters",
            ));
        }
        Ok(Call {
            argv,
            cwd: cwd.unwrap_or(""),
            timeout_secs: timeout_secs.map(|secs| secs.0),
            stdin,
        })
    }

    /// The workspace-relative working directory, links resolved (`""`: the root).
    fn cwd(&self, cwd: &str) -> Result<String, ToolOutput> {
        let path = if cwd.is_empty() { "." } else { cwd };
        let relative = self.jail.check(path).map_err(|error| jail_error(&error))?;
        Ok(relative.to_string_lossy().into_owned())
    }

    /// Whether the working directory `relative` (`cwd` as written) is there: the run's
    /// check, and the card's "will fail" before anyone decides.
    fn cwd_exists(&self, cwd: &str, relative: &str) -> Result<(), ToolOutput> {
        let path = if relative.is_empty() { "." } else { relative };
        if self.jail.exists(path).map_err(|error| jail_error(&error))? {
            Ok(())
        } else {
            Err(ToolOutput::error(format!(
                "the working directory `{cwd}` does not exist"
            )))
        }
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let call = Self::read(arguments).ok()?;
        let cwd = self.cwd(call.cwd).ok()?;
        let missing = self.cwd_exists(call.cwd, &cwd).err();
        let confined = self.settings.confined();
        let notice = (!confined).then(|| {
            "NOT confined: this system has no Landlock, so the command can read and change \
             every file this user can, and use the network"
                .to_owned()
        });
        let mut preview = EffectPreview {
            target: call.argv[0].clone(),
            label: WriteLabel::Run,
            notice,
            fingerprint: FINGERPRINT.to_owned(),
            command: Some(CommandPreview {
                shell: is_shell(&call.argv[0]),
                argv: call.argv,
                cwd,
                confined,
                limits: self.settings.limits(call.timeout_secs),
                stdin_bytes: call.stdin.map(|stdin| stdin.len() as u64),
                containment: Some(self.settings.containment().processes().to_owned()),
                // What a revert could not cover, measured now (metadata only); a
                // workspace that cannot be walked covers nothing.
                uncovered: Some(
                    super::tree::measure(&self.jail, &self.settings.snapshot).unwrap_or_default(),
                ),
            }),
            ..EffectPreview::default()
        };
        if let Some(output) = missing {
            preview.failing(&output);
        }
        Some(preview)
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let call = Self::read(arguments)?;
        let relative = self.cwd(call.cwd)?;
        let workspace = self.jail.root();
        self.cwd_exists(call.cwd, &relative)?;
        if context.should_stop() {
            return Err(ToolOutput::error(
                "not run: the task was cancelled or ran out of time",
            ));
        }
        let limits = self.settings.limits(call.timeout_secs);
        let mut spec = Spec::new(
            call.argv.clone(),
            workspace.join(&relative),
            workspace.to_path_buf(),
            ResourceLimits {
                cpu_secs: limits.cpu_secs,
                memory_bytes: limits.memory_mb.saturating_mul(1 << 20),
                processes: limits.processes,
                file_size_bytes: limits.file_size_mb.saturating_mul(1 << 20),
            },
        );
        spec.confine = self.settings.confined();
        let options = RunOptions {
            stdin: call.stdin.map(|stdin| stdin.as_bytes().to_vec()),
            timeout: Duration::from_secs(limits.timeout_secs),
            output_bytes: limits.output_bytes,
        };
        let stop = || context.should_stop();
        let finished = self
            .settings
            .runner()
            .run(&spec, &options, &stop)
            .map_err(|error| ToolOutput::error(format!("not run: {error}")))?;
        let seconds = finished.elapsed.as_secs_f64();
        let (headline, ok) = match finished.end {
            End::Exited(0) => (format!("exit code 0 ({seconds:.1} s)"), true),
            End::Exited(code) => (format!("exit code {code} ({seconds:.1} s)"), false),
            End::Signalled(signal) => (describe_signal(signal, &limits), false),
            End::TimedOut => (
                format!(
                    "killed: still running after {} s (the wall-clock limit); its processes \
                     were stopped",
                    limits.timeout_secs
                ),
                false,
            ),
            End::Stopped => (
                "killed: the task was cancelled or ran out of time while the command ran"
                    .to_owned(),
                false,
            ),
        };
        let text = format!(
            "{headline}\n{}{}",
            stream("stdout", &finished.stdout),
            stream("stderr", &finished.stderr)
        );
        if ok {
            Ok(text)
        } else {
            Err(ToolOutput::error(text))
        }
    }
}

/// Whether `program` is a shell (by its file name): the card says it runs a script.
fn is_shell(program: &str) -> bool {
    let name = Path::new(program)
        .file_name()
        .map_or(program.into(), |name| name.to_string_lossy());
    SHELLS.contains(&name.as_ref())
}

/// One output stream for the model, with the truncation marker.
fn stream(name: &str, captured: &Captured) -> String {
    if captured.total == 0 {
        return format!("{name}: (empty)\n");
    }
    let mut text = String::from_utf8_lossy(&captured.bytes).into_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let cut = if captured.truncated() {
        format!(
            "[… {name} cut: {} bytes in all, the first {} shown]\n",
            captured.total,
            captured.bytes.len()
        )
    } else {
        String::new()
    };
    format!("{name}:\n{text}{cut}")
}

fn describe_signal(signal: i32, limits: &pp_types::CommandLimits) -> String {
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    const SIGXFSZ: i32 = 25;
    match signal {
        SIGXCPU => format!(
            "killed: used more than {} s of CPU time (signal {signal})",
            limits.cpu_secs
        ),
        SIGXFSZ => format!(
            "killed: wrote a file larger than {} MiB (signal {signal})",
            limits.file_size_mb
        ),
        SIGKILL => format!("killed by signal {signal} (SIGKILL; the CPU limit sends it too)"),
        _ => format!("killed by signal {signal}"),
    }
}

impl SyncTool for RunCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    /// The command, not the working directory, is what the ledger and the card name.
    fn target(&self, arguments: &Value) -> Option<String> {
        parse(arguments)
            .ok()
            .map(|arguments: Arguments<'_>| arguments.command.0.to_owned())
    }

    /// Always the card's constant fingerprint: nothing about a command goes stale. The
    /// identity is the working directory, so an edit that moves it is the person's own
    /// choice.
    fn state(&self, _context: &ToolContext, arguments: &Value) -> Option<TargetState> {
        let cwd = parse(arguments)
            .ok()
            .and_then(|arguments: Arguments<'_>| arguments.cwd)
            .unwrap_or("");
        Some(TargetState {
            identity: format!("run:{}", self.cwd(cwd).unwrap_or_else(|_| cwd.to_owned())),
            fingerprint: FINGERPRINT.to_owned(),
        })
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        match self.run(context, arguments) {
            Ok(text) => ToolOutput::success(text),
            Err(output) => output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("run_command");
    }

    #[test]
    fn the_card_says_how_much_a_revert_could_not_cover() {
        let temp = tempfile::tempdir().unwrap();
        let jail = Arc::new(Jail::new(temp.path()).unwrap());
        jail.write_atomic("small.txt", b"small").unwrap();
        jail.write_atomic("big.bin", &[0_u8; 200]).unwrap();
        let sandbox =
            pp_sandbox::Sandbox::new("pocketpilot".into(), Vec::new()).without_namespaces();
        let mut settings = ShellSettings::new(sandbox, temp.path().join("data"));
        settings.snapshot.max_file_bytes = 100;
        let tool = RunCommand::new(Arc::clone(&jail), Arc::new(settings.clone()));
        let preview = tool.preview_of(&json!({"command": "true"})).unwrap();
        let uncovered = preview.command.unwrap().uncovered.unwrap();
        assert_eq!((uncovered.files, uncovered.bytes), (1, 200));
        let json = serde_json::to_value(
            tool.preview_of(&json!({"command": "true"}))
                .unwrap()
                .command,
        )
        .unwrap();
        assert_eq!(json["uncovered"], json!({"files": 1, "bytes": 200}));

        settings.snapshot.max_file_bytes = 1000;
        let tool = RunCommand::new(jail, Arc::new(settings));
        let preview = tool.preview_of(&json!({"command": "true"})).unwrap();
        assert_eq!(
            preview.command.unwrap().uncovered,
            Some(pp_types::Uncovered::default()),
            "zeros when everything is covered"
        );
    }

    #[test]
    fn shells_are_known_by_their_file_name() {
        assert!(is_shell("sh"));
        assert!(is_shell("/usr/bin/bash"));
        assert!(!is_shell("python3"));
        assert!(!is_shell("shellcheck"));
    }

    #[test]
    fn a_cut_stream_says_how_much_there_was() {
        let captured = Captured {
            bytes: b"abc".to_vec(),
            total: 10,
        };
        assert_eq!(
            stream("stdout", &captured),
            "stdout:\nabc\n[… stdout cut: 10 bytes in all, the first 3 shown]\n"
        );
        assert_eq!(stream("stderr", &Captured::default()), "stderr: (empty)\n");
    }

    #[test]
    fn arguments_are_kept_exactly() {
        let arguments = json!({"command": "echo", "args": ["a b", "$HOME", "*"], "stdin": "x"});
        let call = RunCommand::read(&arguments).unwrap();
        assert_eq!(call.argv, ["echo", "a b", "$HOME", "*"]);
        assert_eq!(call.stdin, Some("x"));
        assert_eq!(call.cwd, "");
        for (bad, said) in [
            (
                json!({"command": "echo", "args": [1]}),
                "argument `args` must be an array of strings",
            ),
            (
                json!({"command": "echo", "args": "a"}),
                "argument `args` must be an array of strings",
            ),
            (
                json!({"command": ""}),
                "argument `command` must be a non-empty string",
            ),
            (
                json!({"args": ["a"]}),
                "argument `command` must be a non-empty string",
            ),
            (
                json!({"command": "a", "timeout_secs": 0}),
                "argument `timeout_secs` must be a whole number of at least 1",
            ),
            (
                json!({"command": "a", "cwd": 1}),
                "argument `cwd` must be a string",
            ),
            (
                json!({"command": "a", "stdin": false}),
                "argument `stdin` must be a string",
            ),
            (
                json!({"command": "a\0"}),
                "the command and its arguments cannot contain NUL characters",
            ),
        ] {
            let Err(output) = RunCommand::read(&bad) else {
                panic!("{bad} was read");
            };
            assert_eq!(output, ToolOutput::error(said), "{bad}");
        }
    }
}
