//! The workspace as a command's snapshot sees it: one walk through the jail
//! ([`pp_gate::Jail::walk`]: directory handles, links never followed) that records every
//! entry's metadata and decides, under [`SnapshotRules`], which regular files have their
//! content kept — at most `[revert] max_bytes` each and `[shell] snapshot_max_bytes` in
//! all, in walk order — and which paths are not watched at all (`[shell]
//! snapshot_ignore`, gitignore-style patterns: [`IgnoreRules`]).
//!
//! The card's `uncovered` ([`measure`]) and the snapshot taken before an approved
//! command runs (pp-tasks' `keep/workspace.rs`, which hands a [`Keeper`] to [`walk`])
//! are this same walk, so what the card announces is what the snapshot leaves out.
//! Synchronous: run it on the blocking pool.

use std::collections::BTreeMap;

use pp_gate::{
    EntryKind, EntryStat, Jail, JailError, TEMP_PREFIX, WalkDir, WalkEntry, WalkFlow, WalkVisitor,
};
use pp_types::Uncovered;

/// What a command's snapshot keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRules {
    /// `[shell] snapshot_max_bytes`: contents kept in all (default 256 MiB).
    pub max_total_bytes: u64,
    /// `[revert] max_bytes`: the largest one file whose content is kept.
    pub max_file_bytes: u64,
    /// `[shell] snapshot_ignore`: paths neither kept nor watched.
    pub ignore: IgnoreRules,
}

impl Default for SnapshotRules {
    fn default() -> Self {
        Self {
            max_total_bytes: 256 * 1024 * 1024,
            max_file_bytes: 64 * 1024 * 1024,
            ignore: IgnoreRules::default(),
        }
    }
}

/// Gitignore-style patterns, one per string: `*` (any run of characters but `/`), `?`
/// (one character but `/`), `**` as a whole component (any number of folders), a
/// trailing `/` (folders only), a leading or inner `/` (anchored at the workspace root;
/// otherwise the pattern matches a name at any depth), `!` (re-includes what an earlier
/// pattern matched; the last matching pattern wins), `#` comments and blank strings
/// ignored, `\` escaping the next character. Character classes (`[abc]`) are not
/// supported: `[` is an ordinary character. As in git, nothing inside an ignored folder
/// can be re-included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoreRules {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// The components, `**` as [`Part::Any`].
    parts: Vec<Part>,
    /// Matched against the whole path (else against the last name only).
    anchored: bool,
    /// Only folders match.
    dir_only: bool,
    /// `!`: a match re-includes.
    negated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// `**`: zero or more components.
    Any,
    /// A component with `*` and `?` wildcards (already unescaped into [`Glyph`]s).
    Glob(Vec<Glyph>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Glyph {
    Char(char),
    Star,
    Question,
}

impl IgnoreRules {
    /// Parses `patterns`; a pattern that matches nothing sensible (`/`, `!`) is an
    /// error naming it.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut parsed = Vec::new();
        for raw in patterns {
            let line = raw.trim_end_matches(['\n', '\r']);
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (negated, rest) = match trimmed.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (
                    false,
                    trimmed
                        .strip_prefix("\\!")
                        .map_or(trimmed, |_| &trimmed[1..]),
                ),
            };
            let dir_only = rest.ends_with('/') && !rest.ends_with("\\/");
            let body = rest.trim_end_matches('/');
            let anchored_by_lead = body.starts_with('/');
            let body = body.trim_start_matches('/');
            if body.is_empty() {
                return Err(format!("`{raw}` names no path"));
            }
            let components: Vec<&str> = body.split('/').filter(|part| !part.is_empty()).collect();
            let anchored = anchored_by_lead || components.len() > 1;
            let parts = components
                .iter()
                .map(|component| {
                    if *component == "**" {
                        Part::Any
                    } else {
                        Part::Glob(glyphs(component))
                    }
                })
                .collect();
            parsed.push(Pattern {
                parts,
                anchored,
                dir_only,
                negated,
            });
        }
        Ok(Self { patterns: parsed })
    }

    /// Whether nothing is ignored.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether the workspace path `path` (`/`-separated, relative) is ignored: itself
    /// or one of its folders matched (last matching pattern wins at each level).
    pub fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        let components: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        for end in 1..components.len() {
            if self.matches(&components[..end], true) {
                return true;
            }
        }
        !components.is_empty() && self.matches(&components, is_dir)
    }

    /// Whether `components` themselves (not their folders) are ignored.
    fn matches(&self, components: &[&str], is_dir: bool) -> bool {
        let mut ignored = false;
        for pattern in &self.patterns {
            if pattern.dir_only && !is_dir {
                continue;
            }
            let hit = if pattern.anchored {
                match_parts(&pattern.parts, components)
            } else {
                components
                    .last()
                    .is_some_and(|name| match_parts(&pattern.parts, &[name]))
            };
            if hit {
                ignored = !pattern.negated;
            }
        }
        ignored
    }
}

