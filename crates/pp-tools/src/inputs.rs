//! What the answer to a built-in tool's call brings in from outside PocketPilot, and
//! from where: an approval card's provenance (`pp-tasks`) lists it, so a person sees
//! what the model read before it asked for a side effect. The tools own their argument
//! names, so the task service asks here rather than reading them itself.
//!
//! Every built-in tool is either an input tool ([`input_of`] answers `Some`) or in
//! [`OWN_REPORTS`]: a test checks that a new tool is put in one or the other.

use serde_json::Value;

/// Where the answer to a built-in tool's call comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputSource {
    /// The workspace: a file read, a folder listed, a search's matches, or what a
    /// command printed (`read_file`, `list_files`, `search_files`, `run_command`).
    Workspace,
    /// A document's text or a table (`extract_document`, `extract_invoice`,
    /// `analyze_table`).
    Document,
    /// A skill's instructions or one of its files (`expand_skill`, `read_skill_file`).
    Skill,
}

/// The built-in tools whose answer is PocketPilot's own report of what it did (a write,
/// a move, a memory note), not outside text.
pub const OWN_REPORTS: [&str; 6] = [
    "write_file",
    "edit_file",
    "move_file",
    "delete_file",
    "make_dir",
    "memory_write",
];

/// What the answer to the built-in tool `name`, called with `arguments` (the raw JSON
/// text the model wrote, perhaps malformed), brings in, and from where: the path, query,
/// command or skill it names (the tool's name when its arguments do not say). `None`
/// for the tools of [`OWN_REPORTS`] and for names of no built-in tool (an MCP server's
/// tool, or one no one offered).
pub fn input_of(name: &str, arguments: &str) -> Option<(InputSource, String)> {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let (source, from) = match name {
        "read_file" | "list_files" => (InputSource::Workspace, text("path").map(str::to_owned)),
        "search_files" => {
            let query = text("pattern").map(|pattern| match text("path") {
                Some(path) => format!("{pattern:?} in {path}"),
                None => format!("{pattern:?}"),
            });
            (InputSource::Workspace, query)
        }
        "run_command" => {
            let line = text("command").map(|command| {
                let args = arguments.get("args").and_then(Value::as_array);
                std::iter::once(command)
                    .chain(args.into_iter().flatten().filter_map(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            (InputSource::Workspace, line)
        }
        "extract_document" | "extract_invoice" | "analyze_table" => {
            (InputSource::Document, text("path").map(str::to_owned))
        }
        "expand_skill" => (InputSource::Skill, text("name").map(str::to_owned)),
        "read_skill_file" => {
            let file = match (text("name"), text("path")) {
                (Some(name), Some(path)) => Some(format!("{name}/{path}")),
                (name, path) => name.or(path).map(str::to_owned),
            };
            (InputSource::Skill, file)
        }
        _ => return None,
    };
    Some((source, from.unwrap_or_else(|| name.to_owned())))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Map, Value, json};

    use super::{InputSource, OWN_REPORTS, input_of};

    #[test]
    fn each_input_tool_names_its_source() {
        let cases = [
            (
                "read_file",
                json!({"path": "a/b.md"}),
                InputSource::Workspace,
                "a/b.md",
            ),
            (
                "list_files",
                json!({"path": "docs"}),
                InputSource::Workspace,
                "docs",
            ),
            (
                "search_files",
                json!({"pattern": "x"}),
                InputSource::Workspace,
                "\"x\"",
            ),
            (
                "search_files",
                json!({"pattern": "todo", "path": "notes"}),
                InputSource::Workspace,
                "\"todo\" in notes",
            ),
            (
                "run_command",
                json!({"command": "git", "args": ["log", "-1"]}),
                InputSource::Workspace,
                "git log -1",
            ),
            (
                "extract_document",
                json!({"path": "a.pdf"}),
                InputSource::Document,
                "a.pdf",
            ),
            (
                "extract_invoice",
                json!({"path": "inv/"}),
                InputSource::Document,
                "inv/",
            ),
            (
                "analyze_table",
                json!({"path": "t.csv", "op": "describe"}),
                InputSource::Document,
                "t.csv",
            ),
            (
                "expand_skill",
                json!({"name": "tidy"}),
                InputSource::Skill,
                "tidy",
            ),
            (
                "read_skill_file",
                json!({"name": "tidy", "path": "ref.md"}),
                InputSource::Skill,
                "tidy/ref.md",
            ),
            (
                "read_file",
                json!("not an object"),
                InputSource::Workspace,
                "read_file",
            ),
        ];
        for (name, arguments, source, from) in cases {
            assert_eq!(
                input_of(name, &arguments.to_string()),
                Some((source, from.to_owned())),
                "{name}"
            );
        }
        assert_eq!(
            input_of("read_file", "{not json"),
            Some((InputSource::Workspace, "read_file".to_owned()))
        );
        for name in OWN_REPORTS
            .into_iter()
            .chain(["no_such_tool", "srv__fetch"])
        {
            assert_eq!(input_of(name, r#"{"path": "a"}"#), None, "{name}");
        }
    }

    /// Every built-in tool is classified, and an input tool's source comes from
    /// arguments its schema really has: called with every property set to its own name,
    /// the source is never the fallback (the tool's name).
    #[test]
    fn every_built_in_tool_is_classified_by_its_real_arguments() {
        let specs = crate::args_check::builtin_specs();
        let names: BTreeSet<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        let reports: BTreeSet<&str> = OWN_REPORTS.into_iter().collect();
        assert!(reports.is_subset(&names), "{reports:?} not all built in");
        for spec in &specs {
            let properties = spec.parameters["properties"].as_object().unwrap();
            let arguments: Map<String, Value> = properties
                .iter()
                .map(|(key, schema)| {
                    let value = if schema["type"] == "array" {
                        json!([key])
                    } else {
                        json!(key)
                    };
                    (key.clone(), value)
                })
                .collect();
            let input = input_of(&spec.name, &Value::Object(arguments).to_string());
            match input {
                None => assert!(
                    reports.contains(spec.name.as_str()),
                    "`{}` is neither an input tool nor an own report",
                    spec.name
                ),
                Some((_, from)) => {
                    assert!(!reports.contains(spec.name.as_str()), "{}", spec.name);
                    assert_ne!(from, spec.name, "`{}` names no source", spec.name);
                }
            }
        }
    }
}
