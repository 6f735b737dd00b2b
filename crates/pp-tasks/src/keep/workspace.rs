//! What an approved command did to its workspace: the snapshot taken before it runs
//! (one walk through the jail, `pp_tools::shell::tree`, whose kept contents go to the
//! snapshot store, reflinked where it can) and the difference after it ended, as
//! change rows that revert like the file tools' own.
//!
//! Every file the command created, overwrote, deleted or moved (a deleted path and a
//! created one with the same device and inode), and every folder it created or
//! deleted, is one row with `tool: "run_command"`. A change no kind describes — a mode
//! or owner alone, a link, a FIFO, an entry that changed type, a file whose content was
//! not kept (too large, beyond the budget) — is an `effects_unknown` row naming the
//! path. Paths matched by `[shell] snapshot_ignore` are not watched at all. The rows
//! come in an order a task's revert (newest first) can undo: created folders before
//! what was created in them, deleted folders after what was deleted from them.

use std::collections::{BTreeMap, HashMap};

use pp_gate::{EntryKind, Jail};
use pp_store::{Before, NewChange};
use pp_tools::shell::SnapshotRules;
use pp_tools::shell::tree::{self, Keeper, Node, NotKept, Tree};
use pp_types::{ApprovalId, ChangeKind, ChangeRoot, TaskId};

use super::snapshots::Snapshots;

/// The tool whose approved calls get a workspace snapshot.
pub(crate) const COMMAND_TOOL: &str = "run_command";

/// The workspace before an approved command ran.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    /// Every watched entry, with the kept contents' hashes.
    tree: Tree,
    /// The rules it was taken with (the walk after uses the same).
    rules: SnapshotRules,
}

/// Keeps contents in the snapshot store (none: nothing can be kept).
struct StoreKeeper<'a> {
    store: Option<&'a Snapshots>,
    max_bytes: u64,
}

impl Keeper for StoreKeeper<'_> {
    fn keep(&mut self, _path: &str, file: &mut std::fs::File, _size: u64) -> Option<String> {
        let (sha256, _reflinked) = self.store?.put_file(file, self.max_bytes).ok()?;
        Some(sha256)
    }
}

/// Takes the snapshot of `jail`'s workspace under `rules`, keeping contents in `store`.
/// `None` when the workspace cannot be walked (the command's effects are then
/// unknown). Reads and copies files: call it on the blocking pool.
pub(crate) fn take(jail: &Jail, store: Option<&Snapshots>, rules: &SnapshotRules) -> Option<Taken> {
    let mut keeper = StoreKeeper {
        store,
        max_bytes: rules.max_file_bytes,
    };
    let tree = tree::walk(jail, rules, Some(&mut keeper)).ok()?;
    Some(Taken {
        tree,
        rules: rules.clone(),
    })
}

/// Who the rows are for.
pub(crate) struct Owner<'a> {
    pub(crate) task_id: &'a TaskId,
    pub(crate) approval_id: &'a ApprovalId,
    pub(crate) hash_max_bytes: u64,
}

/// The change rows of the command that ran after `before` was taken: walks the
/// workspace again (metadata only) and compares. Reads files (fingerprints, the new
/// contents kept up to the same budget): call it on the blocking pool.
pub(crate) fn record(
    jail: &Jail,
    store: Option<&Snapshots>,
    before: &Taken,
    owner: &Owner<'_>,
) -> Vec<NewChange> {
    let Ok(after) = tree::walk(jail, &before.rules, None) else {
        return vec![row(
            owner,
            ChangeKind::EffectsUnknown,
            None,
            Before::Unknown,
        )];
    };
    let mut diff = Diff {
        jail,
        store,
        owner,
        after_budget: before.rules.max_total_bytes,
        max_file_bytes: before.rules.max_file_bytes,
        rows: Vec::new(),
    };
    diff.compare(&before.tree.entries, &after.entries);
    diff.rows
}

/// A row of `kind` at `path` with `before`, no after state yet.
fn row(owner: &Owner<'_>, kind: ChangeKind, path: Option<&str>, before: Before) -> NewChange {
    NewChange {
        task_id: owner.task_id.clone(),
        approval_id: Some(owner.approval_id.clone()),
        tool: COMMAND_TOOL.to_owned(),
        kind,
        path: path.map(str::to_owned),
        from_path: None,
        root: ChangeRoot::Workspace,
        bytes: None,
        before,
        before_mode: None,
        after_fingerprint: None,
        after_sha256: None,
    }
}

struct Diff<'a> {
    jail: &'a Jail,
    store: Option<&'a Snapshots>,
    owner: &'a Owner<'a>,
    /// What may still be kept of the new contents (the agent's versions).
    after_budget: u64,
    max_file_bytes: u64,
    rows: Vec<NewChange>,
}

