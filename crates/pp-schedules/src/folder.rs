//! Where a schedule's tasks run. A schedule stores its workspace as a configured
//! workspace's name or, outside team mode, as a folder's canonical absolute path (what
//! `pocketpilot schedules add --workspace DIR` stores for a folder no workspace is
//! configured for). A name resolves only in a process that configures it; a stored
//! folder resolves in every process sharing the store, as a one-off workspace named
//! after the folder (as `serve --workspace DIR` names it).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use pp_tasks::{Workspace, Workspaces};

/// The workspace `stored` designates: the configured one of that name, or, when
/// `folders` (outside team mode) and `stored` is an absolute path, that folder.
pub(crate) fn stored_workspace<'a>(
    workspaces: &'a Workspaces,
    folders: bool,
    stored: &str,
) -> Option<Cow<'a, Workspace>> {
    if let Some(workspace) = workspaces.find(Some(stored)) {
        return Some(Cow::Borrowed(workspace));
    }
    let path = Path::new(stored);
    if !folders || !is_folder_path(stored) {
        return None;
    }
    let name = path.file_name().map_or_else(
        || "workspace".to_owned(),
        |name| name.to_string_lossy().into_owned(),
    );
    Some(Cow::Owned(Workspace {
        name,
        path: PathBuf::from(stored),
    }))
}

/// Whether `stored` reads as a stored folder (an absolute path) rather than a name.
pub(crate) fn is_folder_path(stored: &str) -> bool {
    Path::new(stored).is_absolute()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_resolves_where_configured_and_a_folder_only_outside_team_mode() {
        let workspaces = Workspaces::single("main", "/srv/main");
        let main = stored_workspace(&workspaces, true, "main").unwrap();
        assert_eq!(main.path, PathBuf::from("/srv/main"));
        assert!(stored_workspace(&workspaces, true, "ws").is_none());
        let folder = stored_workspace(&workspaces, true, "/home/ana/ws").unwrap();
        assert_eq!(folder.name, "ws");
        assert_eq!(folder.path, PathBuf::from("/home/ana/ws"));
        assert!(stored_workspace(&workspaces, false, "/home/ana/ws").is_none());
        assert!(stored_workspace(&workspaces, true, "../ws").is_none());
    }
}
