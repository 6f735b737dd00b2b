//! `pocketpilot skills list|show|add|remove`, `[skills] dirs`, and `run` offering skills.

use std::process::Stdio;

use pp_test_support::TempTree;
use pp_test_support::skills::{ANTHROPIC_STYLE, NANOBOT_STYLE, skill_md, write_skill};
use serde_json::{Value, json};

use crate::{pocketpilot_in, text};

fn skills(tree: &TempTree, args: &[&str]) -> (Option<i32>, String, String) {
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("skills")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

#[test]
fn add_list_show_and_remove() {
    let tree = TempTree::new();
    let (code, stdout, stderr) = skills(&tree, &["list", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!({"skills": []})
    );

    let (name, files) = ANTHROPIC_STYLE;
    let source = write_skill(&tree.base().join("downloads"), name, files);
    let (code, stdout, stderr) = skills(&tree, &["add", source.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "added skill pdf-forms\n");
    assert!(
        tree.base()
            .join("home/skills/pdf-forms/scripts/list_fields.py")
            .exists()
    );
    let (code, _, stderr) = skills(&tree, &["add", source.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("already installed"), "{stderr}");

    let broken = write_skill(
        &tree.base().join("downloads"),
        "broken",
        &[("SKILL.md", &skill_md("other", "d", ""))],
    );
    let (code, _, stderr) = skills(&tree, &["add", broken.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("invalid skill `broken`: name `other` does not match its folder"),
        "{stderr}"
    );
    // An invalid skill dropped in by hand is listed with the reason.
    write_skill(
        &tree.base().join("home/skills"),
        "plain",
        &[("SKILL.md", "# hi\n")],
    );

    let (code, stdout, _) = skills(&tree, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        list["skills"][1],
        json!({"name": "plain", "description": "", "valid": false,
               "reason": "no front matter: SKILL.md must start with a `---` line",
               "source": "home", "read_only": false})
    );
    assert_eq!(list["skills"][0]["name"], "pdf-forms");
    assert_eq!(list["skills"][0]["valid"], true);
    let (_, stdout, _) = skills(&tree, &["list"]);
    assert!(
        stdout.contains("plain  invalid  home  no front matter"),
        "{stdout}"
    );

    let (code, stdout, _) = skills(&tree, &["show", "pdf-forms", "--json"]);
    assert_eq!(code, Some(0));
    let view: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(view["other_fields"], json!(["license"]));
    assert_eq!(view["files"][2], "scripts/list_fields.py");
    let (_, stdout, _) = skills(&tree, &["show", "pdf-forms"]);
    assert!(stdout.contains("ignored fields: license"), "{stdout}");
    assert!(stdout.contains("# PDF forms"), "{stdout}");

    let (code, stdout, stderr) = skills(&tree, &["remove", "pdf-forms"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "removed skill pdf-forms\n");
    assert!(!tree.base().join("home/skills/pdf-forms").exists());
    let (code, _, stderr) = skills(&tree, &["remove", "pdf-forms"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("skill `pdf-forms` not found"), "{stderr}");
}

#[test]
fn read_only_dirs_are_listed_never_removed_and_never_inside_a_workspace() {
    let tree = TempTree::new();
    let shared = tree.base().join("shared-skills");
    let (name, files) = NANOBOT_STYLE;
    write_skill(&shared, name, files);
    let config = tree.base().join("pocketpilot.toml");
    std::fs::write(
        &config,
        format!("[skills]\ndirs = [{:?}]\n", shared.display().to_string()),
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let (code, stdout, stderr) = skills(&tree, &["--config", config_arg, "list", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["skills"][0]["name"], "weather");
    assert_eq!(list["skills"][0]["read_only"], true);
    let (code, _, stderr) = skills(&tree, &["--config", config_arg, "remove", "weather"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("read-only"), "{stderr}");
    assert!(shared.join("weather/SKILL.md").exists());

    let inside = tree.workspace().join("skills");
    std::fs::write(
        &config,
        format!(
            "[skills]\ndirs = [{:?}]\n\n[[workspace]]\nname = \"w\"\npath = {:?}\n",
            inside.display().to_string(),
            tree.workspace().display().to_string()
        ),
    )
    .unwrap();
    let (code, _, stderr) = skills(&tree, &["--config", config_arg, "list"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is inside workspace `w`"), "{stderr}");
}

#[test]
fn run_offers_the_skills_of_the_data_directory() {
    let tree = TempTree::new();
    write_skill(
        &tree.base().join("home/skills"),
        "greeting",
        &[(
            "SKILL.md",
            &skill_md("greeting", "How to greet.", "Say SKILL-BODY-SEEN.\n"),
        )],
    );
    let script = crate::write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "expand_skill", "arguments": {"name": "greeting"}}]},
            {"content": "greeted"}
        ]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .args(["run", "--json", "--workspace"])
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("greet")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let result = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result: {stdout}"));
    assert_eq!(result["name"], "expand_skill", "{result}");
    assert!(result.to_string().contains("SKILL-BODY-SEEN"), "{result}");
}
