//! The approval card's lines for what a call does beyond writing a file: a move or
//! rename (from → to, the file it replaces), a delete (its size), a new folder, and a
//! command (its exact argv, working directory, limits, and "NOT confined" when the
//! shell runs without its sandbox).
//!
//! Every model-written name goes through [`one_line`] (paths, each argument) or
//! [`terminal_safe`] (a shell script's lines), so nothing printed here can forge a line
//! of the card.

use pp_tasks::ApprovalView;
use pp_types::{CommandLimits, CommandPreview, McpCallPreview, WriteLabel};

use super::{one_line, target_text, terminal_safe};
use crate::style::{Paint, Palette};

/// The `action:` line (and for a move, the `resolves:` and `replaces:` lines; for a
/// delete, its `size:`).
pub(super) fn action_lines(view: &ApprovalView, target: &str, palette: Palette) -> String {
    let resolved = view.resolved.as_deref();
    if let Some(mcp) = &view.mcp {
        return action(
            palette,
            &one_line(&mcp.action),
            &target_text(target, resolved),
        );
    }
    match (view.label, view.destination.as_deref()) {
        (Some(WriteLabel::Move), Some(destination)) => {
            move_lines(view, target, destination, palette)
        }
        (Some(WriteLabel::Delete), _) => {
            let mut lines = action(palette, "delete", &target_text(target, resolved));
            if let Some(size) = view.size {
                lines.push_str(&format!("│ size:       {}\n", pp_tasks::format_size(size)));
            }
            lines
        }
        (Some(WriteLabel::CreateFolder), _) => {
            action(palette, "create folder", &target_text(target, resolved))
        }
        (label, _) => action(
            palette,
            label.map_or("target", WriteLabel::as_str),
            &target_text(target, resolved),
        ),
    }
}

/// `│ action:     VERB TEXT`.
fn action(palette: Palette, verb: &str, text: &str) -> String {
    format!(
        "│ action:     {} {text}\n",
        palette.paint(Paint::Bold, verb)
    )
}

/// A move: `rename a → b` when the folder stays the same, else `move a → dir/b`; the
/// workspace paths when either side resolves differently; the file an overwriting move
/// replaces, with its size.
fn move_lines(view: &ApprovalView, from: &str, to: &str, palette: Palette) -> String {
    let from_resolved = view.resolved.as_deref().unwrap_or(from);
    let to_resolved = view.destination_resolved.as_deref().unwrap_or(to);
    let verb = if parent(from_resolved) == parent(to_resolved) {
        "rename"
    } else {
        "move"
    };
    let mut lines = action(
        palette,
        verb,
        &format!("{} → {}", one_line(from), one_line(to)),
    );
    if from_resolved != from || to_resolved != to {
        lines.push_str(&format!(
            "│ resolves:   {} → {}\n",
            one_line(from_resolved),
            one_line(to_resolved)
        ));
    }
    if let Some(replaces) = &view.replaces {
        let size = view
            .size
            .map(|size| format!(" ({})", pp_tasks::format_size(size)))
            .unwrap_or_default();
        lines.push_str(&format!(
            "│ replaces:   {}\n",
            palette.paint(
                Paint::Red,
                &format!("`{}`{size}, which is overwritten", one_line(replaces))
            )
        ));
    }
    lines
}

