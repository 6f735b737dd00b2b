//! `search_files`: finds text in the workspace's files, like `rg`.
//!
//! ## What it does
//! Searches the files beneath `path` (default the whole workspace; a file searches just
//! that file) for `pattern` — literal text unless `regex` is true, case-insensitive
//! unless `case_sensitive` is true — and prints each matching line as `path:line: text`,
//! with `context` lines before and after (0–5) as `path-line- text` and `--` between
//! groups. Paths are workspace-relative with `/`. `glob` keeps only the files whose name
//! (or, when it holds a `/`, whose path) matches. Folders and files that a `.gitignore`
//! or `.ignore` excludes are skipped (nested ones too, `!` re-includes), and so are
//! `.git`, binary files (a NUL byte), files above [`super::SearchLimits::max_file_bytes`]
//! and symbolic links (never followed). At most `max_results` matching lines (default
//! 100, at most 1000), [`super::SearchLimits::max_output_bytes`] bytes and
//! [`super::SearchLimits::max_duration`]; whatever a cap cut, the last line says so
//! (`[truncated: …]`).
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter, checked
//! by the jail both by the policy and again when the search walks.
//!
//! ## Example
//! ```json
//! {"pattern": "invoice", "path": "notes", "glob": "*.md", "context": 1}
//! ```
//! ```text
//! notes/march.md-3- Paid on the 4th.
//! notes/march.md:4: Invoice 2025-031 is still open.
//! notes/march.md-5- Due on the 30th.
//! ```

use std::sync::Arc;
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder};
use pp_agent::ToolContext;
use pp_gate::{EntryKind, Jail, JailError, TEMP_PREFIX, WalkDir, WalkEntry, WalkFlow, WalkVisitor};
use pp_types::{Capability, Risk, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::SearchLimits;
use super::output::{Budget, FileSink, Output};
use super::rules::{MAX_IGNORE_FILE_BYTES, Rules};
use crate::args::{AtLeast, parse};
use crate::blocking::SyncTool;
use crate::files::common::{jail_error, respond};

/// What the model reads about the tool.
const DESCRIPTION: &str = "Search the text of files in the workspace, like grep/rg. Prints \
`path:line: text` per matching line. `pattern` is literal text unless `regex` is true; \
case-insensitive unless `case_sensitive` is true. `path` limits the search to a folder or \
file, `glob` to file names such as `*.md`, `context` adds lines around each match. \
Ignored (.gitignore), binary and very large files are skipped.";

/// Matching lines shown when the call does not say.
const DEFAULT_MAX_RESULTS: usize = 100;
/// Most matching lines a call may ask for.
const MAX_RESULTS: u64 = 1000;
/// Most context lines before and after a match.
const MAX_CONTEXT: u64 = 5;
/// Compiled size allowed for a model-written regex (and for its lazy DFA).
const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;

/// The arguments of `search_files`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The text (or regular expression) to find.
    pub(crate) pattern: &'a str,
    /// The folder or file to search (default: the workspace root).
    #[serde(borrow)]
    pub(crate) path: Option<&'a str>,
    /// Whether `pattern` is a regular expression (default false).
    pub(crate) regex: Option<bool>,
    /// Whether case matters (default false).
    pub(crate) case_sensitive: Option<bool>,
    /// The most matching lines shown.
    pub(crate) max_results: Option<AtLeast<1>>,
    /// Lines shown around each match.
    pub(crate) context: Option<AtLeast<0>>,
    /// File names to search, like `*.md`.
    #[serde(borrow)]
    pub(crate) glob: Option<&'a str>,
}

/// The `search_files` tool.
pub(crate) struct SearchFiles {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: SearchLimits,
    spec: ToolSpec,
}

