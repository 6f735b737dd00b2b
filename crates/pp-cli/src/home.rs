//! The data directory: created private, holding the database and the API token.
#![expect(
    clippy::disallowed_methods,
    reason = "the data directory and its token file are the operator's, never a workspace path"
)]

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::Exit;
use crate::output::errln;

/// Creates the data directory (mode 0700 on Unix) if it does not exist. One that other
/// users may write to is refused (they could plant a token or a database); one they may
/// only read or enter is tightened to 0700 with a notice, since the database holds file
/// contents from checkpoints.
pub(crate) fn ensure(home: &Path) -> anyhow::Result<()> {
    if !home.is_dir() {
        std::fs::create_dir_all(home)
            .with_context(|| format!("cannot create data directory {}", home.display()))?;
        restrict(home, 0o700)?;
    }
    match assess_mode(mode_of(home)) {
        DirMode::Private => Ok(()),
        DirMode::WritableByOthers(mode) => Err(Exit::usage(format!(
            "data directory {} is writable by other users (mode {mode:o}); run `chmod 700 {}`",
            home.display(),
            home.display()
        ))
        .into()),
        DirMode::ReadableByOthers(mode) => {
            restrict(home, 0o700)
                .map_err(|error| Exit::usage(cannot_tighten(home, mode, &error)))?;
            errln!("{}", tightened_notice(home, mode));
            Ok(())
        }
    }
}

/// The notice `ensure` prints after tightening a data directory others could read.
fn tightened_notice(home: &Path, mode: u32) -> String {
    format!(
        "notice: data directory {} was readable by other users (mode {mode:o}); \
         tightened it to 700 (the database holds file contents)",
        home.display()
    )
}

/// The refusal when a data directory others can read cannot be tightened.
fn cannot_tighten(home: &Path, mode: u32, error: &anyhow::Error) -> String {
    format!(
        "data directory {} is readable by other users (mode {mode:o}) and cannot be \
         tightened ({error:#}); run `chmod 700 {}`",
        home.display(),
        home.display()
    )
}

/// Creates `skills/` in the data directory (the operator's skills) if it is missing.
pub(crate) fn ensure_skills(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the skills folder {}", dir.display()))
}

/// What the data directory's permission bits allow other users.
#[derive(Debug, PartialEq, Eq)]
enum DirMode {
    /// Only the owner (or no permission bits on this platform).
    Private,
    /// Group or others may create or replace files in it: refused.
    WritableByOthers(u32),
    /// Group or others may list or enter it: tightened to 0700.
    ReadableByOthers(u32),
}

fn assess_mode(mode: Option<u32>) -> DirMode {
    match mode {
        Some(mode) if mode & 0o022 != 0 => DirMode::WritableByOthers(mode),
        Some(mode) if mode & 0o077 != 0 => DirMode::ReadableByOthers(mode),
        _ => DirMode::Private,
    }
}

/// Shortest token accepted from the token file (hex characters).
const MIN_TOKEN_LEN: usize = 32;

/// Reads the API token, creating one (mode 0600) at first start. A token file that other
/// users can read, or a short token, is refused: rotate it.
pub(crate) fn load_or_create_token(file: &Path) -> anyhow::Result<String> {
    let token = match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => text.trim().to_owned(),
        Ok(_) => return write_token(file),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return write_token(file),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", file.display()));
        }
    };
    if let Some(mode) = mode_of(file)
        && mode & 0o077 != 0
    {
        return Err(Exit::usage(format!(
            "the token file {} is readable by other users (mode {mode:o}); run \
             `pocketpilot token rotate`",
            file.display()
        ))
        .into());
    }
    if token.len() < MIN_TOKEN_LEN {
        return Err(Exit::usage(format!(
            "the token in {} is too short to be safe; run `pocketpilot token rotate`",
            file.display()
        ))
        .into());
    }
    Ok(token)
}

/// The current token, if the file exists and holds one.
pub(crate) fn read_token(file: &Path) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|token| !token.is_empty())
}

/// Replaces the token with a new random one and returns it.
pub(crate) fn write_token(file: &Path) -> anyhow::Result<String> {
    let token = random_hex(32)?;
    let temp = file.with_extension("tmp");
    // Never write through whatever sits at the temp name (a planted link): remove it and
    // create the file exclusively.
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot remove {}", temp.display()));
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut handle = options
        .open(&temp)
        .with_context(|| format!("cannot write {}", temp.display()))?;
    writeln!(handle, "{token}")?;
    handle.sync_all()?;
    restrict(&temp, 0o600)?;
    std::fs::rename(&temp, file).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(token)
}

/// The key webhook channel secrets are sealed with: 32 random bytes as hex in `file`
/// (`channels.key` in the data directory, mode 0600), created on first use. Two
/// processes creating it at once agree on one: the file appears whole through a hard
/// link, which fails if the other process linked first (then its key is read).
pub(crate) fn load_or_create_channel_key(file: &Path) -> anyhow::Result<[u8; 32]> {
    for _ in 0..2 {
        if let Some(key) = read_channel_key(file)? {
            return Ok(key);
        }
        let temp = file.with_extension(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut handle = options
            .open(&temp)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        writeln!(handle, "{}", random_hex(32)?)?;
        handle.sync_all()?;
        drop(handle);
        restrict(&temp, 0o600)?;
        let linked = std::fs::hard_link(&temp, file);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot write {}", file.display()));
            }
        }
    }
    anyhow::bail!("cannot create the channel key {}", file.display())
}

