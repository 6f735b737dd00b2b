//! `pocketpilot man [--dir DIR]`: the man pages, generated from the same clap definitions
//! as the command line (clap_mangen), one for the program and one for every subcommand
//! (`pocketpilot-run(1)`, `pocketpilot-approvals-approve(1)`, …), each with EXIT STATUS
//! (from [`crate::exit::MEANINGS`]) and ENVIRONMENT (from [`crate::env::VARIABLES`]);
//! `run`, `chat` and `demo` also with KEYS. Without `--dir` the program's page goes to
//! stdout; with it every page is written to DIR as `NAME.1`.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory as _;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use crate::exit;
use crate::output::{errln, outln};

/// The man section every page is in.
const SECTION: &str = "1";

/// The keys at an approval card (`run`, `chat`, `demo`): the same words as
/// docs/terminal.md's table.
const CARD_KEYS: &[(&str, &str)] = &[
    ("a", "approve: run this one call as shown"),
    (
        "r",
        "reject; then type an optional reason and Enter (Esc goes back to the question)",
    ),
    (
        "e",
        "edit the call in $VISUAL or $EDITOR (run through the shell; a TOML header holds the \
         arguments that are not text); the edited call is checked by the gate again and its \
         change shown and asked about before anything runs",
    ),
    (
        "d",
        "the whole card, every line of the change and the full arguments, in $PAGER",
    ),
    (
        "space",
        "the next page of a change that does not fit the window (the decision keys are live \
         once every changed line has been shown)",
    ),
    (
        "n",
        "in a changeset (several calls of one model turn): leave this call for later",
    ),
    (
        "A",
        "in a changeset: approve every call not decided yet, once each has been shown whole",
    ),
    ("?", "help"),
    (
        "Ctrl+C",
        "at a card: stop here, nothing runs, the approval stays pending, exit status 130; \
         while the model or a tool works: cancel the task (exit status 130)",
    ),
];

/// The keys of `chat`'s prompt (docs/terminal.md, "The line editor").
const PROMPT_KEYS: &[(&str, &str)] = &[
    (
        "Left, Right, Home, End",
        "move in the line; what is typed is inserted at the cursor",
    ),
    ("Up, Down", "earlier messages, also those of earlier chats"),
    ("Ctrl+R", "search the earlier messages"),
    (
        "\\ at the end of a line, or Alt+Enter",
        "continue the message on a new line",
    ),
    ("Enter", "send"),
    (
        "Ctrl+D (empty line), Ctrl+C",
        "leave the chat; during a turn Ctrl+C cancels that turn only",
    ),
];

/// One man page: its name (`pocketpilot-approvals-approve`) and its roff text.
pub(crate) struct Page {
    pub(crate) name: String,
    pub(crate) roff: String,
}

impl Page {
    /// The page's file name, `NAME.1`.
    pub(crate) fn file_name(&self) -> String {
        format!("{}.{SECTION}", self.name)
    }
}

/// `pocketpilot man [--dir DIR]`.
#[expect(
    clippy::disallowed_methods,
    reason = "DIR is the person's own command-line argument, never a model-supplied path"
)]
pub(crate) fn run(dir: Option<&Path>) -> anyhow::Result<u8> {
    let pages = pages()?;
    let Some(dir) = dir else {
        let top = pages.first().context("no man page was generated")?;
        outln!("{}", top.roff.trim_end_matches('\n'))?;
        return Ok(exit::OK);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for page in &pages {
        let path = dir.join(page.file_name());
        std::fs::write(&path, &page.roff)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    errln!("wrote {} man pages to {}", pages.len(), dir.display());
    Ok(exit::OK)
}

/// The command tree the pages describe: the command line's, without clap's `help`
/// subcommands, built (so every subcommand has its display name, `pocketpilot-run`).
pub(crate) fn command() -> clap::Command {
    let mut command = without_help(crate::Cli::command());
    command.build();
    command
}

fn without_help(command: clap::Command) -> clap::Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    let mut command = command.disable_help_subcommand(true);
    for name in names {
        command = command.mut_subcommand(name, without_help);
    }
    command
}

/// The name of `command`'s page.
pub(crate) fn page_name(command: &clap::Command) -> String {
    command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
        .to_owned()
}

/// The commands that get a page: `command` and every subcommand that is not hidden,
/// parents before their children.
pub(crate) fn documented(command: &clap::Command) -> Vec<&clap::Command> {
    let mut all = vec![command];
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        all.extend(documented(sub));
    }
    all
}

