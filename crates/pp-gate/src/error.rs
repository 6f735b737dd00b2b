//! Errors of the workspace jail.
//!
//! Every variant carries the path exactly as the model (or operator) wrote it. Messages
//! name the rule that fired and never contain a resolved location outside the workspace.

use std::io;
use std::path::PathBuf;

use pp_types::{Denial, DenyRule};

/// Result type of the jail.
pub type Result<T> = std::result::Result<T, JailError>;

/// Why the jail refused or could not complete an operation.
#[derive(Debug, thiserror::Error)]
pub enum JailError {
    /// The path is absolute (`/etc/passwd`).
    #[error("absolute path {path:?} is not allowed; paths are relative to the workspace")]
    AbsolutePath {
        /// The path as written.
        path: String,
    },
    /// The path's `..` components climb above the workspace root.
    #[error("path {path:?} escapes the workspace")]
    Escapes {
        /// The path as written.
        path: String,
    },
    /// A symbolic link (directly or through a chain) leads outside the workspace.
    #[error("path {path:?} leads outside the workspace through a symbolic link")]
    SymlinkEscape {
        /// The path as written.
        path: String,
    },
    /// A NUL byte, a backslash or a drive prefix, refused on every platform.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as written.
        path: String,
        /// Which lexical rule fired: `contains a NUL byte`, `contains a backslash`,
        /// `has a drive prefix`, `has a name longer than 255 bytes`, `is longer than 4096
        /// bytes`, or `has a name the filesystem refuses`.
        reason: &'static str,
    },
    /// Nothing exists at the path.
    #[error("no such file or directory: {path:?}")]
    NotFound {
        /// The path as written.
        path: String,
    },
    /// The path names something other than a regular file (a directory, the root, a
    /// socket, …) where a file is needed.
    #[error("{path:?} is not a regular file")]
    NotAFile {
        /// The path as written.
        path: String,
    },
    /// The path (or one of its parents) is not a directory where one is needed.
    #[error("{path:?} is not a directory")]
    NotADirectory {
        /// The path as written.
        path: String,
    },
    /// Something already exists where a move or a new folder would put it (a move
    /// without `overwrite`, or onto a folder, which is never replaced).
    #[error("{path:?} already exists")]
    AlreadyExists {
        /// The path as written.
        path: String,
    },
    /// A folder to delete is not empty (only empty folders are deleted).
    #[error("folder {path:?} is not empty")]
    NotEmpty {
        /// The path as written.
        path: String,
    },
    /// A symbolic link loop, or more than [`crate::MAX_SYMLINK_HOPS`] links in a row.
    #[error("too many levels of symbolic links in {path:?}")]
    TooManyLinks {
        /// The path as written.
        path: String,
    },
    /// A cancellable write was called off (its `abort` check said so) before the file was
    /// replaced; the target is untouched. Not a denial.
    #[error("write to {path:?} was aborted before the file was replaced")]
    Aborted {
        /// The path as written.
        path: String,
    },
    /// More than `max_bytes` bytes arrived for a streamed write; the target is untouched.
    #[error("content for {path:?} is larger than the limit of {max_bytes} bytes")]
    TooLarge {
        /// The path as written.
        path: String,
        /// The limit that was exceeded.
        max_bytes: u64,
    },
    /// The workspace root does not exist, is not a directory or cannot be opened.
    #[error("workspace root {root:?} is not an existing directory")]
    RootInvalid {
        /// The root as given to [`crate::Jail::new`].
        root: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Any other I/O failure (permission denied, disk full, …).
    #[error("i/o error on {path:?}: {}", source.kind())]
    Io {
        /// The path as written.
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl JailError {
    /// The policy denial this error stands for, if it is a rule violation.
    ///
    /// `Some` for absolute paths, escapes, symlink escapes, invalid paths and link loops
    /// (reported as [`DenyRule::SymlinkEscape`]); `None` for ordinary failures such as
    /// a missing file or an I/O error, which the tool reports as a tool error.
    pub fn denial(&self) -> Option<Denial> {
        let rule = match self {
            Self::AbsolutePath { .. } => DenyRule::AbsolutePath,
            Self::Escapes { .. } => DenyRule::Escapes,
            Self::SymlinkEscape { .. } | Self::TooManyLinks { .. } => DenyRule::SymlinkEscape,
            Self::InvalidPath { .. } => DenyRule::InvalidPath,
            Self::NotFound { .. }
            | Self::NotAFile { .. }
            | Self::NotADirectory { .. }
            | Self::AlreadyExists { .. }
            | Self::NotEmpty { .. }
            | Self::Aborted { .. }
            | Self::TooLarge { .. }
            | Self::RootInvalid { .. }
            | Self::Io { .. } => return None,
        };
        Some(Denial::new(rule, self.to_string()))
    }

    /// Maps an I/O error from a cap-std operation on `path` to a jail error.
    ///
    /// cap-std reports an attempt to leave the root (a symlink swapped in, an absolute
    /// link target) as `PermissionDenied` with no OS error code; that becomes
    /// [`JailError::SymlinkEscape`].
    pub(crate) fn from_io(path: &str, source: io::Error) -> Self {
        let path = path.to_owned();
        if is_escape_attempt(&source) {
            return Self::SymlinkEscape { path };
        }
        if is_loop(&source) {
            return Self::TooManyLinks { path };
        }
        match source.kind() {
            io::ErrorKind::NotFound => Self::NotFound { path },
            io::ErrorKind::NotADirectory => Self::NotADirectory { path },
            io::ErrorKind::IsADirectory => Self::NotAFile { path },
            io::ErrorKind::AlreadyExists => Self::AlreadyExists { path },
            io::ErrorKind::DirectoryNotEmpty => Self::NotEmpty { path },
            io::ErrorKind::InvalidFilename => Self::InvalidPath {
                path,
                reason: "has a name the filesystem refuses",
            },
            _ => Self::Io { path, source },
        }
    }
}

/// Whether `error` is cap-std's "a path led outside of the filesystem".
///
/// cap-primitives builds it with `io::Error::new(PermissionDenied, ..)` (also for
/// `openat2`'s `EXDEV` under `RESOLVE_BENEATH`), so it has no raw OS code, unlike a real
/// `EACCES`.
pub(crate) fn is_escape_attempt(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none()
}

/// Whether `error` is `ELOOP` (too many symbolic links).
fn is_loop(error: &io::Error) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const ELOOP: Option<i32> = Some(40);
    #[cfg(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    ))]
    const ELOOP: Option<i32> = Some(62);
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    )))]
    const ELOOP: Option<i32> = None;
    ELOOP.is_some() && error.raw_os_error() == ELOOP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lowercase_without_trailing_period() {
        let errors = [
            JailError::AbsolutePath {
                path: "/etc/passwd".into(),
            },
            JailError::Escapes {
                path: "../x".into(),
            },
            JailError::SymlinkEscape {
                path: "link/x".into(),
            },
            JailError::InvalidPath {
                path: "a\\b".into(),
                reason: "contains a backslash",
            },
            JailError::NotFound {
                path: "nope".into(),
            },
            JailError::NotAFile { path: "dir".into() },
            JailError::NotADirectory { path: "f/x".into() },
            JailError::TooManyLinks {
                path: "loop".into(),
            },
            JailError::Aborted { path: "x".into() },
            JailError::AlreadyExists { path: "x".into() },
            JailError::NotEmpty { path: "d".into() },
            JailError::TooLarge {
                path: "x".into(),
                max_bytes: 3,
            },
            JailError::Io {
                path: "x".into(),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            },
        ];
        for error in errors {
            let message = error.to_string();
            let first = message.chars().next().unwrap_or_default();
            assert!(!first.is_uppercase(), "{message}");
            assert!(!message.ends_with('.'), "{message}");
        }
    }

    #[test]
    fn denials_only_for_rule_violations() {
        let rule = |error: JailError| error.denial().map(|denial| denial.rule);
        assert_eq!(
            rule(JailError::AbsolutePath { path: "/x".into() }),
            Some(DenyRule::AbsolutePath)
        );
        assert_eq!(
            rule(JailError::Escapes { path: "..".into() }),
            Some(DenyRule::Escapes)
        );
        assert_eq!(
            rule(JailError::SymlinkEscape { path: "l".into() }),
            Some(DenyRule::SymlinkEscape)
        );
        assert_eq!(
            rule(JailError::TooManyLinks { path: "l".into() }),
            Some(DenyRule::SymlinkEscape)
        );
        assert_eq!(
            rule(JailError::InvalidPath {
                path: "C:x".into(),
                reason: "has a drive prefix"
            }),
            Some(DenyRule::InvalidPath)
        );
        assert_eq!(rule(JailError::NotFound { path: "x".into() }), None);
        assert_eq!(rule(JailError::NotAFile { path: "x".into() }), None);
        assert_eq!(rule(JailError::NotADirectory { path: "x".into() }), None);
        assert_eq!(rule(JailError::Aborted { path: "x".into() }), None);
        assert_eq!(rule(JailError::AlreadyExists { path: "x".into() }), None);
        assert_eq!(rule(JailError::NotEmpty { path: "x".into() }), None);
        assert_eq!(
            rule(JailError::TooLarge {
                path: "x".into(),
                max_bytes: 1
            }),
            None
        );
        assert_eq!(
            rule(JailError::Io {
                path: "x".into(),
                source: io::Error::other("boom")
            }),
            None
        );
    }

    #[test]
    fn cap_std_escape_is_recognised_but_eacces_is_not() {
        let escape = io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a path led outside of the filesystem",
        );
        assert!(matches!(
            JailError::from_io("x", escape),
            JailError::SymlinkEscape { .. }
        ));
        let eacces = io::Error::from_raw_os_error(13);
        assert!(matches!(
            JailError::from_io("x", eacces),
            JailError::Io { .. }
        ));
    }
}
