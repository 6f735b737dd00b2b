//! `pocketpilot man --dir DIR`: a page for every subcommand the command line offers
//! (walked through `--help`, as a person finds them), each with EXIT STATUS and
//! ENVIRONMENT, and every page a page names was written too.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests"
)]

use pp_test_support::TempTree;

use crate::{pocketpilot, text};

/// The subcommands `pocketpilot WORDS --help` lists (`help` aside).
fn subcommands(words: &[String]) -> Vec<String> {
    let output = pocketpilot().args(words).arg("--help").output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{words:?}: {stderr}");
    let Some(start) = stdout.find("\nCommands:\n") else {
        return Vec::new();
    };
    stdout[start + "\nCommands:\n".len()..]
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// `pocketpilot`, `pocketpilot-run`, `pocketpilot-approvals-approve`, …
fn page_names(words: &mut Vec<String>, names: &mut Vec<String>) {
    let mut name = "pocketpilot".to_owned();
    for word in words.iter() {
        name.push('-');
        name.push_str(word);
    }
    names.push(name);
    for sub in subcommands(words) {
        words.push(sub);
        page_names(words, names);
        words.pop();
    }
}

#[test]
fn man_dir_writes_every_subcommands_page_with_exit_status_environment_and_existing_references() {
    let tree = TempTree::new();
    let dir = tree.base().join("man/man1");
    let output = pocketpilot()
        .args(["man", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");

    let mut names = Vec::new();
    page_names(&mut Vec::new(), &mut names);
    for expected in [
        "pocketpilot",
        "pocketpilot-run",
        "pocketpilot-chat",
        "pocketpilot-approvals-approve",
        "pocketpilot-schedules-run",
    ] {
        assert!(names.iter().any(|name| name == expected), "{names:?}");
    }
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    let mut expected: Vec<String> = names.iter().map(|name| format!("{name}.1")).collect();
    expected.sort();
    assert_eq!(written, expected);
    assert!(
        stderr.contains(&format!("wrote {} man pages", names.len())),
        "{stderr}"
    );

    for name in &names {
        let page = std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
        assert!(page.contains(".SH \"EXIT STATUS\""), "{name}");
        assert!(page.contains(".SH ENVIRONMENT"), "{name}");
        assert!(page.contains("POCKETPILOT_HOME"), "{name}");
        assert_eq!(
            page.contains(".SH KEYS"),
            matches!(
                name.as_str(),
                "pocketpilot-run" | "pocketpilot-chat" | "pocketpilot-demo"
            ),
            "{name}"
        );
        // Every page it names, in SUBCOMMANDS and SEE ALSO, exists.
        let plain = page
            .replace("\\fB", " ")
            .replace("\\fR", "")
            .replace("\\-", "-");
        let see_also = &plain[plain.find(".SH \"SEE ALSO\"").expect(name)..];
        assert!(see_also.contains("(1)"), "{name}: {see_also}");
        for reference in plain
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter_map(|word| word.strip_suffix("(1)"))
        {
            assert!(
                names.iter().any(|name| name == reference),
                "{name} names {reference}(1), which does not exist"
            );
        }
    }
    let run = std::fs::read_to_string(dir.join("pocketpilot-run.1")).unwrap();
    for key in [
        "\\fBa\\fR",
        "\\fBr\\fR",
        "\\fBe\\fR",
        "\\fBd\\fR",
        "\\fBspace\\fR",
        "\\fB?\\fR",
        "Ctrl+C",
    ] {
        assert!(run.contains(key), "{key}: {run}");
    }
    assert!(
        run.contains("\\fB130\\fR") && run.contains("\\fB3\\fR"),
        "{run}"
    );
}