impl SearchFiles {
    pub(crate) fn new(jail: Arc<Jail>, limits: SearchLimits) -> Self {
        let spec = ToolSpec {
            name: "search_files".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1000,
                        "description": "Text to find (a regular expression when `regex` is true)"
                    },
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Folder or file to search, relative to the workspace root (default \".\")"
                    },
                    "glob": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 512,
                        "description": "Only files whose name matches (`*.md`), or whose path matches when it has a `/` (`src/**/*.rs`)"
                    },
                    "regex": {
                        "type": "boolean",
                        "description": "Treat `pattern` as a regular expression (default false: literal text)"
                    },
                    "case_sensitive": {
                        "type": "boolean",
                        "description": "Match case exactly (default false)"
                    },
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_RESULTS,
                        "description": "Most matching lines to show (default 100)"
                    },
                    "context": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_CONTEXT,
                        "description": "Lines to show before and after each match (default 0)"
                    }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:read")),
            risk: Risk::Low,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    /// Runs one search with `budget` as its clock.
    pub(super) fn run(
        &self,
        context: &ToolContext,
        arguments: &Value,
        budget: Budget,
    ) -> Result<String, ToolOutput> {
        let Arguments {
            pattern,
            path,
            regex,
            case_sensitive,
            max_results,
            context: lines_around,
            glob,
        } = parse(arguments)?;
        let path = path.unwrap_or(".");
        let regex = regex.unwrap_or(false);
        let case_sensitive = case_sensitive.unwrap_or(false);
        let max_results = max_results
            .map_or(DEFAULT_MAX_RESULTS, |count| count.0)
            .min(usize::try_from(MAX_RESULTS).unwrap_or(usize::MAX));
        let lines_around = lines_around
            .map_or(0, |count| count.0)
            .min(usize::try_from(MAX_CONTEXT).unwrap_or(0));
        let glob = glob.map(FileFilter::new).transpose()?;

        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(!case_sensitive)
            .fixed_strings(!regex)
            .line_terminator(Some(b'\n'))
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build(pattern)
            .map_err(|error| ToolOutput::error(format!("invalid pattern: {error}")))?;
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(lines_around)
            .after_context(lines_around)
            .binary_detection(BinaryDetection::quit(0))
            .memory_map(MmapChoice::never())
            .build();

        let probe = self.jail.probe(path).map_err(|err| jail_error(&err))?;
        let shown = probe.resolved.to_string_lossy().replace('\\', "/");
        let mut search = Search {
            jail: &self.jail,
            limits: self.limits,
            context,
            budget,
            matcher,
            searcher,
            filter: glob,
            base: shown.clone(),
            rules: Rules::default(),
            output: Output {
                text: String::new(),
                matches: 0,
                max_results,
                max_bytes: self.limits.max_output_bytes,
                separate: lines_around > 0,
                cut: None,
            },
            skipped_binary: 0,
            skipped_large: 0,
        };
        match probe.kind {
            None => {
                return Err(jail_error(&JailError::NotFound {
                    path: path.to_owned(),
                }));
            }
            Some(EntryKind::Dir) => {
                search.load_ancestor_rules(&shown);
                self.jail
                    .walk(path, &mut search)
                    .map_err(|err| jail_error(&err))?;
            }
            Some(EntryKind::File) => {
                if probe.size > self.limits.max_file_bytes {
                    search.skipped_large += 1;
                } else {
                    let file = self.jail.open_file(path).map_err(|err| jail_error(&err))?;
                    search.search_file(&shown, file);
                }
            }
            Some(EntryKind::Symlink | EntryKind::Other) => {
                return Err(jail_error(&JailError::NotAFile {
                    path: path.to_owned(),
                }));
            }
        }
        Ok(search.finish(pattern, path))
    }
}

impl SyncTool for SearchFiles {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        let started = Instant::now();
        let budget = Budget::new(
            self.limits.max_duration,
            Box::new(move || started.elapsed()),
        );
        respond(self.run(context, arguments, budget))
    }
}

