//! What an approved command did (issue 31): the workspace snapshot before it runs, its
//! changes recorded after it ends as `created`/`overwritten`/`deleted`/`moved`/
//! `folder_created` rows of `run_command` reverted file by file, `effects_unknown` for
//! what no kind describes or the snapshot did not keep, the card's `uncovered`, and
//! `[shell] snapshot_ignore`.
//!
//! The `run_command` here is a test tool of that name: it runs `sh -c SCRIPT` in the
//! workspace (unconfined: these tests are about what the task service records, not the
//! confinement, which pp-sandbox's and pp-cli's shell tests prove), and its card
//! carries the same `uncovered` measure the real tool's does.

use std::sync::Arc;

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_gate::Jail;
use pp_store::Store;
use pp_tasks::{
    CommandSnapshot, CreateTask, ModelSource, RevertRefusal, RevertSettings, TaskService,
    TaskSettings, Workspaces,
};
use pp_test_support::TempTree;
use pp_tools::shell::{IgnoreRules, SnapshotRules};
use pp_tools::{ProviderError, Provision, Scope, ToolProvider, Toolbox};
use pp_types::{
    Actor, Capability, ChangeKind, CommandPreview, EffectPreview, Risk, TaskState, ToolOutput,
    ToolSpec, WriteLabel,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fixture::{approve, pending_approval};

/// Offers the test `run_command` bound to the segment's workspace.
struct Shell {
    rules: SnapshotRules,
}

impl ToolProvider for Shell {
    fn name(&self) -> &str {
        "test-shell"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        provision.tool(Arc::new(Command {
            jail: Arc::clone(scope.workspace),
            rules: self.rules.clone(),
            spec: ToolSpec {
                name: "run_command".into(),
                description: "runs sh -c SCRIPT in the workspace".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"script": {"type": "string"}},
                    "required": ["script"]
                }),
                capability: Some(Capability::new("shell:execute")),
                risk: Risk::High,
                path_params: Vec::new(),
                root: pp_types::PathRoot::Workspace,
            },
        }));
        Ok(())
    }
}

struct Command {
    jail: Arc<Jail>,
    rules: SnapshotRules,
    spec: ToolSpec,
}

impl Tool for Command {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn preview<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        let script = arguments["script"].as_str().unwrap_or_default().to_owned();
        Box::pin(async move {
            Some(EffectPreview {
                target: "sh".into(),
                label: WriteLabel::Run,
                fingerprint: "command".into(),
                command: Some(CommandPreview {
                    argv: vec!["sh".into(), "-c".into(), script],
                    cwd: String::new(),
                    shell: true,
                    confined: false,
                    limits: pp_types::CommandLimits::default(),
                    stdin_bytes: None,
                    containment: None,
                    uncovered: Some(
                        pp_tools::shell::tree::measure(&self.jail, &self.rules).unwrap(),
                    ),
                }),
                ..EffectPreview::default()
            })
        })
    }

    /// As the real tool: a constant fingerprint, nothing about a command goes stale.
    fn target_state<'a>(
        &'a self,
        _context: &'a ToolContext,
        _arguments: &'a Value,
    ) -> BoxFuture<'a, Option<pp_types::TargetState>> {
        Box::pin(async {
            Some(pp_types::TargetState {
                identity: "run:".into(),
                fingerprint: "command".into(),
            })
        })
    }

    fn execute<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let script = arguments["script"].as_str().unwrap_or_default().to_owned();
        let root = self.jail.root().to_path_buf();
        Box::pin(async move {
            let output = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .current_dir(&root)
                .output()
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&output.stderr).into_owned();
            if output.status.success() {
                ToolOutput::success(format!("exit code 0 {text}"))
            } else {
                ToolOutput::error(format!("exit code {:?} {text}", output.status.code()))
            }
        })
    }
}

struct Setup {
    tree: TempTree,
    _data: tempfile::TempDir,
    service: TaskService,
}