/// Every page, the program's first.
pub(crate) fn pages() -> anyhow::Result<Vec<Page>> {
    let root = command();
    let commands = documented(&root);
    let names: BTreeSet<String> = commands.iter().map(|command| page_name(command)).collect();
    commands
        .into_iter()
        .map(|command| render(command, &names))
        .collect()
}

/// One page: clap_mangen's sections, then ours.
fn render(command: &clap::Command, names: &BTreeSet<String>) -> anyhow::Result<Page> {
    let name = page_name(command);
    let man = Man::new(command.clone())
        .title(name.to_uppercase())
        .section(SECTION)
        .source(format!("pocketpilot {}", env!("CARGO_PKG_VERSION")))
        .manual("PocketPilot Manual");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    match name.as_str() {
        "pocketpilot-run" | "pocketpilot-demo" => keys(&mut roff, None),
        "pocketpilot-chat" => keys(&mut roff, Some(PROMPT_KEYS)),
        _ => {}
    }
    exit_status(&mut roff);
    environment(&mut roff);
    see_also(&mut roff, &name, names);
    roff.to_writer(&mut out)?;
    if command.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    Ok(Page {
        name,
        roff: String::from_utf8(out).context("a man page is not UTF-8")?,
    })
}

/// A tagged paragraph per entry.
fn entries(roff: &mut Roff, entries: &[(&str, &str)]) {
    for (tag, text) in entries {
        roff.control("TP", []);
        roff.text([bold(*tag)]);
        roff.text([roman(*text)]);
    }
}

fn keys(roff: &mut Roff, prompt: Option<&[(&str, &str)]>) {
    roff.control("SH", ["KEYS"]);
    roff.text([roman(
        "At an approval card one key answers (no Enter); keys typed before the question \
         appears are discarded.",
    )]);
    entries(roff, CARD_KEYS);
    if let Some(prompt) = prompt {
        roff.control("PP", []);
        roff.text([roman(
            "In a chat, Ctrl+C at a card (or while the model or a tool works) cancels that \
             turn only: nothing of it runs, and the prompt comes back.",
        )]);
        roff.control("PP", []);
        roff.text([roman(
            "At the prompt (a line editor; the history is chat_history in the data \
             directory, mode 0600):",
        )]);
        entries(roff, prompt);
    }
}

fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit::MEANINGS {
        roff.control("TP", []);
        roff.text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
}

fn environment(roff: &mut Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    entries(roff, crate::env::VARIABLES);
}

