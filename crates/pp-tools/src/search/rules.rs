//! The `.gitignore` and `.ignore` rules in force while walking.
//!
//! One layer per folder on the way from the workspace root to the folder being read,
//! each holding the rules of that folder's `.ignore` and `.gitignore` (either may be
//! missing). A path is decided by the deepest layer with an opinion, and within a layer
//! `.ignore` before `.gitignore` (ripgrep's precedence); a `!pattern` re-includes. A
//! folder that is ignored is never entered, so nothing beneath it can be re-included
//! (git's rule). The rules apply whether or not the folder is a git repository.

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore files read in every folder, strongest first.
pub(super) const IGNORE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// Largest ignore file read; the rest of a bigger one is left out.
pub(super) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The layers of rules from the root down to the current folder.
#[derive(Default)]
pub(super) struct Rules {
    layers: Vec<Layer>,
}

/// The rules of one folder.
struct Layer {
    /// The folder's workspace-relative path (`""` for the root).
    dir: String,
    /// Its matchers, strongest first; empty when it has no ignore file.
    matchers: Vec<Gitignore>,
}

impl Rules {
    /// Adds the layer of the folder `dir`, whose ignore files `read` returns by name.
    pub(super) fn push(&mut self, dir: &str, read: impl Fn(&str) -> Option<Vec<u8>>) {
        let matchers = IGNORE_FILES
            .iter()
            .filter_map(|name| read(name))
            .map(|bytes| compile(&String::from_utf8_lossy(&bytes)))
            .filter(|matcher| !matcher.is_empty())
            .collect();
        self.layers.push(Layer {
            dir: dir.to_owned(),
            matchers,
        });
    }

    /// Drops the layer of the folder the walk just left.
    pub(super) fn pop(&mut self) {
        self.layers.pop();
    }

    /// Whether the workspace-relative `path` is ignored.
    pub(super) fn ignored(&self, path: &str, is_dir: bool) -> bool {
        for layer in self.layers.iter().rev() {
            let relative = if layer.dir.is_empty() {
                path
            } else {
                match path
                    .strip_prefix(layer.dir.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                {
                    Some(relative) => relative,
                    None => continue,
                }
            };
            for matcher in &layer.matchers {
                match matcher.matched(relative, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
        }
        false
    }
}

/// The matcher of one ignore file's text; a line that is not a valid pattern is
/// skipped (as git does).
fn compile(text: &str) -> Gitignore {
    // Rooted at ".": the matcher gets paths relative to its folder, and strips nothing.
    let mut builder = GitignoreBuilder::new(".");
    for line in text.lines() {
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(layers: &[(&str, &str, &str)]) -> Rules {
        let mut rules = Rules::default();
        for (dir, ignore, gitignore) in layers {
            rules.push(dir, |name| {
                let text = if name == ".ignore" { ignore } else { gitignore };
                (!text.is_empty()).then(|| text.as_bytes().to_vec())
            });
        }
        rules
    }

    #[test]
    fn deeper_layers_and_dot_ignore_win() {
        let rules = rules(&[
            ("", "", "*.log\n/build\nsecret*\n"),
            ("src", "!keep.log\n", "notes.txt\n"),
            ("src/deep", "", "!secret.txt\n"),
        ]);
        assert!(rules.ignored("a.log", false));
        assert!(rules.ignored("src/deep/x.log", false));
        assert!(!rules.ignored("src/keep.log", false));
        assert!(rules.ignored("build", true));
        // `/build` is anchored to the root's folder.
        assert!(!rules.ignored("src/build", true));
        assert!(rules.ignored("src/notes.txt", false));
        assert!(!rules.ignored("notes.txt", false));
        assert!(rules.ignored("src/secret.md", false));
        assert!(!rules.ignored("src/deep/secret.txt", false));
        assert!(!rules.ignored("src/main.rs", false));
    }

    #[test]
    fn directory_only_patterns_and_pop() {
        let mut rules = rules(&[("", "", "out/\n"), ("a", "", "*.txt\n")]);
        assert!(rules.ignored("out", true));
        assert!(!rules.ignored("out", false));
        assert!(rules.ignored("a/x.txt", false));
        rules.pop();
        assert!(!rules.ignored("a/x.txt", false));
    }
}
