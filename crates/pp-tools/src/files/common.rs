//! What the file tools share: the jail-error mapping, the truncation marker, text
//! decoding with binary detection, and unified diffs (arguments are read by
//! [`crate::args`]).

use pp_agent::ToolContext;
use pp_gate::{Jail, JailError, WriteOutcome};
use pp_types::{ChangeRoot, FileOp, Prior, Snapshot, TargetState, ToolOutput};

/// How many leading bytes are searched for a NUL byte to call a file binary.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Turns a jail error into what the model sees: a rule violation is a denial (it counts
/// towards the task's denial limit), anything else (missing file, IO) an ordinary error.
pub(crate) fn jail_error(err: &JailError) -> ToolOutput {
    match err.denial() {
        Some(denial) => ToolOutput::Denied(denial),
        None => ToolOutput::error(err.to_string()),
    }
}

/// Writes `content` atomically unless the task was cancelled or ran out of time: the
/// check happens right before the rename that makes the write visible, so a call the
/// service stopped waiting for never lands.
pub(crate) fn write_unless_stopped(
    jail: &Jail,
    context: &ToolContext,
    path: &str,
    content: &[u8],
) -> Result<WriteOutcome, ToolOutput> {
    let stop = || context.should_stop();
    jail.write_atomic_unless(path, content, &stop)
        .map_err(|err| match err {
            JailError::Aborted { .. } => ToolOutput::error(format!(
                "not written: the task was cancelled or ran out of time before `{path}` was \
                 replaced"
            )),
            other => jail_error(&other),
        })
}

/// The workspace-relative path `path` designates after `..` and links inside the
/// workspace are resolved, for the approval card; `None` when the jail refuses it.
pub(crate) fn resolved_path(jail: &Jail, path: &str) -> Option<String> {
    jail.check(path)
        .ok()
        .map(|relative| relative.to_string_lossy().into_owned())
}

/// The state of the workspace file `path` now, for the stale check of an approved write:
/// what it resolves to and its fingerprint (the format of the preview's). A path the jail
/// refuses keeps the raw path as its identity and an error as its fingerprint, which
/// never equals one a card showed.
pub(crate) fn file_state(jail: &Jail, path: &str, hash_max_bytes: u64) -> TargetState {
    TargetState {
        identity: resolved_path(jail, path).unwrap_or_else(|| path.to_owned()),
        fingerprint: jail
            .fingerprint_with(path, hash_max_bytes)
            .unwrap_or_else(|error| format!("unavailable: {error}")),
    }
}

/// What the file `path` (in `jail`, the folder `root` names) holds now, for a revert
/// ([`pp_agent::Tool::snapshot`]): its content when at most `keep_up_to` bytes, otherwise
/// its size. Nothing when the jail refuses the path (the call will be refused too).
pub(crate) fn file_snapshot(
    jail: &Jail,
    root: ChangeRoot,
    path: &str,
    partial: bool,
    keep_up_to: u64,
) -> Vec<Snapshot> {
    let Ok(probe) = jail.probe(path) else {
        return Vec::new();
    };
    let prior = if !probe.exists() {
        Prior::Absent
    } else if !probe.is_file() {
        Prior::Unreadable {
            reason: "not a regular file".into(),
        }
    } else if probe.size > keep_up_to {
        Prior::TooLarge { size: probe.size }
    } else {
        match jail.read(path, keep_up_to) {
            Ok(content) if !content.truncated => Prior::Content(content.bytes),
            Ok(content) => Prior::TooLarge { size: content.size },
            Err(JailError::NotFound { .. }) => Prior::Absent,
            Err(error) => Prior::Unreadable {
                reason: error.to_string(),
            },
        }
    };
    vec![Snapshot {
        root,
        path: probe.resolved.to_string_lossy().into_owned(),
        partial,
        op: FileOp::Write,
        prior,
    }]
}

/// What an approval card says when the current content of an existing target cannot be
/// read (the label still says overwrite).
pub(crate) fn unreadable_notice(error: &JailError) -> String {
    match error {
        JailError::Io { source, .. } => {
            format!("cannot show the current content: {}", source.kind())
        }
        other => format!("cannot show the current content: {other}"),
    }
}

/// The output of a tool run: the text on success, the error or denial otherwise.
pub(crate) fn respond(result: Result<String, ToolOutput>) -> ToolOutput {
    result.map_or_else(|output| output, ToolOutput::success)
}

/// The marker appended wherever a cap cut the output: `[truncated: <detail>]`.
pub(crate) fn truncation_marker(detail: &str) -> String {
    format!("[truncated: {detail}]")
}

/// The longest prefix of `text` with at most `max_chars` characters, and whether
/// anything was cut.
pub(crate) fn prefix_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// `text` capped at `max_chars` characters for display; a cut ends with a marker on its
/// own line saying how much of the whole was shown.
pub(crate) fn cap_for_display(text: &str, max_chars: usize) -> String {
    let (shown, cut) = prefix_chars(text, max_chars);
    if !cut {
        return text.to_owned();
    }
    let mut capped = shown.to_owned();
    if !capped.ends_with('\n') {
        capped.push('\n');
    }
    capped.push_str(&truncation_marker(&format!(
        "showing the first {max_chars} of {} characters",
        text.chars().count()
    )));
    capped
}

/// Why bytes could not be treated as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotText {
    /// A NUL byte in the first [`BINARY_SNIFF_BYTES`] bytes.
    NulByte,
    /// Not valid UTF-8.
    InvalidUtf8,
}

