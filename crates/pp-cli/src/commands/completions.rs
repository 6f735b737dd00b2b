//! `pocketpilot completions bash|zsh|fish`: generated from the same clap definitions as
//! the command line itself, so they never drift (as the man pages, `man.rs`).

use clap::CommandFactory as _;

use crate::exit;
use crate::output::outln;

/// The shells completions are generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Shell {
    /// Bash: `source <(pocketpilot completions bash)`.
    Bash,
    /// Zsh: write to a directory on `$fpath` as `_pocketpilot`.
    Zsh,
    /// Fish: write to `~/.config/fish/completions/pocketpilot.fish`.
    Fish,
}

/// Prints the completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> anyhow::Result<u8> {
    let mut command = crate::Cli::command();
    let mut script = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut command, "pocketpilot", &mut script);
    write_all(&script)
}

fn write_all(bytes: &[u8]) -> anyhow::Result<u8> {
    let text = String::from_utf8_lossy(bytes);
    outln!("{}", text.trim_end_matches('\n'))?;
    Ok(exit::OK)
}
