//! The key webhook channel secrets are sealed with, and the check every `serve` and
//! `channels` command makes at start (docs/webhooks.md, docs/team.md).
//!
//! Single-machine mode: `channels.key` in the data directory, created on first use.
//! Team mode: the team key, from the variable `[team] key_env` names or the 0600 file
//! `[team] key_file`, the same on every machine; never a data directory's key. Without
//! it `serve` and `channels` refuse (exit 2). A channel sealed with this data
//! directory's `channels.key` (made before the team key) is re-sealed with the team key
//! once; one that opens with neither is listed with "run `channels rotate NAME`"; a team
//! key that opens none of the stored channels is refused as the wrong key.

use pp_channels::{ChannelKey, ChannelSettings, ChannelsService, KeyCheck};
use pp_store::Store;
use pp_tasks::TaskService;

use crate::config::{Config, TeamKeySource};
use crate::output::errln;
use crate::{Exit, env, home};

/// Where "how to set the team key" is explained.
const SEE: &str = "docs/team.md, \"The team key\"";

/// The key to seal with, and (team mode) this data directory's older `channels.key`,
/// if it has one, to re-seal what was sealed with it.
pub(crate) struct ChannelKeys {
    key: [u8; 32],
    older: Option<[u8; 32]>,
    /// Team mode: the start check runs (single-machine mode stays as it was: none).
    team: bool,
}

impl std::fmt::Debug for ChannelKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelKeys(..)")
    }
}

/// The channel keys of `config`: in team mode the team key (refused, exit 2, when it is
/// not configured, not set, not private or not a key), otherwise `channels.key` in the
/// data directory (created on first use).
pub(crate) fn load(config: &Config) -> anyhow::Result<ChannelKeys> {
    if !config.team {
        return Ok(ChannelKeys {
            key: home::load_or_create_channel_key(&config.channel_key_file())?,
            older: None,
            team: false,
        });
    }
    let key = match &config.team_key {
        None => {
            return Err(Exit::usage(format!(
                "team mode: webhook channel secrets are sealed with the team key, the same on \
                 every machine of the team, and none is configured; set `[team] key_file = \
                 \"/etc/pocketpilot/team.key\"` (64 hex characters, mode 0600) or `[team] \
                 key_env = \"POCKETPILOT_TEAM_KEY\"` ({SEE})"
            ))
            .into());
        }
        Some(TeamKeySource::Env(name)) => {
            let value = env::var(name).ok_or_else(|| {
                Exit::usage(format!(
                    "team mode: the team key variable {name} (`[team] key_env`) is not set in \
                     this process's environment ({SEE})"
                ))
            })?;
            home::parse_team_key(&value, &format!("the variable {name} (`[team] key_env`)"))?
        }
        Some(TeamKeySource::File(file)) => home::read_team_key_file(file)?,
    };
    Ok(ChannelKeys {
        key,
        // Only to re-seal what it opens: a key file that cannot be used is no reason to
        // refuse the team key.
        older: home::read_channel_key(&config.channel_key_file()).unwrap_or_else(|error| {
            errln!("warning: {error:#}; channels sealed with it are not re-sealed");
            None
        }),
        team: true,
    })
}

/// What a command does with channels the key does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unopenable {
    /// Refuse when the key opens none of the stored channels (`serve`, most `channels`).
    RefuseIfNoneOpen,
    /// Only list them (`channels rotate`, `remove`, `list`: the way out).
    List,
}

/// The channels service over `tasks` and `store` with `keys`, after the start check
/// (team mode): re-seals what the older key opens, lists on stderr what opens with
/// neither key, and refuses (exit 2) when `unopenable` says so and the key opens none of
/// the channels.
pub(crate) async fn open_checked(
    tasks: TaskService,
    store: Store,
    keys: &ChannelKeys,
    unopenable: Unopenable,
) -> anyhow::Result<ChannelsService> {
    let channels = ChannelsService::new(
        tasks,
        store,
        ChannelKey::from_bytes(&keys.key),
        ChannelSettings::default(),
    );
    if !keys.team {
        return Ok(channels);
    }
    let older = keys.older.as_ref().map(ChannelKey::from_bytes);
    let check = channels.check_key(older.as_ref()).await?;
    report(&check, unopenable)?;
    Ok(channels)
}

fn report(check: &KeyCheck, unopenable: Unopenable) -> anyhow::Result<()> {
    for name in &check.resealed {
        errln!(
            "channel {name}: its secret was sealed with this data directory's channels.key; \
             re-sealed with the team key (the secret itself is unchanged)"
        );
    }
    if check.opens_none() && unopenable == Unopenable::RefuseIfNoneOpen {
        return Err(Exit::usage(format!(
            "the channel key opens none of the stored channels ({}): is it the team's key? \
             A channel sealed with a data directory's channels.key is re-sealed by the first \
             `serve` or `channels` command of that data directory; otherwise run `pocketpilot \
             channels rotate NAME` for each ({SEE})",
            check.unopenable.join(", ")
        ))
        .into());
    }
    for name in &check.unopenable {
        errln!(
            "warning: channel {name}: its secret does not open with this key, so its \
             deliveries are refused and logged; run `pocketpilot channels rotate {name}` \
             (or the first `serve` or `channels` command of the data directory that created \
             it re-seals it)"
        );
    }
    Ok(())
}