fn setup(max_file: u64, max_total: u64, ignore: &[&str]) -> Setup {
    let tree = TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(&data.path().join("test.db")).unwrap();
    let ignore =
        IgnoreRules::new(&ignore.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).unwrap();
    let settings = TaskSettings {
        poll_interval: std::time::Duration::from_millis(20),
        revert: RevertSettings {
            max_bytes: max_file,
            ..RevertSettings::default()
        },
        command_snapshot: CommandSnapshot {
            max_bytes: max_total,
            ignore: ignore.clone(),
        },
        ..TaskSettings::default()
    };
    let rules = SnapshotRules {
        max_total_bytes: max_total,
        max_file_bytes: max_file,
        ignore,
    };
    let service = TaskService::build(
        store,
        settings,
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
        Toolbox::files().with(Arc::new(Shell { rules })),
        None,
    );
    Setup {
        tree,
        _data: data,
        service,
    }
}

/// Creates a task that asks to run `script`; returns it waiting for the approval.
async fn ask(setup: &Setup, script: &str) -> pp_types::TaskRecord {
    let task = setup
        .service
        .create(CreateTask {
            prompt: "run it".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(json!([
                {"tool_calls": [{"name": "run_command", "arguments": {"script": script}}]},
                {"content": "done"}
            ])),
        })
        .await
        .unwrap();
    let task = setup.service.run_now(&task.id).await.unwrap();
    assert_eq!(task.state, TaskState::WaitingApproval);
    task
}

/// Approves the task's pending call and waits for the task to end.
async fn approve_it(setup: &Setup, task: &pp_types::TaskRecord) -> pp_types::ApprovalId {
    let pending = pending_approval(&setup.service, &task.id).await;
    let state = setup
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap()
        .state;
    assert_eq!(state, TaskState::Completed);
    pending.id
}

