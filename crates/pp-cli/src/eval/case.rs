//! The eval case file format.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use pp_types::Risk;
use serde::Deserialize;
use serde_json::Value;

/// One eval case, as read from `evals/cases/*.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    /// Shown in the report.
    pub(crate) name: String,
    /// What the case checks, for people reading it.
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// The workspace's initial content.
    #[serde(default)]
    pub(crate) workspace: WorkspaceSpec,
    /// Binary files copied into the workspace: workspace path → a file, relative to the
    /// cases folder (see [`Case::cases_dir`]).
    #[serde(default)]
    pub(crate) fixtures: BTreeMap<String, String>,
    /// The folder `fixtures` sources are relative to: the folder holding the case file,
    /// set when the file is loaded (never read from the case's JSON).
    #[serde(skip)]
    pub(crate) cases_dir: Option<PathBuf>,
    /// Files in `outside/`, next to the workspace.
    #[serde(default)]
    pub(crate) outside: BTreeMap<String, String>,
    /// Skills installed for the case: `"<name>/SKILL.md"` and `"<name>/<file>"` → content,
    /// in `skills/` next to the workspace (the data directory's skills folder).
    #[serde(default)]
    pub(crate) skills: BTreeMap<String, String>,
    /// The memory file's content before the run (`data/memory.md` beside the workspace,
    /// the case's data directory); absent: no memory file.
    #[serde(default)]
    pub(crate) memory: Option<String>,
    /// The person's prompt.
    pub(crate) prompt: String,
    /// The scripted model's turns.
    pub(crate) script: Value,
    /// Decisions, consumed in order each time the task waits.
    #[serde(default)]
    pub(crate) approvals: Vec<ApprovalEntry>,
    /// Test tools registered for this case only.
    #[serde(default)]
    pub(crate) tools: Vec<TestTool>,
    /// An MCP server for this case (an in-process one that records its calls), its tools
    /// offered through the real MCP tool provider.
    #[serde(default)]
    pub(crate) mcp: Option<super::mcp::McpCase>,
    /// Loop limits for this case.
    #[serde(default)]
    pub(crate) limits: CaseLimits,
    /// What must hold at the end.
    pub(crate) expect: Expect,
    /// The case runs confined commands (`run_command`): where the kernel lacks Landlock
    /// it is skipped with a message, or fails under CI (`CI` set).
    #[serde(default)]
    pub(crate) needs_landlock: bool,
}

impl Case {
    /// Parses a case file's text and checks that every file, directory and link it
    /// creates stays inside its own `workspace/` or `outside/` (link *targets* are free:
    /// escape cases need links that point outside).
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        let case: Self = serde_json::from_str(text)?;
        let locations = [
            ("workspace.files", keys(&case.workspace.files)),
            ("workspace.dirs", case.workspace.dirs.iter().collect()),
            ("workspace.symlinks", keys(&case.workspace.symlinks)),
            ("fixtures", keys(&case.fixtures)),
            ("outside", keys(&case.outside)),
            ("skills", keys(&case.skills)),
        ];
        for (field, entries) in locations {
            for location in entries {
                check_location(location)
                    .map_err(|problem| anyhow::anyhow!("{field}: {problem}"))?;
            }
        }
        for (location, source) in &case.fixtures {
            check_source(source).map_err(|problem| anyhow::anyhow!("fixtures: {problem}"))?;
            let taken = [
                (
                    "workspace.files",
                    case.workspace.files.contains_key(location),
                ),
                (
                    "workspace.symlinks",
                    case.workspace.symlinks.contains_key(location),
                ),
            ];
            if let Some((field, _)) = taken.iter().find(|(_, taken)| *taken) {
                anyhow::bail!(
                    "fixtures: `{}` is also in {field}; each workspace path is created once",
                    location.escape_debug()
                );
            }
        }
        Ok(case)
    }
}

/// Checks a fixture's source as written in the case: a relative path of plain names
/// inside the cases folder (the rules of [`check_location`]). Where it leads on disk —
/// a link out of the cases folder, a missing file — is checked when the case is loaded
/// (`tree::resolve_fixtures`).
pub(crate) fn check_source(source: &str) -> Result<(), String> {
    check_location(source).map_err(|problem| {
        format!(
            "source {}",
            problem.replace(
                "locations must be relative paths inside the case's tree",
                "sources must be relative paths inside the cases folder"
            )
        )
    })
}

fn keys<V>(map: &BTreeMap<String, V>) -> Vec<&String> {
    map.keys().collect()
}