/// The folder a workspace path is in (`""` for the workspace's root).
pub(super) fn parent(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// The lines of a call to an MCP server's tool: which server, which tool on it, the
/// action it was resolved to, and its sandbox when wider than the default (a banner when
/// the server is NOT confined). The arguments follow (the card always shows them).
pub(super) fn mcp_lines(mcp: &McpCallPreview, palette: Palette) -> String {
    let mut lines = format!(
        "│ MCP server: {} (tool {} on it, resolved action {})\n",
        palette.paint(Paint::Bold, &one_line(&mcp.server)),
        one_line(&mcp.tool),
        palette.paint(Paint::Bold, &one_line(&mcp.action)),
    );
    match &mcp.sandbox {
        Some(sandbox) if !sandbox.confined => {
            lines.push_str(&format!(
                "│ {} {}\n",
                palette.paint(Paint::Alarm, "!! NOT confined !!"),
                palette.paint(
                    Paint::Red,
                    "the server's process runs with all of your user's rights: every file \
                     your user can reach, the network, PocketPilot's data directory"
                )
            ));
        }
        Some(sandbox) => {
            let mut wide = vec![format!("workspace {}", one_line(&sandbox.workspace))];
            if sandbox.network {
                wide.push("network".to_owned());
            }
            wide.extend(
                sandbox
                    .read
                    .iter()
                    .map(|path| format!("reads {}", one_line(path))),
            );
            wide.extend(
                sandbox
                    .write
                    .iter()
                    .map(|path| format!("writes {}", one_line(path))),
            );
            lines.push_str(&format!(
                "│ sandbox:    {}\n│ {}\n",
                palette.paint(Paint::Yellow, &wide.join(", ")),
                "the server runs as its own process in this sandbox: path arguments are \
                 checked against the workspace"
            ));
        }
        None => lines.push_str(&format!(
            "│ {}\n",
            "the server runs as its own process in its sandbox: path arguments are checked \
             against the workspace; it reaches only the system folders and what it needs \
             to start"
        )),
    }
    lines
}

/// The banner at the top of a card whose command runs without confinement.
pub(super) fn unconfined_banner(command: &CommandPreview, palette: Palette) -> String {
    let network = if command.limits.network {
        "the network, "
    } else {
        ""
    };
    format!(
        "│ {} {}\n",
        palette.paint(Paint::Alarm, "!! NOT confined !!"),
        palette.paint(
            Paint::Red,
            &format!(
                "this command runs with all of your user's rights: every file you can \
                 reach, {network}the data directory"
            )
        )
    )
}

/// The command: every argument on its own numbered line between quotes (controls
/// escaped), the script when it is a shell's, the working directory, the sandbox and
/// its limits.
pub(super) fn command_lines(command: &CommandPreview, palette: Palette) -> String {
    let count = command.argv.len();
    let mut lines = format!(
        "│ argv:       {count} argument{}, one per line, exactly as passed to the program:\n",
        if count == 1 { "" } else { "s" }
    );
    for (index, argument) in command.argv.iter().enumerate() {
        lines.push_str(&format!(
            "│   {} \"{}\"\n",
            palette.paint(Paint::Dim, &format!("[{index}]")),
            one_line(argument)
        ));
    }
    if command.shell {
        lines.push_str(&format!(
            "│ shell:      {}\n",
            palette.paint(Paint::Yellow, "runs a shell script; the script:")
        ));
        for (index, line) in shell_script(&command.argv)
            .unwrap_or("")
            .lines()
            .enumerate()
        {
            lines.push_str(&format!(
                "│   {} {}\n",
                palette.paint(Paint::Dim, &format!("{:>4}", index + 1)),
                terminal_safe(line)
            ));
        }
    }
    let cwd = if command.cwd.is_empty() {
        ". (the workspace's root)".to_owned()
    } else {
        one_line(&command.cwd).into_owned()
    };
    lines.push_str(&format!("│ cwd:        {cwd}\n"));
    lines.push_str(&format!(
        "│ sandbox:    {}\n",
        if command.confined {
            "confined (Landlock): reads and writes only in the workspace, no network".to_owned()
        } else {
            palette.paint(Paint::Alarm, "NOT confined")
        }
    ));
    if let Some(containment) = &command.containment {
        lines.push_str(&format!("│ processes:  {}\n", one_line(containment)));
    }
    lines.push_str(&format!("│ limits:     {}\n", limits_text(&command.limits)));
    if let Some(bytes) = command.stdin_bytes {
        lines.push_str(&format!("│ stdin:      {}\n", pp_tasks::format_size(bytes)));
    }
    if let Some(uncovered) = &command.uncovered {
        let text = pp_tasks::describe_uncovered(uncovered);
        let text = if uncovered.files > 0 {
            palette.paint(Paint::Yellow, &text)
        } else {
            text
        };
        lines.push_str(&format!("│ revert:     {text}\n"));
    }
    lines
}

/// The script a shell is given (`sh -c SCRIPT …`): the argument after `-c`.
pub(super) fn shell_script(argv: &[String]) -> Option<&str> {
    let at = argv.iter().position(|argument| argument == "-c")?;
    argv.get(at + 1).map(String::as_str)
}

/// `timeout 60 s · CPU 60 s · memory 1024 MiB · 64 processes · files ≤ 256 MiB · output
/// ≤ 64.0 KiB per stream · no network`.
pub(super) fn limits_text(limits: &CommandLimits) -> String {
    format!(
        "timeout {} s · CPU {} s · memory {} MiB · {} processes · files ≤ {} MiB · output ≤ {} \
         per stream · {}",
        limits.timeout_secs,
        limits.cpu_secs,
        limits.memory_mb,
        limits.processes,
        limits.file_size_mb,
        pp_tasks::format_size(limits.output_bytes),
        if limits.network {
            "network allowed"
        } else {
            "no network"
        }
    )
}

/// Why the call cannot be undone, when it cannot: an MCP server's effects are unknown
/// to PocketPilot (a command's are recorded: its card's `revert:` line); otherwise the server said `revertible: false` (what the call replaces
/// or deletes is larger than `[revert] max_bytes`).
pub(super) fn undo_text(view: &ApprovalView) -> Option<&'static str> {
    if view.mcp.is_some() {
        return Some("cannot be undone (PocketPilot does not see what an MCP server changes)");
    }
    match (view.label, view.revertible) {
        // A command's changes are recorded after it runs; its `revert:` line says how
        // much of the workspace a revert could not cover.
        (Some(WriteLabel::Run), _) => None,
        (Some(WriteLabel::Delete), Some(false)) => {
            Some("cannot be undone (the file is larger than [revert] max_bytes: no copy is kept)")
        }
        (Some(WriteLabel::Move), Some(false)) => {
            Some("cannot be undone (the file it replaces is larger than [revert] max_bytes)")
        }
        (_, Some(false)) => Some("cannot be undone (the file is larger than [revert] max_bytes)"),
        _ => None,
    }
}