fn glyphs(component: &str) -> Vec<Glyph> {
    let mut out = Vec::new();
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '\\' => Glyph::Char(chars.next().unwrap_or('\\')),
            '*' => Glyph::Star,
            '?' => Glyph::Question,
            other => Glyph::Char(other),
        });
    }
    out
}

/// Whether `parts` match exactly `components` (`**` spanning any number of them).
fn match_parts(parts: &[Part], components: &[&str]) -> bool {
    match parts.split_first() {
        None => components.is_empty(),
        Some((Part::Any, rest)) => {
            // A trailing `**` matches everything inside, not the folder itself.
            if rest.is_empty() {
                return !components.is_empty();
            }
            (0..=components.len()).any(|skip| match_parts(rest, &components[skip..]))
        }
        Some((Part::Glob(glob), rest)) => match components.split_first() {
            Some((first, others)) => {
                let name: Vec<char> = first.chars().collect();
                match_glob(glob, &name) && match_parts(rest, others)
            }
            None => false,
        },
    }
}

/// `*`/`?` matching of one component (iterative, with backtracking to the last star).
fn match_glob(glob: &[Glyph], name: &[char]) -> bool {
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some(Glyph::Star) => {
                star = Some((g, n));
                g += 1;
            }
            Some(Glyph::Question) => {
                g += 1;
                n += 1;
            }
            Some(Glyph::Char(c)) if *c == name[n] => {
                g += 1;
                n += 1;
            }
            _ => match star {
                Some((star_g, star_n)) => {
                    g = star_g + 1;
                    n = star_n + 1;
                    star = Some((star_g, star_n + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|glyph| *glyph == Glyph::Star)
}

/// Why a regular file's content is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKept {
    /// Larger than `[revert] max_bytes`.
    TooLarge,
    /// Beyond `[shell] snapshot_max_bytes` with what came before it.
    OverBudget,
    /// It could not be opened or stored.
    Failed,
}

/// One entry of the workspace as the walk saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// File, folder, link or other (links not followed).
    pub kind: EntryKind,
    /// Bytes (of the link itself for a link).
    pub size: u64,
    /// Identity, mode, owner and times.
    pub stat: EntryStat,
    /// For a regular file: its content's SHA-256 in the snapshot store, or why not.
    /// `None` for anything else, and for every file when only measuring.
    pub content: Option<Result<String, NotKept>>,
}

/// The workspace's entries by path (sorted), without the ignored ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// Every watched entry, by workspace-relative path.
    pub entries: BTreeMap<String, Node>,
    /// What a revert could not restore: regular files too large, over the budget, or
    /// ignored (and, when keeping, those that could not be kept).
    pub uncovered: Uncovered,
    /// Bytes of content kept (or, when measuring, that would be).
    pub kept_bytes: u64,
}

/// Keeps one file's content for [`walk`]: gets the file, opened read-only through the
/// walk's directory handle, and the most bytes it may hold; returns the kept content's
/// SHA-256, or `None` when it could not be kept.
pub trait Keeper {
    /// Keeps the content of `file` (`path` in the workspace, `size` bytes when listed).
    fn keep(&mut self, path: &str, file: &mut std::fs::File, size: u64) -> Option<String>;
}

