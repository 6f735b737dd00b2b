//! Lexical checks on the raw path string, before the filesystem is consulted.
//!
//! These rules hold on every platform: a Windows-looking path is refused on Linux too, so
//! a path that is safe here is safe everywhere.

use super::sweep::TEMP_PREFIX;
use crate::error::{JailError, Result};

/// One component of a validated path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    /// `..`: climb one level.
    Parent,
    /// A plain name (never empty, `.` or `..`, never contains `/`).
    Name(&'a str),
}

/// Longest path accepted (bytes), as on Linux.
const MAX_PATH_BYTES: usize = 4096;
/// Longest single name accepted (bytes), as on common filesystems.
const MAX_NAME_BYTES: usize = 255;

/// Validates `path` and splits it into components.
///
/// Rules, in order: NUL byte, drive prefix (`C:`), backslash → [`JailError::InvalidPath`];
/// a leading `/` → [`JailError::AbsolutePath`]; a `..` that climbs above the root when
/// the components are read left to right → [`JailError::Escapes`]. Empty components
/// and `.` are dropped, so `""` and `"."` designate the root (an empty list).
pub(crate) fn split(path: &str) -> Result<Vec<Part<'_>>> {
    let invalid = |reason| JailError::InvalidPath {
        path: path.to_owned(),
        reason,
    };
    if path.contains('\0') {
        return Err(invalid("contains a NUL byte"));
    }
    if has_drive_prefix(path) {
        return Err(invalid("has a drive prefix"));
    }
    if path.contains('\\') {
        return Err(invalid("contains a backslash"));
    }
    if path.starts_with('/') {
        return Err(JailError::AbsolutePath {
            path: path.to_owned(),
        });
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid("is longer than 4096 bytes"));
    }
    if path
        .split('/')
        .any(|component| component.len() > MAX_NAME_BYTES)
    {
        return Err(invalid("has a name longer than 255 bytes"));
    }
    let mut parts = Vec::new();
    let mut depth = 0_usize;
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                depth = depth.checked_sub(1).ok_or_else(|| JailError::Escapes {
                    path: path.to_owned(),
                })?;
                parts.push(Part::Parent);
            }
            name if name.starts_with(TEMP_PREFIX) => {
                // Reserved for the jail's own temporary files (which the start-up sweep
                // removes): the model may not create, read or replace one.
                return Err(invalid("uses the reserved `.pocketpilot-tmp-` prefix"));
            }
            name => {
                depth += 1;
                parts.push(Part::Name(name));
            }
        }
    }
    Ok(parts)
}

/// An ASCII letter followed by `:` at the start (`C:`, `c:\x`, `C:x`).
fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> Option<&'static str> {
        match split(path) {
            Err(JailError::InvalidPath { reason, .. }) => Some(reason),
            _ => None,
        }
    }

    #[test]
    fn windows_forms_and_nul_are_invalid_everywhere() {
        assert_eq!(reason("C:\\x"), Some("has a drive prefix"));
        assert_eq!(reason("C:x"), Some("has a drive prefix"));
        assert_eq!(reason("c:/x"), Some("has a drive prefix"));
        assert_eq!(reason("\\\\server\\share"), Some("contains a backslash"));
        assert_eq!(reason("a\\..\\..\\x"), Some("contains a backslash"));
        assert_eq!(reason("a\0b"), Some("contains a NUL byte"));
        assert_eq!(
            reason(&"a".repeat(256)),
            Some("has a name longer than 255 bytes")
        );
        assert_eq!(
            reason(&"a/".repeat(2100)),
            Some("is longer than 4096 bytes")
        );
        assert_eq!(reason(&"a".repeat(255)), None);
        assert_eq!(
            reason("dir/.pocketpilot-tmp-1-2-3"),
            Some("uses the reserved `.pocketpilot-tmp-` prefix")
        );
        assert_eq!(reason("/a\0b"), Some("contains a NUL byte"));
        // A colon later in a name is fine (it is a legal Unix file name).
        assert_eq!(reason("notes:2024.txt"), None);
        assert_eq!(reason("1:x"), None);
    }

    #[test]
    fn absolute_and_escaping_paths() {
        assert!(matches!(
            split("/etc/passwd"),
            Err(JailError::AbsolutePath { .. })
        ));
        assert!(matches!(split("//x"), Err(JailError::AbsolutePath { .. })));
        assert!(matches!(split(".."), Err(JailError::Escapes { .. })));
        assert!(matches!(split("../x"), Err(JailError::Escapes { .. })));
        assert!(matches!(split("a/../../x"), Err(JailError::Escapes { .. })));
        assert!(matches!(
            split("./a/./../.."),
            Err(JailError::Escapes { .. })
        ));
    }

    #[test]
    fn accepted_paths_keep_their_parts() {
        assert_eq!(split("").ok(), Some(vec![]));
        assert_eq!(split(".").ok(), Some(vec![]));
        assert_eq!(
            split("./a//b/").ok(),
            Some(vec![Part::Name("a"), Part::Name("b")])
        );
        assert_eq!(
            split("a/../b").ok(),
            Some(vec![Part::Name("a"), Part::Parent, Part::Name("b")])
        );
        assert_eq!(split("...").ok(), Some(vec![Part::Name("...")]));
        assert_eq!(
            split("日本/ü").ok(),
            Some(vec![Part::Name("日本"), Part::Name("ü")])
        );
    }
}
