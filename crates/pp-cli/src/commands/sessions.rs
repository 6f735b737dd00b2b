//! `pocketpilot sessions [list|show ID|delete ID]`: the stored chat sessions; in team
//! mode `delete` acts for `--user NAME` (`acting.rs`).

use clap::Subcommand;
use pp_chat::{SessionRecord, SessionView, Sessions};
use pp_tasks::Action;
use serde_json::json;

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::Flags;
use crate::exit;
use crate::output::{errln, outln};
use crate::render::{json_safe, one_line, shorten, terminal_safe};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// List chat sessions, most recently used first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print one JSON object: `{"sessions": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Show one session: its turns with their task ids and states.
    Show {
        /// The session id.
        id: String,
        /// Print the session as one JSON object (as `GET /api/sessions/{id}` does).
        #[arg(long)]
        json: bool,
    },
    /// Delete a session (its turns' tasks, events and audit rows stay); refused with exit
    /// code 5 while a turn has not ended.
    Delete {
        /// The session id.
        id: String,
        /// Who deletes it (team mode: its creator, or an owner).
        #[command(flatten)]
        who: UserArgs,
    },
}

/// Runs a `sessions` subcommand.
pub(crate) async fn run(flags: &Flags, command: SessionsCommand) -> anyhow::Result<u8> {
    let app = App::stored(flags).await?;
    let service = &app.service;
    let sessions = app.sessions();
    match command {
        SessionsCommand::List { limit, json } => {
            let list = sessions.sessions(limit).await?;
            if json {
                let list = json!({ "sessions": list });
                outln!("{}", json_safe(&list.to_string()))?;
            } else {
                print_sessions(&list, None, false)?;
            }
            Ok(exit::OK)
        }
        SessionsCommand::Show { id, json } => {
            let view = sessions.session(&id).await?;
            if json {
                outln!("{}", json_safe(&serde_json::to_string(&view)?))?;
            } else {
                print_view(&view)?;
            }
            Ok(exit::OK)
        }
        SessionsCommand::Delete { id, who } => {
            let caller = who.caller(app.config.team, service).await?;
            if caller.user.is_some() {
                let creator = sessions.session_user(&id).await?;
                let creator = creator.as_deref();
                acting::authorize(service, &caller, Action::OwnSession { id: &id, creator })
                    .await?;
            }
            delete(&sessions.as_user(caller.user.as_deref()), &id).await
        }
    }
}

/// Deletes session `id`: exit 5 while a turn has not ended.
async fn delete(sessions: &Sessions, id: &str) -> anyhow::Result<u8> {
    match sessions.delete_session(id).await {
        Ok(()) => {
            errln!("deleted session {}", one_line(id));
            Ok(exit::OK)
        }
        Err(error @ pp_tasks::Error::SessionBusy { .. }) => {
            errln!("{error}: cancel that turn first (pocketpilot tasks cancel ID)");
            Ok(exit::CONFLICT)
        }
        Err(error) => Err(error.into()),
    }
}

/// One line per session (on stdout, or on stderr inside a chat, where `current` is
/// marked with `*`).
pub(crate) fn print_sessions(
    sessions: &[SessionRecord],
    current: Option<&str>,
    to_stderr: bool,
) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    if sessions.is_empty() {
        lines.push("no sessions".to_owned());
    }
    for session in sessions {
        let mark = if Some(session.id.as_str()) == current {
            "*"
        } else {
            " "
        };
        lines.push(format!(
            "{mark} {}  {}  {:<12}  {}",
            one_line(&session.id),
            session.updated_at,
            one_line(&shorten(&session.workspace, 12)),
            one_line(&shorten(
                session.title.as_deref().unwrap_or("(untitled)"),
                50
            )),
        ));
    }
    for line in lines {
        if to_stderr {
            errln!("{line}");
        } else {
            outln!("{line}")?;
        }
    }
    Ok(())
}

fn print_view(view: &SessionView) -> anyhow::Result<()> {
    let session = &view.session;
    outln!(
        "session {}  {}\nworkspace {} · created {} · updated {}",
        one_line(&session.id),
        one_line(session.title.as_deref().unwrap_or("(untitled)")),
        one_line(&session.workspace),
        session.created_at,
        session.updated_at
    )?;
    if let Some(summary) = &view.summary {
        outln!(
            "summary of earlier turns: {}",
            one_line(&shorten(summary, 200))
        )?;
    }
    for turn in &view.turns {
        outln!(
            "\n#{} {} {}\nyou › {}",
            turn.index,
            turn.task_id,
            turn.state.as_str(),
            one_line(&turn.prompt)
        )?;
        if let Some(answer) = &turn.final_text {
            outln!("model › {}", terminal_safe(answer))?;
        }
    }
    Ok(())
}