/// The `glob` argument, compiled.
struct FileFilter {
    matcher: GlobMatcher,
    /// No `/` in the glob: it is matched against the file name only.
    by_name: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<Self, ToolOutput> {
        let glob = glob.strip_prefix("./").unwrap_or(glob);
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|error| ToolOutput::error(format!("invalid glob: {error}")))?
            .compile_matcher();
        Ok(Self {
            matcher,
            by_name: !glob.contains('/'),
        })
    }

    /// Whether the file at workspace-relative `path`, found beneath the searched folder
    /// `base`, is kept: by name, or by its path from the root or from `base`.
    fn keeps(&self, path: &str, base: &str) -> bool {
        if self.by_name {
            let name = path.rsplit('/').next().unwrap_or(path);
            return self.matcher.is_match(name);
        }
        let below = match base {
            "" => None,
            base => path
                .strip_prefix(base)
                .and_then(|rest| rest.strip_prefix('/')),
        };
        self.matcher.is_match(path) || below.is_some_and(|below| self.matcher.is_match(below))
    }
}

/// The state of one call: what to match, the rules in force, the results so far.
struct Search<'a> {
    jail: &'a Jail,
    limits: SearchLimits,
    context: &'a ToolContext,
    budget: Budget,
    matcher: RegexMatcher,
    searcher: Searcher,
    filter: Option<FileFilter>,
    /// The searched folder, workspace-relative (`""` for the root).
    base: String,
    rules: Rules,
    output: Output,
    skipped_binary: usize,
    skipped_large: usize,
}

