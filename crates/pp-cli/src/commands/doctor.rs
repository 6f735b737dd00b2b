//! `pocketpilot doctor`: checks configuration, data directory, workspaces and the model,
//! with a verdict per check.

use std::path::Path;

use pp_tasks::ModelSource;

use crate::app::App;

use crate::config::{Config, Flags};
use crate::output::outln;
use crate::{exit, models};

/// One check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Warn,
    Fail,
}

struct Report {
    failed: bool,
    /// The first failed write to stdout (a closed pipe), returned at the end.
    output: std::io::Result<()>,
}

impl Report {
    fn line(&mut self, verdict: Verdict, what: &str, detail: &str) {
        let tag = match verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => {
                self.failed = true;
                "FAIL"
            }
        };
        if self.output.is_ok() {
            self.output = outln!("[{tag}] {what}: {detail}");
        }
    }
}

/// Runs every check; exit code 1 if any failed.
pub(crate) async fn run(flags: &Flags) -> anyhow::Result<u8> {
    let mut report = Report {
        failed: false,
        output: Ok(()),
    };
    let config = match Config::load(flags) {
        Ok(config) => {
            let source = config.file.as_ref().map_or_else(
                || "no config file; using defaults (`pocketpilot init` writes one)".to_owned(),
                |file| format!("read {}", file.display()),
            );
            report.line(Verdict::Ok, "config", &source);
            config
        }
        Err(error) => {
            report.line(Verdict::Fail, "config", &format!("{error:#}"));
            // One mistake must not hide the rest: the other checks run on the defaults
            // (the file left out, no current-directory workspace) and say so.
            let defaults = Flags {
                without_config_file: true,
                stored_tasks_only: true,
                ..flags.clone()
            };
            match Config::load(&defaults) {
                Ok(config) => {
                    report.line(
                        Verdict::Warn,
                        "config",
                        "the checks below use the defaults, not the config file",
                    );
                    config
                }
                Err(error) => {
                    report.line(Verdict::Fail, "defaults", &format!("{error:#}"));
                    report.output?;
                    outln!("verdict: something needs fixing (see FAIL above)")?;
                    return Ok(exit::FAILED);
                }
            }
        }
    };
    check_home(&mut report, &config);
    check_database(&mut report, &config).await;
    let shell = crate::shell::shell_provider(&config.shell, &config.home);
    for workspace in &config.workspaces.list {
        let default = if config.workspaces.default.as_deref() == Some(&workspace.name) {
            " (default)"
        } else {
            ""
        };
        match pp_gate::Jail::new(&workspace.path) {
            Ok(jail) => {
                report.line(
                    Verdict::Ok,
                    &format!("workspace {}{default}", workspace.name),
                    &jail.root().display().to_string(),
                );
                let (confined, line) = crate::shell::status(&shell, jail.root());
                let verdict = if confined { Verdict::Ok } else { Verdict::Warn };
                report.line(verdict, &format!("shell in {}", workspace.name), &line);
            }
            Err(error) => report.line(
                Verdict::Fail,
                &format!("workspace {}", workspace.name),
                &format!("{}: {error}", workspace.path.display()),
            ),
        }
    }
    check_model(&mut report, &config).await;
    for (ok, what, detail) in super::mcp_list::doctor_lines(&config).await {
        let verdict = if ok { Verdict::Ok } else { Verdict::Fail };
        report.line(verdict, &what, &detail);
    }
    report.output?;
    outln!(
        "{}",
        if report.failed {
            "verdict: something needs fixing (see FAIL above)"
        } else {
            "verdict: ready"
        }
    )?;
    Ok(if report.failed {
        exit::FAILED
    } else {
        exit::OK
    })
}

fn check_home(report: &mut Report, config: &Config) {
    let home = &config.home;
    if let Err(error) = crate::home::ensure(home) {
        report.line(Verdict::Fail, "data directory", &format!("{error:#}"));
        return;
    }
    match mode(home) {
        Some(mode) if mode & 0o077 != 0 => report.line(
            Verdict::Warn,
            "data directory",
            &format!(
                "{} is readable by others (mode {mode:o}); run chmod 700",
                home.display()
            ),
        ),
        _ => report.line(Verdict::Ok, "data directory", &home.display().to_string()),
    }
    let token = config.token_file();
    match mode(&token) {
        Some(mode) if mode & 0o077 != 0 => report.line(
            Verdict::Fail,
            "api token",
            &format!(
                "{} is readable by others (mode {mode:o}); run `pocketpilot token rotate`",
                token.display()
            ),
        ),
        Some(_) => report.line(
            Verdict::Ok,
            "api token",
            &format!("{} (mode 600)", token.display()),
        ),
        None => report.line(
            Verdict::Ok,
            "api token",
            "created at the first `pocketpilot serve`",
        ),
    }
}

/// Opens the database `[store] url` names (applying migrations, as every command does)
/// and says which backend and schema version it has.
async fn check_database(report: &mut Report, config: &Config) {
    match App::with_config(config.clone(), ModelSource::Scripted, None).await {
        Ok(app) => match app.service.database_status().await {
            Ok((backend, schema)) => report.line(
                Verdict::Ok,
                "database",
                &format!("{} ({backend}, schema {schema})", config.store_url),
            ),
            Err(error) => report.line(Verdict::Fail, "database", &error.to_string()),
        },
        Err(error) => report.line(Verdict::Fail, "database", &format!("{error:#}")),
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "inspects the operator's own data directory"
)]
fn mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path)
            .ok()
            .map(|meta| meta.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).ok().map(|_| 0o600)
    }
}

async fn check_model(report: &mut Report, config: &Config) {
    let chosen = match models::find(config).await {
        Ok(models::Found::Chosen(chosen)) => chosen,
        Ok(models::Found::Nothing(message)) => {
            report.line(Verdict::Fail, "model", &message);
            return;
        }
        Err(error) => {
            report.line(Verdict::Fail, "model", &format!("{error:#}"));
            return;
        }
    };
    report.line(Verdict::Ok, "model", &chosen.reason);
    match pp_model::ping(chosen.model.as_ref()).await {
        Ok(ping) => {
            report.line(
                Verdict::Ok,
                "model reachable",
                &format!(
                    "{} at {} answered in {} ms",
                    chosen.settings.model,
                    chosen.settings.base_url,
                    ping.latency.as_millis()
                ),
            );
            if ping.tool_call_worked && ping.arguments_valid {
                report.line(Verdict::Ok, "tool calling", "works");
            } else if ping.tool_call_worked {
                report.line(
                    Verdict::Warn,
                    "tool calling",
                    "the model called the tool with invalid arguments; expect tool errors",
                );
            } else {
                report.line(
                    Verdict::Warn,
                    "tool calling",
                    "the model answered without calling the test tool; it may not support tools",
                );
            }
        }
        Err(error) => report.line(Verdict::Fail, "model reachable", &error.to_string()),
    }
}