/// What a path's before content lets a revert do.
fn before_of(node: &Node) -> Option<Before> {
    match &node.content {
        Some(Ok(sha256)) => Some(Before::Kept(sha256.clone())),
        Some(Err(NotKept::TooLarge | NotKept::OverBudget | NotKept::Failed)) | None => None,
    }
}

fn same_entry(a: &Node, b: &Node) -> bool {
    a.stat.dev == b.stat.dev && a.stat.ino == b.stat.ino
}

/// Content unchanged as far as metadata tells (same inode, size and mtime).
fn same_content_stat(a: &Node, b: &Node) -> bool {
    same_entry(a, b) && a.size == b.size && a.stat.mtime_ns == b.stat.mtime_ns
}

impl Diff<'_> {
    fn compare(&mut self, before: &BTreeMap<String, Node>, after: &BTreeMap<String, Node>) {
        // Entries gone from their path, by identity: where a created path has the same
        // device and inode (and kind), the entry was moved there.
        let gone: HashMap<(u64, u64), &str> = before
            .iter()
            .filter(|(path, _)| !after.contains_key(path.as_str()))
            .filter(|(_, node)| matches!(node.kind, EntryKind::File | EntryKind::Dir))
            .map(|(path, node)| ((node.stat.dev, node.stat.ino), path.as_str()))
            .collect();
        let mut moved_from: HashMap<&str, &str> = HashMap::new();
        let mut taken: std::collections::HashSet<&str> = std::collections::HashSet::new();
        // Folders moved: what moved with them (same place below, same inode) is theirs.
        let mut moved_dirs: Vec<(&str, &str)> = Vec::new();
        for (path, node) in after {
            let replaced = before.get(path);
            if replaced.is_some_and(|old| same_entry(old, node)) {
                continue;
            }
            let Some(&from) = gone.get(&(node.stat.dev, node.stat.ino)) else {
                continue;
            };
            let old = &before[from];
            if old.kind != node.kind || taken.contains(from) {
                continue;
            }
            if moved_dirs
                .iter()
                .any(|(dir_from, dir_to)| inside(from, dir_from) && inside(path, dir_to))
            {
                moved_from.insert(path.as_str(), from);
                taken.insert(from);
                continue;
            }
            if node.kind == EntryKind::File && !same_content_stat(old, node) {
                continue; // moved and changed: a delete and a create
            }
            if node.kind == EntryKind::Dir {
                moved_dirs.push((from, path.as_str()));
            }
            moved_from.insert(path.as_str(), from);
            taken.insert(from);
        }

        // New and changed paths, parents first.
        for (path, node) in after {
            match (before.get(path), moved_from.get(path.as_str())) {
                (replaced, Some(from)) => {
                    self.moved(path, node, from, before, replaced, &moved_dirs)
                }
                (None, None) => self.created(path, node),
                (Some(old), None) => self.changed(path, old, node),
            }
        }
        // Deleted paths, what was inside a folder before the folder (a revert, newest
        // first, puts the folder back first).
        let mut deleted: Vec<(&String, &Node)> = before
            .iter()
            .filter(|(path, _)| !after.contains_key(path.as_str()))
            .filter(|(path, _)| !taken.contains(path.as_str()))
            .collect();
        deleted.reverse();
        for (path, node) in deleted {
            if moved_dirs.iter().any(|(from, _)| inside(path, from)) {
                // Deleted from a folder that was moved: its row cannot bring it back.
                self.unknown(path);
            } else {
                self.deleted(path, node);
            }
        }
    }

    fn unknown(&mut self, path: &str) {
        self.rows.push(row(
            self.owner,
            ChangeKind::EffectsUnknown,
            Some(path),
            Before::Unknown,
        ));
    }

    fn created(&mut self, path: &str, node: &Node) {
        match node.kind {
            EntryKind::File => {
                let mut change = row(self.owner, ChangeKind::Created, Some(path), Before::Absent);
                self.after_file(&mut change, path);
                self.rows.push(change);
            }
            EntryKind::Dir => {
                let mut change = row(
                    self.owner,
                    ChangeKind::FolderCreated,
                    Some(path),
                    Before::Absent,
                );
                change.after_fingerprint = self.entry_fingerprint(path);
                self.rows.push(change);
            }
            EntryKind::Symlink | EntryKind::Other => self.unknown(path),
        }
    }

    fn changed(&mut self, path: &str, old: &Node, node: &Node) {
        if old.kind != node.kind {
            return self.unknown(path);
        }
        let mode_changed = old.stat.mode != node.stat.mode;
        match node.kind {
            EntryKind::Dir => {
                // A folder's times change with its entries; only its mode is its own.
                if mode_changed {
                    self.unknown(path);
                }
            }
            EntryKind::Symlink | EntryKind::Other => {
                if old.stat != node.stat || old.size != node.size {
                    self.unknown(path);
                }
            }
            EntryKind::File => {
                let touched =
                    !same_content_stat(old, node) || old.stat.ctime_ns != node.stat.ctime_ns;
                if !touched {
                    return;
                }
                let Some(before) = before_of(old) else {
                    // Not kept (too large, beyond the budget): nothing to go back to.
                    return self.unknown(path);
                };
                let mut change = row(self.owner, ChangeKind::Overwritten, Some(path), before);
                change.before_mode = Some(old.stat.mode);
                self.after_file(&mut change, path);
                let same = matches!(
                    (&change.before, &change.after_sha256),
                    (Before::Kept(was), Some(now)) if was == now
                ) || (change.after_sha256.is_none() && same_content_stat(old, node));
                if same {
                    // The same bytes (rewritten, touched): only a mode change is left.
                    if mode_changed {
                        self.unknown(path);
                    }
                    return;
                }
                self.rows.push(change);
            }
        }
    }

    fn moved(
        &mut self,
        path: &str,
        node: &Node,
        from: &str,
        before: &BTreeMap<String, Node>,
        replaced: Option<&Node>,
        moved_dirs: &[(&str, &str)],
    ) {
        // Below a moved folder, at the same place: the folder's row moves it back.
        if moved_dirs
            .iter()
            .any(|(dir_from, dir_to)| inside(from, dir_from) && inside(path, dir_to))
        {
            let old = &before[from];
            let stays = relative(from, moved_dirs) == relative(path, moved_dirs);
            if !(stays && (node.kind == EntryKind::Dir || same_content_stat(old, node))) {
                self.unknown(path);
            }
            return;
        }
        let before_value = match replaced {
            None => Before::Absent,
            // What the move replaced, put back by the revert.
            Some(old) if old.kind == EntryKind::File => match before_of(old) {
                Some(kept) => kept,
                None => return self.unknown(path),
            },
            Some(_) => return self.unknown(path),
        };
        let mut change = row(self.owner, ChangeKind::Moved, Some(path), before_value);
        change.from_path = Some(from.to_owned());
        change.before_mode = replaced.map(|old| old.stat.mode);
        change.bytes = (node.kind == EntryKind::File).then_some(node.size);
        change.after_fingerprint = self.entry_fingerprint(path);
        self.rows.push(change);
    }

    fn deleted(&mut self, path: &str, node: &Node) {
        let before = match node.kind {
            EntryKind::Dir => Before::Folder,
            EntryKind::File => match before_of(node) {
                Some(kept) => kept,
                None => return self.unknown(path),
            },
            EntryKind::Symlink | EntryKind::Other => return self.unknown(path),
        };
        let mut change = row(self.owner, ChangeKind::Deleted, Some(path), before);
        change.before_mode = (node.kind == EntryKind::File).then_some(node.stat.mode);
        change.bytes = (node.kind == EntryKind::File).then_some(node.size);
        change.after_fingerprint = self.entry_fingerprint(path);
        self.rows.push(change);
    }

    /// The entry fingerprint of `path` now (moves, deletes, folders: as `after_op`).
    fn entry_fingerprint(&self, path: &str) -> Option<String> {
        self.jail
            .fingerprint_entry(path, self.owner.hash_max_bytes)
            .ok()
    }

    /// Size, fingerprint and (within what is left of the budget) the kept content of
    /// the file at `path` now (as `after_write`).
    fn after_file(&mut self, change: &mut NewChange, path: &str) {
        change.after_fingerprint = self
            .jail
            .fingerprint_with(path, self.owner.hash_max_bytes)
            .ok();
        let size = self
            .jail
            .probe(path)
            .ok()
            .filter(|probe| probe.is_file())
            .map(|probe| probe.size);
        change.bytes = size;
        change.after_sha256 = match (size, self.store) {
            (Some(size), Some(store))
                if size <= self.max_file_bytes && size <= self.after_budget =>
            {
                let kept = self
                    .jail
                    .open_file(path)
                    .ok()
                    .and_then(|mut file| store.put_file(&mut file, self.max_file_bytes).ok())
                    .map(|(sha256, _)| sha256);
                if kept.is_some() {
                    self.after_budget -= size;
                }
                kept
            }
            _ => None,
        };
    }
}

/// Whether `path` lies inside the folder `folder`.
fn inside(path: &str, folder: &str) -> bool {
    path.len() > folder.len()
        && path.starts_with(folder)
        && path.as_bytes().get(folder.len()) == Some(&b'/')
}

/// `path` relative to the moved folder (from or to) that holds it.
fn relative<'p>(path: &'p str, moved_dirs: &[(&str, &str)]) -> &'p str {
    for (from, to) in moved_dirs {
        for folder in [*from, *to] {
            if inside(path, folder) {
                return &path[folder.len() + 1..];
            }
        }
    }
    path
}