/// Checks where a case creates something: a relative path made of plain names only — no
/// `..`, no absolute path, no backslash, no drive (`C:`), not empty.
pub(crate) fn check_location(location: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "`{}` {why}; locations must be relative paths inside the case's tree",
            location.escape_debug()
        ))
    };
    if location.contains('\\') {
        return refuse("contains a backslash");
    }
    if location.contains('\0') {
        return refuse("contains a NUL byte");
    }
    let mut chars = location.chars();
    if let (Some(first), Some(':')) = (chars.next(), chars.next())
        && first.is_ascii_alphabetic()
    {
        return refuse("starts with a drive");
    }
    let mut names = 0;
    for component in Path::new(location).components() {
        match component {
            Component::Normal(_) => names += 1,
            Component::CurDir => {}
            Component::ParentDir => return refuse("contains `..`"),
            Component::RootDir | Component::Prefix(_) => return refuse("is absolute"),
        }
    }
    if names == 0 {
        return refuse("names nothing");
    }
    Ok(())
}

/// Files, directories and symbolic links to create in the workspace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkspaceSpec {
    /// Relative path → content.
    #[serde(default)]
    pub(crate) files: BTreeMap<String, String>,
    /// Relative directories.
    #[serde(default)]
    pub(crate) dirs: Vec<String>,
    /// Relative link path → target (`$OUTSIDE` is replaced by the outside directory).
    #[serde(default)]
    pub(crate) symlinks: BTreeMap<String, String>,
}

/// One decision: `"approve"`, `"reject"` or the full object.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(untagged)]
pub(crate) enum ApprovalEntry {
    /// `"approve"` or `"reject"`.
    Word(String),
    /// `{"decision": …, "edited_arguments"?: …, "reason"?: …}`.
    Full(ApprovalDecision),
}

/// The object form of a decision.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalDecision {
    /// `approve` or `reject`.
    pub(crate) decision: String,
    /// Arguments replacing the call's arguments entirely.
    #[serde(default)]
    pub(crate) edited_arguments: Option<Value>,
    /// The reason for a rejection.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// A tool that returns its arguments as JSON, to exercise the policy table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct TestTool {
    /// The tool's name.
    pub(crate) name: String,
    /// The capability; absent for the missing-capability case.
    #[serde(default)]
    pub(crate) capability: Option<String>,
    /// Risk (default low).
    #[serde(default)]
    pub(crate) risk: Risk,
    /// JSON Schema (default: any object).
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
    /// Arguments that are workspace paths.
    #[serde(default)]
    pub(crate) path_params: Vec<String>,
}

/// Optional loop limits.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct CaseLimits {
    /// Maximum model calls.
    #[serde(default)]
    pub(crate) max_steps: Option<u32>,
    /// Denials before `policy_violation`.
    #[serde(default)]
    pub(crate) max_denials: Option<u32>,
    /// Tokens per task (`[tasks] max_tokens`); scripted turns report usage.
    #[serde(default)]
    pub(crate) max_tokens: Option<u64>,
}