/// Walks the whole workspace under `rules`, keeping contents through `keeper` (none:
/// only measure). Errors only when the root cannot be read.
pub fn walk(
    jail: &Jail,
    rules: &SnapshotRules,
    keeper: Option<&mut dyn Keeper>,
) -> Result<Tree, JailError> {
    let mut visitor = Visitor {
        rules,
        keeper,
        tree: Tree::default(),
        ignored_dirs: Vec::new(),
    };
    jail.walk("", &mut visitor)?;
    Ok(visitor.tree)
}

/// What a revert of a command could not cover in `jail`'s workspace under `rules`
/// (metadata only; nothing is read): the card's `uncovered`.
pub fn measure(jail: &Jail, rules: &SnapshotRules) -> Result<Uncovered, JailError> {
    walk(jail, rules, None).map(|tree| tree.uncovered)
}

struct Visitor<'a, 'k> {
    rules: &'a SnapshotRules,
    keeper: Option<&'k mut dyn Keeper>,
    tree: Tree,
    /// Ignored folders being walked (their files are counted, not kept); depth-first,
    /// so the ones that do not contain the current entry are dropped from the end.
    ignored_dirs: Vec<String>,
}

impl Visitor<'_, '_> {
    fn inside_ignored(&mut self, path: &str) -> bool {
        while let Some(last) = self.ignored_dirs.last() {
            if path.len() > last.len()
                && path.starts_with(last.as_str())
                && path.as_bytes().get(last.len()) == Some(&b'/')
            {
                return true;
            }
            self.ignored_dirs.pop();
        }
        false
    }

    fn uncover(&mut self, size: u64) {
        self.tree.uncovered.files += 1;
        self.tree.uncovered.bytes = self.tree.uncovered.bytes.saturating_add(size);
    }
}

impl WalkVisitor for Visitor<'_, '_> {
    fn enter(&mut self, _dir: &WalkDir<'_>) -> WalkFlow {
        WalkFlow::Continue
    }

