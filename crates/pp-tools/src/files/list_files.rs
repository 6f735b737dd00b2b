//! `list_files`: lists a workspace directory.
//!
//! ## What it does
//! Lists the entries of a directory inside the workspace, optionally recursively and
//! optionally filtered by a glob `pattern` (see [`super::glob`]) matched against each
//! entry's workspace-relative path, its path relative to the listed directory, or its
//! file name. Each line shows the kind (`file`, `dir`, `link`, `other`), the size in
//! bytes, the modification time in UTC and the workspace-relative path (directories end
//! in `/`). Symbolic links are shown as `link` and never followed. The listing is capped
//! at [`super::Limits::max_list_entries`] entries and
//! [`super::Limits::max_output_chars`] characters, with a `[truncated: …]` marker.
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter, checked
//! by the jail both by the policy and again when the listing is made.
//!
//! ## Example
//! ```json
//! {"path": "src", "recursive": true, "pattern": "**/*.rs"}
//! ```
//! ```text
//! file        1234 2025-01-31T09:15:02Z src/lib.rs
//! file         567 2025-01-31T09:15:02Z src/files/mod.rs
//! ```

use std::sync::Arc;
use std::time::SystemTime;

use pp_agent::ToolContext;
use pp_gate::{EntryKind, Jail, ListEntry, ListOptions};
use pp_types::{Capability, Risk, Timestamp, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Limits;
use super::common::{jail_error, respond, truncation_marker};
use super::glob::Glob;
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "List the files and directories in a workspace directory, with \
kind, size in bytes, modification time (UTC) and path. Use `recursive` to include \
subdirectories and `pattern` (glob: `*`, `**`, `?`, `[abc]`) to filter, e.g. \
`**/*.rs`. Paths are relative to the workspace root; use \".\" for the root.";

/// The arguments of `list_files`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The folder, relative to the workspace root.
    pub(crate) path: &'a str,
    /// Whether to include subfolders (default false).
    pub(crate) recursive: Option<bool>,
    /// A glob the listed paths must match.
    #[serde(borrow)]
    pub(crate) pattern: Option<&'a str>,
}

/// The `list_files` tool.
pub(crate) struct ListFiles {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

impl ListFiles {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "list_files".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Directory to list, relative to the workspace root (\".\" for the root)"
                    },
                    "recursive": {
                        "type": "boolean",
                        "description": "Include the contents of subdirectories (default false)"
                    },
                    "pattern": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 512,
                        "description": "Glob that entries must match, against their path or file name"
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:read")),
            risk: Risk::Low,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    fn run(&self, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments {
            path,
            recursive,
            pattern,
        } = parse(arguments)?;
        let recursive = recursive.unwrap_or(false);
        let filter = pattern.map(|pattern| Filter::new(pattern, path));

        // Without a filter every scanned entry is shown, so one more than the cap is
        // enough to know the listing was cut; with one, scan further to find matches.
        let scan = match filter {
            None => self.limits.max_list_entries.saturating_add(1),
            Some(_) => self
                .limits
                .max_scan_entries
                .max(self.limits.max_list_entries),
        };
        let listing = self
            .jail
            .list(
                path,
                ListOptions {
                    recursive,
                    max_entries: scan,
                },
            )
            .map_err(|err| jail_error(&err))?;
        let scan_cut = listing.truncated;
        let scanned = listing.entries.len();

        let matching: Vec<&ListEntry> = listing
            .entries
            .iter()
            .filter(|entry| {
                filter
                    .as_ref()
                    .is_none_or(|filter| filter.matches(&entry.path))
            })
            .collect();
        if filter.as_ref().is_some_and(Filter::exhausted) {
            return Err(ToolOutput::error(
                "the pattern is too expensive to match against this many entries; use a \
                 shorter pattern or list a narrower folder",
            ));
        }

        let mut out = String::new();
        let mut shown = 0;
        for entry in &matching {
            if shown == self.limits.max_list_entries {
                break;
            }
            let line = format_entry(entry);
            if out.len() + line.len() > self.limits.max_output_chars {
                break;
            }
            out.push_str(&line);
            shown += 1;
        }

        if matching.is_empty() {
            out.push_str(&match pattern {
                Some(pattern) => format!("(no entries match `{pattern}`)\n"),
                None => "(empty directory)\n".to_owned(),
            });
        }
        if shown < matching.len() || (filter.is_none() && scan_cut) {
            let total = if scan_cut {
                format!("at least {}", matching.len())
            } else {
                matching.len().to_string()
            };
            out.push_str(&truncation_marker(&format!(
                "showing {shown} of {total} entries; list a subdirectory or use a narrower pattern"
            )));
            out.push('\n');
        } else if scan_cut {
            out.push_str(&truncation_marker(&format!(
                "stopped after examining {scanned} entries; more matches may exist — list a \
                 subdirectory or use a narrower pattern"
            )));
            out.push('\n');
        }
        Ok(out)
    }
}

impl SyncTool for ListFiles {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(arguments))
    }
}

