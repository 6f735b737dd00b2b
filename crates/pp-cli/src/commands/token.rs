//! `pocketpilot token [show|rotate]`: the API token in the data directory.

use clap::Subcommand;

use crate::config::{Config, Flags};
use crate::output::outln;
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
pub(crate) async fn run(flags: &Flags, command: &TokenCommand) -> anyhow::Result<u8> {
    let config = Config::load(flags)?;
    home::ensure(&config.home)?;
    let file = config.token_file();
    match command {
        TokenCommand::Rotate => {
            home::write_token(&file)?;
            outln!("a new token was written to {}", file.display())?;
            let app = crate::app::App::stored(flags).await?;
            let ended = app.users().end_all_logins().await?;
            outln!("{ended} console session(s) ended: log in again with the new link")?;
            outln!(
                "a running `pocketpilot serve` picks it up within seconds; API clients need \
                 the new token"
            )?;
        }
        TokenCommand::Path => outln!("{}", file.display())?,
    }
    Ok(exit::OK)
}
