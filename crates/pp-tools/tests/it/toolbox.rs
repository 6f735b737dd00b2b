//! The toolbox: providers equip each segment; unclassifiable tools are refused except
//! through the test-only door.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_gate::Jail;
use pp_test_support::TempTree;
use pp_test_support::provider::{Fixed, Stamps};
use pp_tools::{Limits, ProviderError, Provision, Scope, ToolProvider, Toolbox, ToolboxError};
use pp_types::{Capability, Decision, DenyRule, PathRoot, Policy, Risk, ToolOutput, ToolSpec};
use serde_json::{Value, json};

struct Named(ToolSpec);

impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn execute<'a>(&'a self, _: &'a ToolContext, _: &'a Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::success("ok") })
    }
}

fn tool(name: &str, capability: Option<&str>) -> Arc<dyn Tool> {
    Arc::new(Named(ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object", "properties": {"name": {}, "path": {}}}),
        capability: capability.map(Capability::new),
        risk: Risk::Low,
        path_params: vec!["path".into()],
        root: PathRoot::Scoped {
            scope: "box".into(),
            key_param: "name".into(),
        },
    }))
}

fn equip(toolbox: &Toolbox, tree: &TempTree) -> Result<pp_tools::Equipment, ToolboxError> {
    let jail = Arc::new(Jail::new(tree.workspace()).expect("jail"));
    toolbox.equip(&jail, Limits::default())
}

#[test]
fn the_file_toolbox_offers_the_file_tools_and_search() {
    let tree = TempTree::new();
    let equipment = equip(&Toolbox::files(), &tree).expect("equipped");
    let names: Vec<&str> = equipment
        .registry
        .specs()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "delete_file",
            "edit_file",
            "list_files",
            "make_dir",
            "move_file",
            "read_file",
            "search_files",
            "write_file"
        ]
    );
    assert_eq!(Toolbox::files().provider_names(), ["files"]);
}

#[test]
fn unclassifiable_tools_are_refused_except_through_the_test_door() {
    let tree = TempTree::new();
    for capability in [None, Some("box:frobnicate"), Some("")] {
        let toolbox = Toolbox::files().with(Arc::new(Fixed::new(
            "odd",
            vec![tool("odd_tool", capability)],
        )));
        let error = equip(&toolbox, &tree).err().expect("refused");
        assert!(
            matches!(&error, ToolboxError::Unclassified { provider, tool, .. }
                if provider == "odd" && tool == "odd_tool"),
            "{capability:?}: {error}"
        );
    }
    let toolbox = Toolbox::files().with_unclassified_for_evals(vec![tool("odd_tool", None)]);
    let equipment = equip(&toolbox, &tree).expect("the test door registers it");
    let spec = equipment
        .registry
        .get("odd_tool")
        .expect("registered")
        .spec()
        .clone();
    // ...and the engine still denies it by itself.
    assert!(matches!(
        equipment.gate.evaluate(&spec, &json!({})),
        Decision::Deny(denial) if denial.rule == DenyRule::MissingCapability
    ));
}

#[test]
fn duplicate_names_across_providers_are_refused() {
    let tree = TempTree::new();
    let toolbox = Toolbox::files().with(Arc::new(Fixed::new(
        "again",
        vec![tool("read_file", Some("file:read"))],
    )));
    let error = equip(&toolbox, &tree).err().expect("refused");
    assert!(error.to_string().contains("already registered"), "{error}");
}

/// Registers a scoped root and a prompt section, and counts its segments.
#[derive(Default)]
struct Rooted(AtomicUsize);

impl ToolProvider for Rooted {
    fn name(&self) -> &str {
        "rooted"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let folder = scope
            .workspace
            .check("inner")
            .map_err(|e| ProviderError(e.to_string()))?;
        let root = scope.workspace.root().join(folder);
        let jail = Jail::new(&root).map_err(|e| ProviderError(e.to_string()))?;
        provision.root(PathRoot::key("box", "inner"), Arc::new(jail));
        provision.tool(tool("box_read", Some("box:read")));
        provision
            .prompt()
            .skills
            .push(("inner".into(), "a box".into()));
        Ok(())
    }
}

#[test]
fn providers_add_roots_and_prompt_sections_to_every_fresh_segment() {
    let tree = TempTree::new();
    tree.file("inner/x.txt", "x");
    tree.file("outer.txt", "o");
    let rooted = Arc::new(Rooted::default());
    let toolbox = Toolbox::files().with(Arc::clone(&rooted) as Arc<dyn ToolProvider>);
    let first = equip(&toolbox, &tree).expect("equipped");
    let second = equip(&toolbox, &tree).expect("equipped");
    assert_eq!(rooted.0.load(Ordering::SeqCst), 2, "asked once per segment");
    assert!(
        !Arc::ptr_eq(first.gate.jail(), second.gate.jail()),
        "fresh jails"
    );
    let spec = first
        .registry
        .get("box_read")
        .expect("offered")
        .spec()
        .clone();
    let decide = |arguments: Value| first.gate.evaluate(&spec, &arguments);
    assert_eq!(
        decide(json!({"name": "inner", "path": "x.txt"})),
        Decision::Allow
    );
    assert!(matches!(
        decide(json!({"name": "inner", "path": "../outer.txt"})),
        Decision::Deny(denial) if denial.rule == DenyRule::Escapes
    ));
    assert_eq!(
        first.prompt.skills,
        [("inner".to_owned(), "a box".to_owned())]
    );
}

#[test]
fn a_failing_provider_is_named() {
    struct Broken;
    impl ToolProvider for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn provide(&self, _: &Scope<'_>, _: &mut Provision) -> Result<(), ProviderError> {
            Err(ProviderError("the folder is gone".into()))
        }
    }
    let tree = TempTree::new();
    let error = equip(&Toolbox::files().with(Arc::new(Broken)), &tree)
        .err()
        .expect("fails");
    assert_eq!(
        error.to_string(),
        "tool provider `broken` failed: the folder is gone"
    );
}

#[test]
fn a_provider_outside_this_crate_plugs_in() {
    let tree = TempTree::new();
    let equipment = equip(&Toolbox::files().with(Arc::new(Stamps)), &tree).expect("equipped");
    let spec = equipment
        .registry
        .get("stamp_files")
        .expect("offered")
        .spec()
        .clone();
    assert_eq!(spec.path_params, ["paths[]"]);
    assert_eq!(
        equipment
            .gate
            .evaluate(&spec, &json!({"paths": ["a", "b"], "stamp": "s"})),
        Decision::Ask {
            action: "update".into()
        }
    );
}
