//! Every built-in tool's spec (name, description, JSON schema, capability, risk, path
//! pointers, root) stays byte-for-byte what `tests/fixtures/tool_schemas.json` holds:
//! the schema is what the model sees, so a refactor of how a tool reads its arguments
//! must not change it. `UPDATE_TOOL_SCHEMAS=1 cargo test -p pp-tools --test it schemas`
//! rewrites the fixture (review the diff: a change is a change of what the model sees).

use std::path::Path;
use std::sync::Arc;

use pp_gate::Jail;
use pp_test_support::TempTree;
use pp_test_support::skills::{skill_md, write_skill};
use pp_tools::{
    DocsProvider, DocsSettings, Limits, MemoryProvider, MemorySettings, ShellProvider,
    ShellSettings, SkillsProvider, SkillsSettings, Toolbox,
};
use pp_types::ToolSpec;

/// The fixture, relative to the crate.
const FIXTURE: &str = "tests/fixtures/tool_schemas.json";

/// Every tool a [`Toolbox`] can build, with every provider on (and `run_command`
/// offered unconfined, so it is offered whatever the kernel).
pub(crate) fn every_builtin_spec() -> Vec<ToolSpec> {
    let tree = TempTree::new();
    let home = tree.base().join("home-skills");
    std::fs::create_dir_all(&home).expect("skills folder");
    write_skill(
        &home,
        "demo",
        &[("SKILL.md", &skill_md("demo", "The demo skill.", "Body.\n"))],
    );
    let data = tree.base().join("data");
    std::fs::create_dir_all(&data).expect("data folder");
    let parser = pp_docs::Parser::new("/bin/false".into(), Vec::new());
    let mut shell = ShellSettings::new(
        pp_sandbox::Sandbox::new("pocketpilot".into(), vec!["__sandbox".to_owned()]),
        data.clone(),
    );
    shell.support = pp_sandbox::Support::default();
    shell.set_containment(pp_sandbox::Containment::default());
    shell.allow_unconfined = true;
    let toolbox = Toolbox::files()
        .with(Arc::new(DocsProvider::new(DocsSettings::new(parser))))
        .with(Arc::new(MemoryProvider::new(MemorySettings::new(&data))))
        .with(Arc::new(ShellProvider::new(shell)))
        .with(Arc::new(SkillsProvider::new(SkillsSettings::new(&home))));
    let jail = Arc::new(Jail::new(tree.workspace()).expect("workspace jail"));
    let equipment = toolbox
        .equip(&jail, Limits::default())
        .expect("every provider equips");
    equipment.registry.specs().cloned().collect()
}

fn snapshot(specs: &[ToolSpec]) -> String {
    let by_name: serde_json::Map<String, serde_json::Value> = specs
        .iter()
        .map(|spec| {
            let value = serde_json::to_value(spec).expect("a spec serialises");
            (spec.name.clone(), value)
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&by_name).expect("the snapshot serialises");
    text.push('\n');
    text
}

#[test]
fn every_builtin_tool_spec_is_unchanged() {
    let specs = every_builtin_spec();
    let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "analyze_table",
            "delete_file",
            "edit_file",
            "expand_skill",
            "extract_document",
            "extract_invoice",
            "list_files",
            "make_dir",
            "memory_write",
            "move_file",
            "read_file",
            "read_skill_file",
            "run_command",
            "search_files",
            "write_file"
        ],
        "a new built-in tool belongs in the fixture"
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let now = snapshot(&specs);
    if std::env::var_os("UPDATE_TOOL_SCHEMAS").is_some() {
        std::fs::write(&path, &now).expect("write the fixture");
    }
    let fixture = std::fs::read_to_string(&path).expect("the fixture exists");
    let fixture: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&fixture).expect("the fixture is JSON");
    for spec in &specs {
        let Some(expected) = fixture.get(&spec.name) else {
            panic!("`{}` is missing from {FIXTURE}", spec.name);
        };
        // Byte for byte: the serialised parameters are what the model receives.
        let sent = serde_json::to_string(&spec.parameters).expect("parameters serialise");
        let kept = serde_json::to_string(&expected["parameters"]).expect("fixture serialises");
        assert_eq!(sent, kept, "the schema of `{}` changed", spec.name);
        let whole = serde_json::to_value(spec).expect("a spec serialises");
        assert_eq!(&whole, expected, "the spec of `{}` changed", spec.name);
    }
    assert_eq!(
        fixture.len(),
        specs.len(),
        "{FIXTURE} names a tool no longer built"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("the fixture exists"),
        now,
        "{FIXTURE} differs byte for byte"
    );
}
