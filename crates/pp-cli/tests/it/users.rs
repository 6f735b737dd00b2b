//! `pocketpilot users add|list|grant|revoke|rotate`: the token is printed once and never
//! listed, grants name configured workspaces, rotation replaces the token, and mistakes
//! are usage errors (exit 2).

use std::path::{Path, PathBuf};
use std::process::Output;

use pp_test_support::TempTree;
use serde_json::Value;

use crate::{pocketpilot_in, text};

/// A config file with the workspaces `finance` (default) and `research`.
fn config(tree: &TempTree) -> PathBuf {
    let research = tree.base().join("research");
    std::fs::create_dir_all(&research).unwrap();
    let file = tree.base().join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nenabled = true\n\n[[workspace]]\nname = \"finance\"\npath = {:?}\n\
             default = true\n\n[[workspace]]\nname = \"research\"\npath = {:?}\n",
            tree.workspace().display().to_string(),
            research.display().to_string()
        ),
    )
    .unwrap();
    file
}

fn users(home: &Path, config: &Path, args: &[&str]) -> Output {
    let mut command = pocketpilot_in(home);
    command.arg("--config").arg(config).arg("users").args(args);
    command.output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{:?}", text(output));
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{}", text(output).0))
}

#[test]
fn users_are_added_listed_granted_revoked_and_rotated() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);

    let added = users(&home, &config, &["add", "alice", "--role", "owner"]);
    let (out, _) = text(&added);
    assert!(added.status.success(), "{:?}", text(&added));
    assert!(out.contains("user alice (owner) added"), "{out}");
    let token = out
        .lines()
        .find_map(|line| line.strip_prefix("token: "))
        .unwrap()
        .to_owned();
    assert!(token.starts_with("ppu_") && token.len() == 68, "{token}");

    let bob = json_of(&users(
        &home,
        &config,
        &["add", "bob", "--role", "approver", "--json"],
    ));
    assert_eq!(bob["user"]["name"], "bob");
    assert_eq!(bob["user"]["role"], "approver");
    let bob_token = bob["token"].as_str().unwrap().to_owned();

    let granted = users(&home, &config, &["grant", "bob", "finance"]);
    assert!(granted.status.success(), "{:?}", text(&granted));
    assert!(
        users(&home, &config, &["grant", "bob", "research"])
            .status
            .success()
    );
    let revoked = users(&home, &config, &["revoke", "bob", "research"]);
    assert!(revoked.status.success(), "{:?}", text(&revoked));
    assert!(text(&revoked).0.contains("bob no longer works in research"));

    let listed = json_of(&users(&home, &config, &["list", "--json"]));
    let list = listed["users"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["name"], "alice");
    assert_eq!(list[0]["role"], "owner");
    assert_eq!(list[1]["name"], "bob");
    assert_eq!(list[1]["workspaces"], serde_json::json!(["finance"]));
    let listed_text = text(&users(&home, &config, &["list"])).0;
    assert!(
        listed_text.contains("bob  approver  finance"),
        "{listed_text}"
    );
    for shown in [listed.to_string(), listed_text] {
        assert!(!shown.contains(&token) && !shown.contains(&bob_token));
    }

    let rotated = json_of(&users(&home, &config, &["rotate", "bob", "--json"]));
    let new_token = rotated["token"].as_str().unwrap();
    assert!(new_token.starts_with("ppu_"));
    assert_ne!(new_token, bob_token);
    assert_eq!(rotated["logins_ended"], 0);
}

#[test]
fn mistakes_are_usage_errors() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);
    assert!(
        users(&home, &config, &["add", "carol", "--role", "member"])
            .status
            .success()
    );
    for (args, says) in [
        (
            vec!["add", "dave", "--role", "admin"],
            "unknown role `admin`",
        ),
        (vec!["add", "Dave", "--role", "member"], "invalid user name"),
        (vec!["add", "carol", "--role", "viewer"], "already exists"),
        (
            vec!["grant", "nobody", "finance"],
            "user `nobody` not found",
        ),
        (
            vec!["grant", "carol", "nowhere"],
            "workspace `nowhere` not found",
        ),
        (
            vec!["revoke", "carol", "nowhere"],
            "workspace `nowhere` not found",
        ),
        (vec!["rotate", "nobody"], "user `nobody` not found"),
    ] {
        let output = users(&home, &config, &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {:?}",
            text(&output)
        );
        assert!(
            text(&output).1.contains(says),
            "{args:?}: {:?}",
            text(&output)
        );
    }
}