/// The card's provenance under its title: the model's words of the turn that made the
/// call (quoted: the model wrote them) and, when the task took in text no person wrote
/// since the person's last message, which — marked untrusted.
pub(super) fn provenance_lines(view: &ApprovalView, palette: Palette) -> String {
    let provenance = &view.provenance;
    let mut lines = String::new();
    if let Some(text) = &provenance.model_text {
        lines.push_str(&format!(
            "│ model said: “{}”\n",
            one_line(&super::shorten(text, 160))
        ));
    }
    if provenance.untrusted_input {
        let mut kinds: Vec<String> = provenance
            .inputs
            .iter()
            .filter(|input| input.untrusted)
            .map(|input| format!("{} `{}`", input_words(input.kind), one_line(&input.source)))
            .collect();
        if provenance.more > 0 {
            kinds.push(format!("{} more", provenance.more));
        }
        lines.push_str(&format!(
            "│ follows:    {} {}\n",
            palette.paint(Paint::Red, "UNTRUSTED input:"),
            kinds.join(", ")
        ));
    }
    lines
}

/// What an input kind is called on the card.
fn input_words(kind: pp_tasks::InputKind) -> &'static str {
    use pp_tasks::InputKind;
    match kind {
        InputKind::Prompt => "your prompt",
        InputKind::Message => "a person's message",
        InputKind::Webhook => "webhook",
        InputKind::Schedule => "schedule",
        InputKind::McpClient => "MCP client",
        InputKind::McpOutput => "MCP output",
        InputKind::Document => "document",
        InputKind::FileRead => "file read",
        InputKind::Skill => "skill",
    }
}

#[cfg(test)]
mod tests {
    use pp_tasks::{Input, InputKind, Provenance};

    use super::*;

    #[test]
    fn the_model_s_words_are_quoted_and_untrusted_inputs_marked() {
        let mut view = crate::render::tests::view(None, Some("new\n".to_owned()));
        view.provenance = Provenance {
            model_text: Some("Rewriting\nthe notes.".to_owned()),
            inputs: vec![
                Input {
                    kind: InputKind::Webhook,
                    source: "github\u{202e}".to_owned(),
                    untrusted: true,
                },
                Input {
                    kind: InputKind::Prompt,
                    source: "operator".to_owned(),
                    untrusted: false,
                },
            ],
            more: 2,
            untrusted_input: true,
        };
        let lines = provenance_lines(&view, Palette::OFF);
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], "│ model said: “Rewriting the notes.”");
        assert!(
            lines[1].starts_with("│ follows:    UNTRUSTED input: webhook `github"),
            "{lines:?}"
        );
        assert!(!lines[1].contains('\u{202e}') && lines[1].ends_with(", 2 more"));
        assert!(
            !lines[1].contains("your prompt"),
            "trusted inputs are not listed"
        );

        view.provenance = Provenance::default();
        assert_eq!(provenance_lines(&view, Palette::OFF), "");
    }
}