/// The channel key in `file` (see [`load_or_create_channel_key`]), `None` when there is
/// no such file; refused when other users may read it or it is not a key.
pub(crate) fn read_channel_key(file: &Path) -> anyhow::Result<Option<[u8; 32]>> {
    match std::fs::read_to_string(file) {
        Ok(text) => {
            if let Some(mode) = mode_of(file)
                && mode & 0o077 != 0
            {
                return Err(Exit::usage(format!(
                    "the channel key {} is readable by other users (mode {mode:o}); run \
                     `chmod 600 {}`",
                    file.display(),
                    file.display()
                ))
                .into());
            }
            parse_key(text.trim()).map(Some).with_context(|| {
                format!(
                    "{} is not a channel key (64 hex characters); if it was damaged, \
                     every channel needs `pocketpilot channels rotate`",
                    file.display()
                )
            })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// The team key in `file` (`[team] key_file`): 64 hex characters. Refused (usage error)
/// when the file is missing, other users may read it (the mode of the file opened, not
/// of whatever the name points at later), or it holds no key.
pub(crate) fn read_team_key_file(file: &Path) -> anyhow::Result<[u8; 32]> {
    use std::io::Read as _;
    let cannot = |error: std::io::Error| {
        Exit::usage(format!(
            "cannot read the team key file {} (`[team] key_file`): {error}; see \
             docs/team.md, \"The team key\"",
            file.display()
        ))
    };
    let mut handle = std::fs::File::open(file).map_err(cannot)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = handle.metadata().map_err(cannot)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Exit::usage(format!(
                "the team key file {} may be read by other users (mode {mode:o}); run \
                 `chmod 600 {}`",
                file.display(),
                file.display()
            ))
            .into());
        }
    }
    let mut text = String::new();
    handle.read_to_string(&mut text).map_err(cannot)?;
    parse_team_key(&text, &format!("the team key file {}", file.display()))
}

/// `text` as a team key (64 hex characters), or a usage error naming `source`.
pub(crate) fn parse_team_key(text: &str, source: &str) -> anyhow::Result<[u8; 32]> {
    parse_key(text.trim()).map_err(|_| {
        Exit::usage(format!(
            "{source} does not hold a team key: it must be 64 hex characters (make one with \
             `head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \\n'`; docs/team.md)"
        ))
        .into()
    })
}

/// 64 hex characters as 32 bytes.
fn parse_key(text: &str) -> anyhow::Result<[u8; 32]> {
    let mut key = [0_u8; 32];
    anyhow::ensure!(text.len() == 64 && text.is_ascii(), "wrong length");
    for (index, byte) in key.iter_mut().enumerate() {
        let pair = text.get(index * 2..index * 2 + 2).unwrap_or_default();
        *byte = u8::from_str_radix(pair, 16)?;
    }
    Ok(key)
}

/// `len` random bytes as lowercase hex.
pub(crate) fn random_hex(len: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("no randomness: {error}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Permission bits of `path` (Unix), or `None`.
fn mode_of(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path)
            .ok()
            .map(|meta| meta.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot restrict permissions of {}", path.display()))
}

#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_key_is_created_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("channels.key");
        let key = load_or_create_channel_key(&file).unwrap();
        assert_eq!(load_or_create_channel_key(&file).unwrap(), key);
        #[cfg(unix)]
        assert_eq!(mode_of(&file), Some(0o600));
        std::fs::write(&file, "short\n").unwrap();
        assert!(load_or_create_channel_key(&file).is_err());
    }

    #[test]
    fn the_data_directory_messages_have_no_runs_of_spaces() {
        let home = Path::new("/srv/pp");
        let error = anyhow::anyhow!("permission denied");
        for message in [
            tightened_notice(home, 0o755),
            cannot_tighten(home, 0o755, &error),
        ] {
            assert!(!message.contains("  "), "a run of spaces: {message:?}");
            assert!(message.contains("(mode 755)"), "{message}");
        }
        assert_eq!(
            tightened_notice(home, 0o755),
            "notice: data directory /srv/pp was readable by other users (mode 755); \
             tightened it to 700 (the database holds file contents)"
        );
    }

    #[test]
    fn writable_dirs_are_refused_and_readable_ones_tightened() {
        assert_eq!(assess_mode(Some(0o700)), DirMode::Private);
        assert_eq!(assess_mode(None), DirMode::Private);
        assert_eq!(assess_mode(Some(0o755)), DirMode::ReadableByOthers(0o755));
        assert_eq!(assess_mode(Some(0o710)), DirMode::ReadableByOthers(0o710));
        assert_eq!(assess_mode(Some(0o770)), DirMode::WritableByOthers(0o770));
        assert_eq!(assess_mode(Some(0o702)), DirMode::WritableByOthers(0o702));
    }
}
