//! Issue 29, item 5: in team mode the memory and skills are the team's, in the
//! database: `[team] shared_dir` is read once, for the import, then refused with a
//! message; every machine of the team (here: two data directories on one database)
//! sees the same memory and skills.

use std::path::{Path, PathBuf};
use std::process::Output;

use pp_test_support::TempTree;
use pp_test_support::skills::skill_md;
use serde_json::Value;

use crate::{pocketpilot_in, text};

/// A team config on the shared database `db`, with `shared_dir` when given.
fn config(tree: &TempTree, name: &str, db: &Path, shared_dir: Option<&Path>) -> PathBuf {
    let file = tree.base().join(name);
    let shared = shared_dir.map_or_else(String::new, |dir| {
        format!("shared_dir = {:?}\n", dir.display().to_string())
    });
    std::fs::write(
        &file,
        format!(
            "[team]\nenabled = true\n{shared}\n[store]\nurl = {:?}\n\n[[workspace]]\n\
             name = \"finance\"\npath = {:?}\n",
            format!("sqlite://{}", db.display()),
            tree.workspace().display().to_string()
        ),
    )
    .unwrap();
    file
}

fn command(home: &Path, config: &Path, args: &[&str]) -> Output {
    let mut command = pocketpilot_in(home);
    command.arg("--config").arg(config).args(args);
    command.output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{:?}", text(output));
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{}", text(output).0))
}

#[test]
fn the_shared_folder_is_imported_once_then_refused_and_every_machine_sees_the_team_s() {
    let tree = TempTree::new();
    let db = tree.base().join("team.db");
    let shared = tree.base().join("shared");
    std::fs::create_dir_all(shared.join("skills/tidy")).unwrap();
    std::fs::write(shared.join("memory.md"), "the team likes tea\n").unwrap();
    std::fs::write(
        shared.join("skills/tidy/SKILL.md"),
        skill_md("tidy", "Tidy the desk.", "Tidy up.\n"),
    )
    .unwrap();
    let (first_home, second_home) = (tree.base().join("a"), tree.base().join("b"));
    let with_shared = config(&tree, "a.toml", &db, Some(&shared));

    // The first process of the team imports the folder and says to drop the setting.
    let first = command(&first_home, &with_shared, &["memory", "show", "--json"]);
    let (_, stderr) = text(&first);
    assert!(
        stderr.contains("imported into the team's database"),
        "{stderr}"
    );
    assert!(stderr.contains("skills tidy"), "{stderr}");
    assert!(stderr.contains("remove `shared_dir`"), "{stderr}");
    assert_eq!(json_of(&first)["content"], "the team likes tea\n");

    // Then a configured shared_dir is refused (exit 2), naming the import and the file.
    let again = command(&first_home, &with_shared, &["skills", "list"]);
    let (_, stderr) = text(&again);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no longer used"), "{stderr}");
    assert!(stderr.contains(&shared.display().to_string()), "{stderr}");
    assert!(stderr.contains("a.toml"), "{stderr}");

    // Another machine (its own data directory, no shared folder) sees the team's.
    let plain = config(&tree, "b.toml", &db, None);
    let memory = json_of(&command(
        &second_home,
        &plain,
        &["memory", "show", "--json"],
    ));
    assert_eq!(memory["content"], "the team likes tea\n");
    let skills = json_of(&command(
        &second_home,
        &plain,
        &["skills", "list", "--json"],
    ));
    let names: Vec<&str> = skills["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tidy"]);
    // Its own data directory holds no memory file: the team's is in the database.
    assert!(!second_home.join("memory.md").exists());
    // Changing the shared folder now changes nothing the team sees.
    std::fs::write(shared.join("memory.md"), "changed behind the team's back\n").unwrap();
    let memory = json_of(&command(
        &second_home,
        &plain,
        &["memory", "show", "--json"],
    ));
    assert_eq!(memory["content"], "the team likes tea\n");
}
