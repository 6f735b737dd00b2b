//! `pocketpilot token [show|rotate]`: the API token in the data directory.

use clap::Subcommand;

use crate::config::{Config, Flags};
use crate::{exit, home};

/// What to do with the token.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Replace the token; running servers must be restarted, open consoles log in again.
    Rotate,
    /// Print the token file's path (never the token itself).
    Path,
}

/// Runs a `token` subcommand.
pub(crate) fn run(flags: &Flags, command: &TokenCommand) -> anyhow::Result<u8> {
    let config = Config::load(flags)?;
    home::ensure(&config.home)?;
    let file = config.token_file();
    match command {
        TokenCommand::Rotate => {
            home::write_token(&file)?;
            println!("a new token was written to {}", file.display());
            println!("restart `pocketpilot serve` and open the login link it prints");
        }
        TokenCommand::Path => println!("{}", file.display()),
    }
    Ok(exit::OK)
}