    fn visit(&mut self, dir: &WalkDir<'_>, entry: &WalkEntry) -> WalkFlow {
        // The jail's own temp files (an atomic write half-way) are nobody's change.
        if entry.name().starts_with(TEMP_PREFIX) {
            return WalkFlow::Skip;
        }
        let is_dir = entry.kind == EntryKind::Dir;
        if self.inside_ignored(&entry.path) || self.rules.ignore.is_ignored(&entry.path, is_dir) {
            if is_dir {
                self.ignored_dirs.push(entry.path.clone());
            } else if entry.kind == EntryKind::File {
                self.uncover(entry.size);
            }
            return WalkFlow::Continue;
        }
        let content = (entry.kind == EntryKind::File).then(|| {
            if entry.size > self.rules.max_file_bytes {
                return Err(NotKept::TooLarge);
            }
            let total = self.tree.kept_bytes.saturating_add(entry.size);
            if total > self.rules.max_total_bytes {
                return Err(NotKept::OverBudget);
            }
            let kept = match self.keeper.as_deref_mut() {
                None => Ok(String::new()),
                Some(keeper) => dir
                    .open(entry)
                    .ok()
                    .and_then(|mut file| keeper.keep(&entry.path, &mut file, entry.size))
                    .ok_or(NotKept::Failed),
            };
            if kept.is_ok() {
                self.tree.kept_bytes = total;
            }
            kept
        });
        if let Some(Err(_)) = &content {
            self.uncover(entry.size);
        }
        // Measuring keeps no hashes.
        let content = match content {
            Some(Ok(sha)) if sha.is_empty() => None,
            other => other,
        };
        self.tree.entries.insert(
            entry.path.clone(),
            Node {
                kind: entry.kind,
                size: entry.size,
                stat: entry.stat,
                content,
            },
        );
        WalkFlow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(patterns: &[&str]) -> IgnoreRules {
        IgnoreRules::new(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_name_without_slash_matches_at_any_depth() {
        let ignore = rules(&["*.log", "node_modules/", "build"]);
        assert!(ignore.is_ignored("a.log", false));
        assert!(ignore.is_ignored("x/y/a.log", false));
        assert!(!ignore.is_ignored("a.logx", false));
        assert!(ignore.is_ignored("web/node_modules", true));
        assert!(ignore.is_ignored("web/node_modules/react/index.js", false));
        assert!(
            !ignore.is_ignored("node_modules", false),
            "trailing /: folders only"
        );
        assert!(ignore.is_ignored("src/build", false));
        assert!(ignore.is_ignored("src/build/out.o", false));
    }

    #[test]
    fn a_leading_or_inner_slash_anchors_at_the_root() {
        let ignore = rules(&["/target", "docs/*.pdf"]);
        assert!(ignore.is_ignored("target", true));
        assert!(ignore.is_ignored("target/debug/app", false));
        assert!(!ignore.is_ignored("crates/x/target", true));
        assert!(ignore.is_ignored("docs/a.pdf", false));
        assert!(
            !ignore.is_ignored("docs/sub/a.pdf", false),
            "* does not cross /"
        );
        assert!(!ignore.is_ignored("x/docs/a.pdf", false));
    }

    #[test]
    fn double_star_spans_folders_and_question_mark_one_character() {
        let ignore = rules(&["**/cache/**", "a/**/z.txt", "file?.bin"]);
        assert!(ignore.is_ignored("cache/x", false));
        assert!(ignore.is_ignored("deep/er/cache/x/y", false));
        assert!(
            !ignore.is_ignored("cache", true),
            "a trailing ** is what is inside"
        );
        assert!(ignore.is_ignored("a/z.txt", false));
        assert!(ignore.is_ignored("a/b/c/z.txt", false));
        assert!(ignore.is_ignored("file1.bin", false));
        assert!(!ignore.is_ignored("file10.bin", false));
        assert!(!ignore.is_ignored("file/.bin", false));
    }

    #[test]
    fn negation_reincludes_unless_a_folder_is_ignored_and_comments_are_skipped() {
        let ignore = rules(&["# comment", "", "*.tmp", "!keep.tmp", "out/", "!out/x"]);
        assert!(ignore.is_ignored("a.tmp", false));
        assert!(!ignore.is_ignored("keep.tmp", false));
        assert!(!ignore.is_ignored("sub/keep.tmp", false));
        assert!(
            ignore.is_ignored("out/x", false),
            "inside an ignored folder: stays ignored"
        );
        assert!(IgnoreRules::new(&["/".to_owned()]).is_err());
        assert!(IgnoreRules::new(&["!".to_owned()]).is_err());
    }

    #[test]
    fn stars_backtrack() {
        let ignore = rules(&["a*b*c"]);
        assert!(ignore.is_ignored("abc", false));
        assert!(ignore.is_ignored("axxbyybc", false));
        assert!(!ignore.is_ignored("axxbyy", false));
    }

    #[test]
    fn the_measure_counts_large_over_budget_and_ignored_files() {
        let temp = tempfile::tempdir().unwrap();
        let jail = Jail::new(temp.path()).unwrap();
        jail.write_atomic("a.txt", &[b'a'; 10]).unwrap();
        jail.write_atomic("b.txt", &[b'b'; 10]).unwrap();
        jail.write_atomic("big.bin", &[b'x'; 100]).unwrap();
        jail.write_atomic("logs/1.log", &[b'l'; 7]).unwrap();
        jail.write_atomic("logs/2.log", &[b'l'; 8]).unwrap();
        let all = SnapshotRules {
            max_total_bytes: 1000,
            max_file_bytes: 1000,
            ignore: IgnoreRules::default(),
        };
        assert_eq!(measure(&jail, &all).unwrap(), Uncovered::default());
        let tight = SnapshotRules {
            max_total_bytes: 15,
            max_file_bytes: 50,
            ignore: rules(&["logs/"]),
        };
        // a.txt kept (10), b.txt over the budget (20 > 15), big.bin too large, logs
        // ignored (2 files, 15 bytes).
        assert_eq!(
            measure(&jail, &tight).unwrap(),
            Uncovered {
                files: 4,
                bytes: 10 + 100 + 15
            }
        );
        let tree = walk(&jail, &tight, None).unwrap();
        assert!(tree.entries.contains_key("a.txt"));
        assert!(
            !tree.entries.contains_key("logs"),
            "ignored paths are not watched"
        );
        assert!(!tree.entries.contains_key("logs/1.log"));
        assert_eq!(
            tree.entries["big.bin"].content,
            Some(Err(NotKept::TooLarge))
        );
    }
}