/// Expectations; only the fields present are checked. Unknown keys fail the case.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    /// `completed`, `failed` or `waiting_approval`.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// The failure reason (`policy_violation`, `max_steps`, …).
    #[serde(default)]
    pub(crate) failure_reason: Option<String>,
    /// Exact event counts over the task's whole life.
    #[serde(default)]
    pub(crate) events: Option<BTreeMap<String, usize>>,
    /// Workspace files and their exact content.
    #[serde(default)]
    pub(crate) files: Option<BTreeMap<String, String>>,
    /// Workspace paths that must not exist.
    #[serde(default)]
    pub(crate) absent: Option<Vec<String>>,
    /// Strings that must appear in no event, tool result or model request.
    #[serde(default)]
    pub(crate) never_contains: Option<Vec<String>>,
    /// Everything outside `workspace/` is byte-for-byte unchanged.
    #[serde(default)]
    pub(crate) outside_unchanged: Option<bool>,
    /// The create/overwrite label of each approval request, in order.
    #[serde(default)]
    pub(crate) approval_labels: Option<Vec<String>>,
    /// A substring of the final answer.
    #[serde(default)]
    pub(crate) final_contains: Option<String>,
    /// Strings each found in the output of at least one successful tool call
    /// (`tool_result` events), to check what a tool read.
    #[serde(default)]
    pub(crate) result_contains: Option<Vec<String>>,
    /// The memory file's exact content after the run (`""` also matches no file).
    #[serde(default)]
    pub(crate) memory: Option<String>,
    /// How many calls the case's MCP server received (`"mcp"`).
    #[serde(default)]
    pub(crate) mcp_calls: Option<usize>,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn locations_must_stay_inside_the_tree() {
        for good in [
            "a.txt",
            "dir/sub/f.md",
            "./x",
            "dir/",
            ".hidden",
            "a b/ü.txt",
        ] {
            assert_eq!(check_location(good), Ok(()), "{good}");
        }
        for bad in [
            "../../../../tmp/x.txt",
            "/tmp/abs.txt",
            "a/../../b",
            "a/..",
            "..",
            "",
            ".",
            "./",
            "C:/x",
            "c:x",
            "dir\\x",
            "\\\\server\\share",
            "nul\0byte",
        ] {
            assert!(check_location(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn a_case_with_escaping_locations_is_refused_naming_the_field() {
        let case = |workspace: Value, outside: Value| {
            json!({"name": "n", "prompt": "p", "script": [], "expect": {},
                   "workspace": workspace, "outside": outside})
            .to_string()
        };
        let error = Case::parse(&case(
            json!({"files": {"../../../../tmp/x.txt": "x", "/tmp/abs.txt": "y"}}),
            json!({}),
        ))
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("workspace.files: `"), "{error}");
        let error = Case::parse(&case(
            json!({"symlinks": {"../l": "/etc/passwd"}}),
            json!({}),
        ))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("workspace.symlinks: `../l` contains `..`"),
            "{error}"
        );
        let error = Case::parse(&case(json!({"dirs": ["/abs"]}), json!({})))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("workspace.dirs: `/abs` is absolute"),
            "{error}"
        );
        let error = Case::parse(&case(json!({}), json!({"..\\x": "y"})))
            .unwrap_err()
            .to_string();
        assert!(error.contains("outside: "), "{error}");
        // Link targets stay free.
        assert!(
            Case::parse(&case(
                json!({"symlinks": {"l": "/etc/passwd", "m": "$OUTSIDE/../x"}}),
                json!({})
            ))
            .is_ok()
        );
    }

    #[test]
    fn fixture_locations_and_sources_must_stay_inside() {
        let case = |fixtures: Value| {
            json!({"name": "n", "prompt": "p", "script": [], "expect": {},
                   "workspace": {"files": {"notes.txt": "x"}}, "fixtures": fixtures})
            .to_string()
        };
        let parsed = Case::parse(&case(
            json!({"docs/a.pdf": "fixtures/a.pdf", "b.docx": "./b.docx"}),
        ))
        .unwrap();
        assert_eq!(parsed.fixtures.len(), 2);
        assert_eq!(parsed.cases_dir, None, "never read from the JSON");

        for (fixtures, wanted) in [
            (
                json!({"../x.pdf": "a.pdf"}),
                "fixtures: `../x.pdf` contains `..`",
            ),
            (
                json!({"/tmp/x.pdf": "a.pdf"}),
                "fixtures: `/tmp/x.pdf` is absolute",
            ),
            (
                json!({"C:/x.pdf": "a.pdf"}),
                "fixtures: `C:/x.pdf` starts with a drive",
            ),
            (json!({"": "a.pdf"}), "fixtures: `` names nothing"),
            (
                json!({"a.pdf": "../secret.pdf"}),
                "fixtures: source `../secret.pdf` contains `..`; sources must be relative \
                 paths inside the cases folder",
            ),
            (
                json!({"a.pdf": "fixtures/../../x"}),
                "fixtures: source `fixtures/../../x` contains `..`",
            ),
            (
                json!({"a.pdf": "/etc/passwd"}),
                "fixtures: source `/etc/passwd` is absolute",
            ),
            (
                json!({"a.pdf": "a\\b.pdf"}),
                "fixtures: source `a\\\\b.pdf` contains a backslash",
            ),
            (json!({"a.pdf": ""}), "fixtures: source `` names nothing"),
            (
                json!({"notes.txt": "a.pdf"}),
                "fixtures: `notes.txt` is also in workspace.files",
            ),
        ] {
            let error = Case::parse(&case(fixtures.clone()))
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(wanted), "{fixtures}: {error}");
        }
        // A number instead of a path is a format error, not a panic.
        assert!(Case::parse(&case(json!({"a.pdf": 3}))).is_err());
    }

    /// Any JSON value, with keys often drawn from the case format so the parser gets
    /// past the first field.
    fn any_json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            prop::sample::select(vec![
                "name",
                "prompt",
                "script",
                "expect",
                "workspace",
                "files",
                "dirs",
                "symlinks",
                "outside",
                "fixtures",
                "approvals",
                "decision",
                "tools",
                "limits",
                "status",
                "events",
                "capability",
                "risk",
                "max_steps",
            ])
            .prop_map(str::to_owned),
            "[a-z./\\\\:]{0,8}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "(\\.\\./|/|[a-z]|\\\\|:){0,6}".prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn location() -> impl Strategy<Value = String> {
        prop::collection::vec("[a-zA-Z0-9_ .-]{1,8}", 1..4).prop_filter_map(
            "plain names only",
            |names| {
                let location = names.join("/");
                check_location(&location).ok().map(|()| location)
            },
        )
    }

    fn text() -> impl Strategy<Value = String> {
        any::<String>()
    }

    fn files() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(location(), text(), 0..4)
    }

    fn case() -> impl Strategy<Value = Case> {
        let workspace = (files(), prop::collection::vec(location(), 0..3), files()).prop_map(
            |(files, dirs, symlinks)| WorkspaceSpec {
                files,
                dirs,
                symlinks,
            },
        );
        let approval = prop_oneof![
            prop::sample::select(vec!["approve", "reject"])
                .prop_map(|word| ApprovalEntry::Word(word.to_owned())),
            (prop::option::of(text()), prop::option::of(text())).prop_map(|(reason, path)| {
                ApprovalEntry::Full(ApprovalDecision {
                    decision: "approve".to_owned(),
                    edited_arguments: path.map(|path| json!({"path": path})),
                    reason,
                })
            }),
        ];
        let expect = (
            prop::option::of(prop::sample::select(vec!["completed", "failed"])),
            prop::option::of(files()),
            prop::option::of(any::<bool>()),
            prop::option::of(prop::collection::vec(location(), 0..3)),
        )
            .prop_map(|(status, files, outside_unchanged, absent)| Expect {
                status: status.map(str::to_owned),
                files,
                outside_unchanged,
                absent,
                ..Expect::default()
            });
        (
            text(),
            prop::option::of(text()),
            workspace,
            files(),
            text(),
            prop::collection::vec(approval, 0..3),
            (prop::option::of(1u32..50), prop::option::of(1u32..5)),
            expect,
        )
            .prop_map(
                |(name, description, workspace, outside, prompt, approvals, limits, expect)| Case {
                    name,
                    description,
                    workspace,
                    fixtures: BTreeMap::new(),
                    cases_dir: None,
                    skills: outside.clone(),
                    memory: None,
                    outside,
                    prompt: prompt.clone(),
                    script: json!([{"content": prompt}]),
                    approvals,
                    tools: Vec::new(),
                    mcp: None,
                    limits: CaseLimits {
                        max_steps: limits.0,
                        max_denials: limits.1,
                        max_tokens: None,
                    },
                    expect,
                    needs_landlock: false,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_json_never_panics_and_accepted_cases_stay_inside(value in any_json()) {
            if let Ok(case) = Case::parse(&value.to_string()) {
                let workspace = &case.workspace;
                for location in workspace.files.keys().chain(&workspace.dirs)
                    .chain(workspace.symlinks.keys()).chain(case.outside.keys())
                    .chain(case.fixtures.keys())
                {
                    prop_assert!(check_location(location).is_ok(), "{location:?}");
                }
                for source in case.fixtures.values() {
                    prop_assert!(check_source(source).is_ok(), "{source:?}");
                }
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = Case::parse(&text);
        }

        #[test]
        fn a_generated_case_parses_to_what_was_generated(case in case()) {
            let text = serde_json::to_string(&case).unwrap();
            let parsed = Case::parse(&text).unwrap();
            prop_assert_eq!(parsed, case);
        }

        #[test]
        fn a_generated_case_with_one_escaping_location_is_refused(
            case in case(),
            bad in prop::sample::select(vec!["../x", "/tmp/x", "a/../../x", "C:/x", "a\\b"]),
            field in 0usize..6,
        ) {
            let mut case = case;
            match field {
                0 => { case.workspace.files.insert(bad.to_owned(), String::new()); }
                1 => case.workspace.dirs.push(bad.to_owned()),
                2 => { case.workspace.symlinks.insert(bad.to_owned(), "/etc/passwd".to_owned()); }
                3 => { case.fixtures.insert(bad.to_owned(), "a.pdf".to_owned()); }
                4 => { case.fixtures.insert("fixture.bin".to_owned(), bad.to_owned()); }
                _ => { case.outside.insert(bad.to_owned(), String::new()); }
            }
            let text = serde_json::to_string(&case).unwrap();
            prop_assert!(Case::parse(&text).is_err());
        }
    }
}
