//! `pocketpilot token [show|rotate]`: the API token in the data directory.

use clap::Subcommand;

use crate::config::{Config, Flags};
use crate::{exit, home};

/// What to do with the token.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Replace the token; a running server picks it up within seconds.
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
            println!(
                "a running `pocketpilot serve` picks it up within seconds: API clients need the \
                 new token and new console logins the new link"
            );
        }
        TokenCommand::Path => println!("{}", file.display()),
    }
    Ok(exit::OK)
}