/// Decodes file bytes as UTF-8 text, refusing binary data.
///
/// `truncated` says the bytes are a prefix of the file: a multi-byte character cut at
/// the end is then dropped rather than taken as a sign of binary data.
pub(crate) fn decode_text(bytes: &[u8], truncated: bool) -> Result<&str, NotText> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        return Err(NotText::NulByte);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        // `error_len() == None`: the input ended inside a character, which is what a
        // byte cap does to a valid file.
        Err(err) if truncated && err.error_len().is_none() => {
            std::str::from_utf8(&bytes[..err.valid_up_to()]).map_err(|_| NotText::InvalidUtf8)
        }
        Err(_) => Err(NotText::InvalidUtf8),
    }
}

/// The error the model sees for a binary file.
pub(crate) fn binary_error(path: &str, size: u64, why: NotText) -> ToolOutput {
    let reason = match why {
        NotText::NulByte => "contains NUL bytes",
        NotText::InvalidUtf8 => "is not valid UTF-8 text",
    };
    ToolOutput::error(format!(
        "`{path}` looks like a binary file ({size} bytes; it {reason}); this tool only \
         handles text — use extract_document for PDF, DOCX, XLSX and other documents"
    ))
}

/// Reads a whole text file for an edit or a diff: refuses files over the byte cap and
/// binary files with an ordinary error, and jail refusals with a denial.
pub(crate) fn read_whole_text(
    jail: &Jail,
    path: &str,
    max_bytes: u64,
) -> Result<String, ToolOutput> {
    let content = jail.read(path, max_bytes).map_err(|err| jail_error(&err))?;
    if content.truncated {
        return Err(ToolOutput::error(format!(
            "`{path}` is {} bytes, larger than the {max_bytes}-byte limit for editing; \
             use write_file to replace it whole",
            content.size
        )));
    }
    match decode_text(&content.bytes, false) {
        Ok(text) => Ok(text.to_owned()),
        Err(why) => Err(binary_error(path, content.size, why)),
    }
}

/// A unified diff and how many lines it adds and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineDiff {
    /// `--- a/<path>` / `+++ b/<path>` headers and three lines of context; empty when
    /// nothing changes.
    pub(crate) unified: String,
    /// Lines only in the new text.
    pub(crate) added: u32,
    /// Lines only in the old text.
    pub(crate) removed: u32,
}

/// The unified diff of `old` → `new` and its line counts, from one diff.
pub(crate) fn line_diff(path: &str, old: &str, new: &str) -> LineDiff {
    if old == new {
        return LineDiff {
            unified: String::new(),
            added: 0,
            removed: 0,
        };
    }
    // A deadline keeps a huge rewrite from stalling the approval request: past it the
    // diff is still correct, only less minimal.
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old, new);
    let (mut added, mut removed) = (0_usize, 0_usize);
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag != similar::DiffTag::Equal {
            removed += old_range.len();
            added += new_range.len();
        }
    }
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    LineDiff {
        unified,
        added: saturating_u32(added),
        removed: saturating_u32(removed),
    }
}

/// The number of lines of `text` (a last line without a newline counts), as the line
/// count of a new file.
pub(crate) fn line_count(text: &str) -> u32 {
    saturating_u32(text.lines().count())
}

fn saturating_u32(count: usize) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn prefix_chars_respects_char_boundaries() {
        assert_eq!(prefix_chars("héllo", 2), ("hé", true));
        assert_eq!(prefix_chars("héllo", 5), ("héllo", false));
        assert_eq!(prefix_chars("", 0), ("", false));
    }

    #[test]
    fn cap_for_display_adds_a_marker_only_when_cutting() {
        assert_eq!(cap_for_display("abc", 3), "abc");
        assert_eq!(
            cap_for_display("abcdef", 3),
            "abc\n[truncated: showing the first 3 of 6 characters]"
        );
    }

    #[test]
    fn decode_text_detects_binary() {
        assert_eq!(decode_text(b"plain\n", false), Ok("plain\n"));
        assert_eq!(decode_text(b"a\0b", false), Err(NotText::NulByte));
        assert_eq!(decode_text(b"\xff\xfe", false), Err(NotText::InvalidUtf8));
        // A NUL past the sniff window is still text as far as NUL detection goes.
        let mut late_nul = vec![b'a'; BINARY_SNIFF_BYTES];
        late_nul.push(0);
        assert!(decode_text(&late_nul, false).is_ok());
    }

    #[test]
    fn decode_text_drops_a_character_cut_by_the_byte_cap() {
        let cut = &"aé".as_bytes()[..2];
        assert_eq!(decode_text(cut, true), Ok("a"));
        assert_eq!(decode_text(cut, false), Err(NotText::InvalidUtf8));
    }

    #[test]
    fn line_diff_has_git_style_headers_and_counts() {
        assert_eq!(
            line_diff("f.txt", "a\nb\n", "a\nc\n"),
            LineDiff {
                unified: "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n".to_owned(),
                added: 1,
                removed: 1,
            }
        );
        let grown = line_diff("f.txt", "a\n", "a\nb\nc\n");
        assert_eq!((grown.added, grown.removed), (2, 0));
        let shrunk = line_diff("f.txt", "a\nb\nc\n", "c\n");
        assert_eq!((shrunk.added, shrunk.removed), (0, 2));
        assert_eq!(
            line_diff("f.txt", "same\n", "same\n"),
            LineDiff {
                unified: String::new(),
                added: 0,
                removed: 0
            }
        );
    }

    #[test]
    fn line_count_counts_a_last_line_without_newline() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("one"), 1);
        assert_eq!(line_count("one\ntwo\n"), 2);
        assert_eq!(line_count("one\r\ntwo"), 2);
    }
}
