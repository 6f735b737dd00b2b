//! `pocketpilot revert CHANGE_ID`: undoes a change an approved call made, as the
//! operator (audited `change_reverted`); refused (exit 5) when the file changed since
//! the agent's write or nothing was kept. Also the "Changes on disk" list that
//! `tasks show` and `run` print.

use pp_tasks::{Action, RevertRefusal};
use pp_types::{Actor, Change, ChangeId, ChangeKind};

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::Flags;
use crate::escape::{json_safe, one_line, terminal_safe};
use crate::output::{errln, outln};
use crate::{Exit, exit};

/// Reverts change `id` for `who` (team mode: after the API's role and grant checks);
/// `json` prints `{"change": …}` or `{"error": …, "diff": …}`.
pub(crate) async fn run(
    flags: &Flags,
    who: &UserArgs,
    id: String,
    json: bool,
) -> anyhow::Result<u8> {
    let app = App::stored(flags).await?;
    let caller = who.caller(app.config.team, &app.service).await?;
    if caller.user.is_some() {
        let task = app.service.changes().task_of(&ChangeId(id.clone())).await?;
        acting::authorize(&app.service, &caller, Action::Revert(&task)).await?;
    }
    let refusal = match app
        .service
        .changes()
        .revert_as(&ChangeId(id.clone()), Actor::Operator, &caller)
        .await?
    {
        Ok(change) => {
            if json {
                let body = serde_json::json!({ "change": change });
                outln!("{}", json_safe(&body.to_string()))?;
            } else {
                outln!(
                    "reverted {id}: {} ({})",
                    terminal_safe(change.path.as_deref().unwrap_or("?")),
                    change.id
                )?;
            }
            return Ok(exit::OK);
        }
        Err(refusal) => refusal,
    };
    let (code, message, diff) = match refusal {
        RevertRefusal::ChangedSince { message, diff } => ("changed_since", message, diff),
        RevertRefusal::NotRevertible(message) => ("not_revertible", message, None),
    };
    if json {
        let body = serde_json::json!({
            "error": {"code": code, "message": message},
            "diff": diff,
        });
        outln!("{}", json_safe(&body.to_string()))?;
        return Ok(exit::CONFLICT);
    }
    if let Some(diff) = diff {
        errln!("{}", terminal_safe(&diff));
    }
    Err(Exit::conflict(format!("{code}: {}", terminal_safe(&message))).into())
}

/// The "Changes on disk" lines: one per change, with its id (for `pocketpilot revert`);
/// a move reads `old → new`.
pub(crate) fn change_lines(changes: &[Change]) -> Vec<String> {
    if changes.is_empty() {
        return vec!["Changes on disk: none".to_owned()];
    }
    let mut lines = vec!["Changes on disk:".to_owned()];
    for change in changes {
        let what = match change.kind {
            ChangeKind::EffectsUnknown => match change.path.as_deref() {
                // A command's change no revert covers (a mode, a link, beyond the bound).
                Some(path) => format!(
                    "{}: changed by `{}`, not revertible",
                    one_line(path),
                    terminal_safe(&change.tool)
                ),
                None => format!(
                    "`{}` ran: effects unknown to PocketPilot",
                    terminal_safe(&change.tool)
                ),
            },
            _ => {
                let size = change
                    .bytes
                    .map(|bytes| format!(" ({})", pp_tasks::format_size(bytes)))
                    .unwrap_or_default();
                let from = change
                    .from_path
                    .as_deref()
                    .filter(|_| change.kind == ChangeKind::Moved)
                    .map(|from| format!("{} → ", one_line(from)))
                    .unwrap_or_default();
                format!(
                    "{from}{}{size}",
                    one_line(change.path.as_deref().unwrap_or("?"))
                )
            }
        };
        let state = match (&change.reverted_by, change.revertible) {
            (Some(by), _) => format!("  reverted by {by}"),
            (None, true) => "  revertible".to_owned(),
            (None, false) => String::new(),
        };
        lines.push(format!(
            "  {:<11} {what}  {}{state}",
            change.kind.as_str().replace('_', " "),
            change.id
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use pp_types::{TaskId, Timestamp};

    #[test]
    fn lines_name_kind_path_size_and_id() {
        let change = |kind, path: Option<&str>, revertible| Change {
            id: ChangeId("c_1".into()),
            task_id: TaskId("t_1".into()),
            approval_id: None,
            tool: "stamp".into(),
            kind,
            path: path.map(str::to_owned),
            from_path: None,
            root: pp_types::ChangeRoot::Workspace,
            bytes: path.map(|_| 318),
            at: Timestamp::from_millis(0),
            revertible,
            reverted_by: None,
        };
        assert_eq!(
            change_lines(&[
                change(ChangeKind::Created, Some("reports/x.md"), true),
                change(ChangeKind::EffectsUnknown, None, false),
            ]),
            [
                "Changes on disk:",
                "  created     reports/x.md (318 B)  c_1  revertible",
                "  effects unknown `stamp` ran: effects unknown to PocketPilot  c_1",
            ]
        );
        assert_eq!(change_lines(&[]), ["Changes on disk: none"]);

        let moved = Change {
            from_path: Some("inbox/a\nb.pdf".into()),
            ..change(ChangeKind::Moved, Some("archive/a.pdf"), true)
        };
        let deleted = Change {
            bytes: None,
            ..change(ChangeKind::Deleted, Some("old/todo.md"), false)
        };
        let folder = Change {
            bytes: None,
            ..change(ChangeKind::FolderCreated, Some("reports/2026"), true)
        };
        assert_eq!(
            change_lines(&[moved, deleted, folder]),
            [
                "Changes on disk:",
                "  moved       inbox/a\\nb.pdf → archive/a.pdf (318 B)  c_1  revertible",
                "  deleted     old/todo.md  c_1",
                "  folder created reports/2026  c_1  revertible",
            ]
        );
    }
}