/// A compiled `pattern` plus the listed directory, so entries can also be matched by
/// their path relative to that directory.
struct Filter {
    glob: Glob,
    /// The listed directory as a clean workspace-relative prefix (`""` for the root);
    /// `None` when the argument has `..` and no lexical prefix can be trusted.
    base: Option<String>,
    /// Matching work left for this call; a model-written pattern cannot make one
    /// listing run for minutes.
    budget: std::cell::Cell<u64>,
}

/// Matching work allowed per `list_files` call (dynamic-program cells, ~50 ms).
const MATCH_BUDGET: u64 = 20_000_000;

impl Filter {
    fn new(pattern: &str, listed: &str) -> Self {
        let mut segments = Vec::new();
        let mut clean = true;
        for segment in listed.split('/') {
            match segment {
                "" | "." => {}
                ".." => clean = false,
                other => segments.push(other),
            }
        }
        Self {
            glob: Glob::new(pattern),
            base: clean.then(|| segments.join("/")),
            budget: std::cell::Cell::new(MATCH_BUDGET),
        }
    }

    /// Whether the budget ran out (matching stopped; the listing is refused).
    fn exhausted(&self) -> bool {
        self.budget.get() == 0
    }

    /// Matches one text if the budget allows.
    fn glob_matches(&self, text: &str) -> bool {
        let cost = self.glob.cost(text.chars().count());
        match self.budget.get().checked_sub(cost) {
            Some(left) => {
                self.budget.set(left);
                self.glob.matches(text)
            }
            None => {
                self.budget.set(0);
                false
            }
        }
    }

    fn matches(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let relative = self.base.as_deref().and_then(|base| {
            if base.is_empty() {
                None
            } else {
                path.strip_prefix(base)
                    .and_then(|rest| rest.strip_prefix('/'))
            }
        });
        self.glob_matches(path)
            || self.glob_matches(name)
            || relative.is_some_and(|relative| self.glob_matches(relative))
    }
}

/// One output line: kind, size, modification time, path (`/` appended to directories).
fn format_entry(entry: &ListEntry) -> String {
    let (kind, size, suffix) = match entry.kind {
        EntryKind::File => ("file", entry.size.to_string(), ""),
        EntryKind::Dir => ("dir", "-".to_owned(), "/"),
        EntryKind::Symlink => ("link", "-".to_owned(), ""),
        EntryKind::Other => ("other", "-".to_owned(), ""),
    };
    let modified = entry.modified.map_or_else(|| "-".to_owned(), format_utc);
    format!("{kind:<5} {size:>10} {modified} {}{suffix}\n", entry.path)
}

/// `YYYY-MM-DDTHH:MM:SSZ` in UTC, to the second.
pub(crate) fn format_utc(time: SystemTime) -> String {
    Timestamp::from(time).to_rfc3339_seconds()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("list_files");
    }

    #[test]
    fn utc_formatting() {
        let at = |seconds: u64| UNIX_EPOCH + Duration::from_secs(seconds);
        assert_eq!(format_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(at(1_700_000_000)), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(at(951_825_599)), "2000-02-29T11:59:59Z");
        assert_eq!(
            format_utc(UNIX_EPOCH - Duration::from_millis(500)),
            "1969-12-31T23:59:59Z"
        );
    }

    #[test]
    fn entry_lines() {
        let entry = |path: &str, kind, size| ListEntry {
            path: path.to_owned(),
            kind,
            size,
            modified: Some(UNIX_EPOCH),
        };
        assert_eq!(
            format_entry(&entry("src/a.rs", EntryKind::File, 42)),
            "file          42 1970-01-01T00:00:00Z src/a.rs\n"
        );
        assert_eq!(
            format_entry(&entry("src", EntryKind::Dir, 4096)),
            "dir            - 1970-01-01T00:00:00Z src/\n"
        );
        let mut link = entry("out", EntryKind::Symlink, 0);
        link.modified = None;
        assert_eq!(format_entry(&link), "link           - - out\n");
    }

    #[test]
    fn filter_matches_path_name_or_relative_path() {
        let filter = Filter::new("sub/*.rs", "./src/");
        assert!(filter.matches("src/sub/a.rs"));
        assert!(!filter.matches("src/other/a.rs"));
        let by_name = Filter::new("*.rs", "src");
        assert!(by_name.matches("src/deep/a.rs"));
        let by_path = Filter::new("src/**/a.rs", ".");
        assert!(by_path.matches("src/x/y/a.rs"));
        let dotted = Filter::new("b/*.rs", "src/../src");
        assert!(!dotted.matches("src/b/a.rs"));
    }
}