/// The program's page and the parent's (the children are in SUBCOMMANDS), for the
/// program the main commands', and for the commands that show approval cards,
/// `approvals`', `tasks`' and `sessions`'; only pages that are written.
fn see_also(roff: &mut Roff, name: &str, names: &BTreeSet<String>) {
    let mut refs: Vec<String> = Vec::new();
    let mut push = |page: String| {
        if page != name && names.contains(&page) && !refs.contains(&page) {
            refs.push(page);
        }
    };
    // Every ancestor: `pocketpilot`, `pocketpilot-approvals`, …
    let mut end = 0;
    while let Some(dash) = name[end..].find('-') {
        end += dash;
        push(name[..end].to_owned());
        end += 1;
    }
    match name {
        "pocketpilot" => {
            for page in ["run", "chat", "approvals", "serve", "tasks"] {
                push(format!("pocketpilot-{page}"));
            }
        }
        "pocketpilot-run" | "pocketpilot-chat" | "pocketpilot-demo" => {
            push("pocketpilot-approvals".to_owned());
            push("pocketpilot-tasks".to_owned());
            push("pocketpilot-sessions".to_owned());
        }
        _ => {}
    }
    if refs.is_empty() {
        return;
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut inlines = Vec::new();
    for (index, page) in refs.iter().enumerate() {
        if index > 0 {
            inlines.push(roman(", "));
        }
        inlines.push(bold(page.as_str()));
        inlines.push(roman(format!("({SECTION})")));
    }
    roff.text(inlines);
    roff.control("PP", []);
    roff.text([
        roman("The guides: "),
        italic("docs/terminal.md"),
        roman(" and the README in the source tree."),
    ]);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::disallowed_methods, reason = "tests")]

    use super::*;

    #[test]
    fn every_exit_code_is_in_the_readme_and_every_constant_in_the_table() {
        let readme = include_str!("../../../../README.md");
        for (code, _) in exit::MEANINGS {
            assert!(
                readme.contains(&format!("`{code}`")),
                "README lacks `{code}`"
            );
        }
        let codes: Vec<u8> = exit::MEANINGS.iter().map(|(code, _)| *code).collect();
        for constant in [
            exit::OK,
            exit::FAILED,
            exit::USAGE,
            exit::WAITING_APPROVAL,
            exit::NO_MODEL,
            exit::CONFLICT,
            exit::FORBIDDEN,
            exit::INTERRUPTED,
        ] {
            assert!(
                codes.contains(&constant),
                "{constant} is not in exit::MEANINGS"
            );
        }
    }

    #[test]
    fn every_variable_env_rs_reads_is_in_the_table() {
        let source = include_str!("../env.rs");
        let listed: Vec<&str> = crate::env::VARIABLES
            .iter()
            .flat_map(|(names, _)| names.split(", "))
            .collect();
        // Every quoted upper-case name in env.rs's code (a variable it reads).
        let code = &source[source.find("#![expect").unwrap()..];
        let mut read = Vec::new();
        for piece in code.split('"').skip(1).step_by(2) {
            if piece.len() > 1 && piece.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                read.push(piece);
            }
        }
        assert!(read.contains(&"PAGER"), "{read:?}");
        for name in read.into_iter().chain(pp_model::key_variables()) {
            assert!(listed.contains(&name), "{name} is not in env::VARIABLES");
        }
    }

    /// `pocketpilot-approvals-approve` for `approvals approve`: clap's own tree, walked
    /// here (not with [`documented`]), without hidden commands and `help`.
    fn walk(command: &clap::Command, prefix: &str, names: &mut Vec<String>) {
        let name = if prefix.is_empty() {
            command.get_name().to_owned()
        } else {
            format!("{prefix}-{}", command.get_name())
        };
        for sub in command.get_subcommands() {
            if !sub.is_hide_set() && sub.get_name() != "help" {
                walk(sub, &name, names);
            }
        }
        names.push(name);
    }

    /// The `NAME(1)` references in a page, unescaped (`pocketpilot\-run(1)`,
    /// `\fBpocketpilot-run\fR(1)`).
    fn references(roff: &str) -> Vec<String> {
        let text = roff
            .replace("\\fB", " ")
            .replace("\\fR", "")
            .replace("\\-", "-");
        text.split(|c: char| c.is_whitespace() || c == ',')
            .filter_map(|word| word.strip_suffix("(1)"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn man_dir_writes_a_page_for_every_subcommand_and_every_reference_exists() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("man1");
        assert_eq!(run(Some(&out)).unwrap(), exit::OK);
        let mut names = Vec::new();
        walk(&crate::Cli::command(), "", &mut names);
        assert!(names.contains(&"pocketpilot-approvals-approve".to_owned()));
        assert!(names.contains(&"pocketpilot-run".to_owned()));
        let written: BTreeSet<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        let expected: BTreeSet<String> = names.iter().map(|name| format!("{name}.1")).collect();
        assert_eq!(written, expected, "one file per page, none else");
        let mut referenced = 0;
        for name in &names {
            let roff = std::fs::read_to_string(out.join(format!("{name}.1"))).unwrap();
            assert!(
                roff.contains(&format!(".TH {} 1 ", name.to_uppercase())),
                "{name}"
            );
            assert!(roff.contains(".SH \"EXIT STATUS\""), "{name}");
            assert!(roff.contains(".SH ENVIRONMENT"), "{name}");
            assert!(roff.contains(".SH \"SEE ALSO\""), "{name}");
            for reference in references(&roff) {
                assert!(
                    written.contains(&format!("{reference}.1")),
                    "{name} names {reference}(1), which was not written"
                );
                referenced += 1;
            }
        }
        assert!(referenced > names.len(), "the references were found");
    }

    #[test]
    fn the_run_and_chat_pages_have_keys_and_every_page_exit_status_and_environment() {
        let pages = pages().unwrap();
        assert_eq!(pages[0].name, "pocketpilot");
        for page in &pages {
            assert!(page.roff.contains(".SH \"EXIT STATUS\""), "{}", page.name);
            assert!(page.roff.contains(".SH ENVIRONMENT"), "{}", page.name);
            let has_keys = page.roff.contains(".SH KEYS");
            let wants_keys = matches!(
                page.name.as_str(),
                "pocketpilot-run" | "pocketpilot-chat" | "pocketpilot-demo"
            );
            assert_eq!(has_keys, wants_keys, "{}", page.name);
        }
        let chat = pages
            .iter()
            .find(|page| page.name == "pocketpilot-chat")
            .unwrap();
        assert!(chat.roff.contains("Ctrl+R"), "{}", chat.roff);
    }
}