impl Search<'_> {
    /// Loads the ignore files of the folders above the searched one (root first), so a
    /// search of `src` still honours the root's `.gitignore`. Read through the jail; one
    /// that cannot be read counts as absent.
    fn load_ancestor_rules(&mut self, base: &str) {
        let parts: Vec<&str> = base.split('/').filter(|part| !part.is_empty()).collect();
        let folders = (0..parts.len()).map(|end| parts[..end].join("/"));
        let (jail, rules) = (self.jail, &mut self.rules);
        for folder in folders {
            rules.push(&folder, |name| {
                let path = if folder.is_empty() {
                    name.to_owned()
                } else {
                    format!("{folder}/{name}")
                };
                jail.read(&path, MAX_IGNORE_FILE_BYTES)
                    .ok()
                    .map(|content| content.bytes)
            });
        }
    }

    /// Whether to stop now; records why.
    fn should_stop(&mut self) -> bool {
        if self.output.cut.is_none() {
            self.output.cut = self.budget.check(self.context);
        }
        self.output.cut.is_some()
    }

    /// Searches one opened file and adds its lines.
    fn search_file(&mut self, path: &str, file: std::fs::File) {
        use std::io::Read;
        let mut sink = FileSink {
            path,
            lines: Vec::new(),
            remaining: self.output.remaining(),
            more: false,
            binary: false,
            stopped: None,
            budget: &mut self.budget,
            context: self.context,
        };
        let reader = file.take(self.limits.max_file_bytes);
        // A read error mid-file (a file truncated under us) keeps what was found so far.
        let _ = self
            .searcher
            .search_reader(&self.matcher, reader, &mut sink);
        if sink.binary {
            self.skipped_binary += 1;
            return;
        }
        let stopped = sink.stopped;
        self.output.commit(sink);
        if self.output.cut.is_none() {
            self.output.cut = stopped;
        }
    }

    /// The text the model sees: the lines, notices, and the cut marker last.
    fn finish(self, pattern: &str, path: &str) -> String {
        let Output {
            mut text,
            matches,
            cut,
            ..
        } = self.output;
        if matches == 0 && cut.is_none() {
            text.push_str(&format!("(no matches for `{pattern}` in `{path}`)\n"));
        }
        let mut skipped = Vec::new();
        if self.skipped_binary > 0 {
            skipped.push(plural(self.skipped_binary, "binary file"));
        }
        if self.skipped_large > 0 {
            skipped.push(format!(
                "{} over {} bytes",
                plural(self.skipped_large, "file"),
                self.limits.max_file_bytes
            ));
        }
        if !skipped.is_empty() {
            text.push_str(&format!("(not searched: {})\n", skipped.join(", ")));
        }
        if let Some(cut) = cut {
            text.push_str(&cut.marker());
            text.push('\n');
        }
        text
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

impl WalkVisitor for Search<'_> {
    fn enter(&mut self, dir: &WalkDir<'_>) -> WalkFlow {
        if self.should_stop() {
            return WalkFlow::Stop;
        }
        self.rules.push(dir.path(), |name| {
            dir.read_small(name, MAX_IGNORE_FILE_BYTES).ok().flatten()
        });
        WalkFlow::Continue
    }

    fn visit(&mut self, dir: &WalkDir<'_>, entry: &WalkEntry) -> WalkFlow {
        if self.should_stop() {
            return WalkFlow::Stop;
        }
        let name = entry.name();
        if name == ".git" || name.starts_with(TEMP_PREFIX) {
            return WalkFlow::Skip;
        }
        match entry.kind {
            EntryKind::Dir if self.rules.ignored(&entry.path, true) => WalkFlow::Skip,
            EntryKind::Dir => WalkFlow::Continue,
            EntryKind::File => {
                let wanted = !self.rules.ignored(&entry.path, false)
                    && self
                        .filter
                        .as_ref()
                        .is_none_or(|filter| filter.keeps(&entry.path, &self.base));
                if !wanted {
                    return WalkFlow::Continue;
                }
                if entry.size > self.limits.max_file_bytes {
                    self.skipped_large += 1;
                } else if let Ok(file) = dir.open(entry) {
                    self.search_file(&entry.path, file);
                }
                if self.output.cut.is_some() {
                    WalkFlow::Stop
                } else {
                    WalkFlow::Continue
                }
            }
            // Links are never followed; sockets, FIFOs and devices are not searched.
            EntryKind::Symlink | EntryKind::Other => WalkFlow::Continue,
        }
    }

    fn leave(&mut self, _path: &str) {
        self.rules.pop();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pp_test_support::TempTree;

    use super::*;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("search_files");
    }

    /// A clock that advances 10 ms each time it is read: time passes with the work done,
    /// never with the machine's speed.
    fn ticking() -> Box<dyn FnMut() -> Duration + Send> {
        let mut now = Duration::ZERO;
        Box::new(move || {
            now += Duration::from_millis(10);
            now
        })
    }

    #[test]
    fn the_time_budget_cuts_a_large_tree_part_way() {
        let tree = TempTree::new();
        for index in 0..1000 {
            tree.file(&format!("d{:02}/f{index:04}.txt", index % 10), "needle\n");
        }
        let jail = Arc::new(Jail::new(tree.workspace()).expect("jail"));
        let limits = SearchLimits {
            max_duration: Duration::from_secs(1),
            ..SearchLimits::default()
        };
        let tool = SearchFiles::new(jail, limits);
        let arguments = json!({"pattern": "needle", "max_results": 1000});
        let output = tool
            .run(
                &ToolContext::default(),
                &arguments,
                Budget::new(limits.max_duration, ticking()),
            )
            .expect("a result");
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(
            lines.last().copied(),
            Some(
                "[truncated: search stopped after 1 s; files not reached were not searched — \
                 narrow the path or glob]"
            )
        );
        // Some files were searched (the first ones, in path order), far from all.
        let found = lines.len() - 1;
        assert!((10..200).contains(&found), "{found}");
        assert_eq!(lines[0], "d00/f0000.txt:1: needle");

        // The same search with room to finish has no marker.
        let generous = Budget::new(Duration::from_secs(1_000_000), ticking());
        let all = tool
            .run(&ToolContext::default(), &arguments, generous)
            .expect("a result");
        assert_eq!(all.lines().count(), 1000);
        assert!(!all.contains("[truncated"));
    }
}