fn rows(changes: &[pp_types::Change]) -> Vec<(ChangeKind, Option<&str>, Option<&str>)> {
    changes
        .iter()
        .map(|change| {
            (
                change.kind,
                change.path.as_deref(),
                change.from_path.as_deref(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_changes_are_recorded_and_reverted_file_by_file() {
    let setup = setup(1 << 20, 1 << 20, &[]);
    setup.tree.file("edit.txt", "before\n");
    setup.tree.file("gone.txt", "deleted content\n");
    setup.tree.file("old/name.txt", "moved content\n");
    setup.tree.file("same.txt", "untouched\n");
    let task = ask(
        &setup,
        "printf 'new\\n' > made.txt && printf 'after\\n' > edit.txt && rm gone.txt \
         && mv old/name.txt renamed.txt && mkdir folder",
    )
    .await;
    let approval = approve_it(&setup, &task).await;
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    let mut seen = rows(&changes);
    seen.sort_by_key(|row| row.1);
    assert_eq!(
        seen,
        vec![
            (ChangeKind::Overwritten, Some("edit.txt"), None),
            (ChangeKind::FolderCreated, Some("folder"), None),
            (ChangeKind::Deleted, Some("gone.txt"), None),
            (ChangeKind::Created, Some("made.txt"), None),
            (ChangeKind::Moved, Some("renamed.txt"), Some("old/name.txt")),
        ]
    );
    for change in &changes {
        assert_eq!(change.tool, "run_command");
        assert_eq!(change.approval_id.as_ref(), Some(&approval));
        assert!(change.revertible, "{change:?}");
    }
    // The card's outcome names them.
    let view = setup.service.approval_view(&approval).await.unwrap();
    let outcome = view.outcome.unwrap().message;
    assert!(
        outcome.starts_with("`run_command` changed 5 paths: "),
        "{outcome}"
    );
    assert!(outcome.contains("created `made.txt`"), "{outcome}");

    // Reverted one by one, each puts back what was there.
    let log = setup.service.changes();
    for change in &changes {
        log.revert(&change.id, Actor::Operator)
            .await
            .unwrap()
            .unwrap();
    }
    assert!(!setup.tree.exists("made.txt"));
    assert_eq!(setup.tree.read("edit.txt"), "before\n");
    assert_eq!(setup.tree.read("gone.txt"), "deleted content\n");
    assert_eq!(setup.tree.read("old/name.txt"), "moved content\n");
    assert!(!setup.tree.exists("renamed.txt"));
    assert!(!setup.tree.exists("folder"));
    assert_eq!(setup.tree.read("same.txt"), "untouched\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_after_the_file_changed_again_is_refused() {
    let setup = setup(1 << 20, 1 << 20, &[]);
    setup.tree.file("plan.md", "one\n");
    let task = ask(&setup, "printf 'two\\n' > plan.md").await;
    approve_it(&setup, &task).await;
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(
        rows(&changes),
        vec![(ChangeKind::Overwritten, Some("plan.md"), None)]
    );
    setup.tree.file("plan.md", "three, by a person\n");
    let refused = setup
        .service
        .changes()
        .revert(&changes[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(refused, RevertRefusal::ChangedSince { .. }),
        "{refused:?}"
    );
    assert_eq!(setup.tree.read("plan.md"), "three, by a person\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_the_card_says_so_and_the_change_is_effects_unknown() {
    // One file larger than the per-file cap, and a total budget that one small file
    // fills.
    let setup = setup(100, 20, &[]);
    setup.tree.file("big.bin", &"x".repeat(500));
    setup.tree.file("a.txt", "aaaaaaaaaa\n");
    setup.tree.file("b.txt", "bbbbbbbbbb\n");
    let task = ask(
        &setup,
        "printf 'y' >> big.bin && printf 'A' >> a.txt && printf 'B' >> b.txt",
    )
    .await;
    let pending = pending_approval(&setup.service, &task.id).await;
    let card = setup.service.approval_view(&pending.id).await.unwrap();
    let uncovered = card.command.unwrap().uncovered.unwrap();
    // big.bin too large (500), b.txt beyond the budget (11): a.txt (11) is kept.
    assert_eq!((uncovered.files, uncovered.bytes), (2, 511));
    approve_it(&setup, &task).await;
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    let mut seen = rows(&changes);
    seen.sort_by_key(|row| row.1);
    assert_eq!(
        seen,
        vec![
            (ChangeKind::Overwritten, Some("a.txt"), None),
            (ChangeKind::EffectsUnknown, Some("b.txt"), None),
            (ChangeKind::EffectsUnknown, Some("big.bin"), None),
        ]
    );
    let unknown = changes
        .iter()
        .find(|change| change.kind == ChangeKind::EffectsUnknown)
        .unwrap();
    assert!(!unknown.revertible);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_paths_are_neither_kept_nor_recorded() {
    let setup = setup(1 << 20, 1 << 20, &["cache/", "*.log"]);
    setup.tree.file("cache/a", "12345");
    setup.tree.file("run.log", "123");
    let task = ask(
        &setup,
        "printf x >> cache/a && printf y > cache/new && printf z >> run.log && printf w > kept.txt",
    )
    .await;
    let pending = pending_approval(&setup.service, &task.id).await;
    let card = setup.service.approval_view(&pending.id).await.unwrap();
    let uncovered = card.command.unwrap().uncovered.unwrap();
    assert_eq!(
        (uncovered.files, uncovered.bytes),
        (2, 8),
        "the ignored files"
    );
    approve_it(&setup, &task).await;
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(
        rows(&changes),
        vec![(ChangeKind::Created, Some("kept.txt"), None)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_change_and_a_new_link_are_effects_unknown_with_their_paths() {
    let setup = setup(1 << 20, 1 << 20, &[]);
    setup.tree.file("script.sh", "echo hi\n");
    let task = ask(
        &setup,
        "chmod 700 script.sh && ln -s script.sh link && mkfifo pipe",
    )
    .await;
    approve_it(&setup, &task).await;
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    let mut seen = rows(&changes);
    seen.sort_by_key(|row| row.1);
    assert_eq!(
        seen,
        vec![
            (ChangeKind::EffectsUnknown, Some("link"), None),
            (ChangeKind::EffectsUnknown, Some("pipe"), None),
            (ChangeKind::EffectsUnknown, Some("script.sh"), None),
        ]
    );
    let refused = setup
        .service
        .changes()
        .revert(&changes[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(refused, RevertRefusal::NotRevertible(_)),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_command_still_records_what_it_changed() {
    let setup = setup(1 << 20, 1 << 20, &[]);
    let task = ask(&setup, "printf half > half.txt; exit 3").await;
    let pending = pending_approval(&setup.service, &task.id).await;
    setup.service.resolve(&pending.id, approve()).await.unwrap();
    let changes = setup.service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(
        rows(&changes),
        vec![(ChangeKind::Created, Some("half.txt"), None)]
    );
    let view = setup.service.approval_view(&pending.id).await.unwrap();
    let outcome = view.outcome.unwrap().message;
    assert!(outcome.contains("created `half.txt`"), "{outcome}");
}
