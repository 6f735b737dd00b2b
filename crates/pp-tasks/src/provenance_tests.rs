//! Unit tests of [`Provenance::of`]: the worked cases, then generated conversations
//! checked for the rules (newest first, the cap, only since the last user message, the
//! kinds and the untrusted flag). Which built-in tool reads what, and the source each
//! names, is `pp_tools::input_of`'s (tested there); the calls here use tools and
//! arguments the task service may name.

use pp_types::{Actor, Message, TaskRecord, TaskState, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Input, InputKind, MAX_INPUTS, MAX_SOURCE_CHARS, Provenance};

const PENDING: &str = "pending";

fn task(created_by: Actor, origin: Option<&str>) -> TaskRecord {
    let mut task = crate::test_records::task("main", TaskState::WaitingApproval, None);
    task.created_by = created_by;
    task.origin = origin.map(str::to_owned);
    task
}

fn call(id: &str, name: &str, arguments: &Value) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_string(),
    }
}

fn turn(content: Option<&str>, calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        content: content.map(str::to_owned),
        tool_calls: calls,
        reasoning_content: None,
    }
}

/// A model turn making one call `id` of `name`, and its answer.
fn answered(id: &str, name: &str, arguments: &Value) -> [Message; 2] {
    [
        turn(None, vec![call(id, name, arguments)]),
        Message::tool(id, "the tool's answer"),
    ]
}

/// The turn that makes the pending write, with the model's `text`.
fn pending_turn(text: Option<&str>) -> Message {
    turn(text, vec![call(PENDING, "write_file", &json!({}))])
}

fn input(kind: InputKind, source: &str, untrusted: bool) -> Input {
    Input {
        kind,
        source: source.to_owned(),
        untrusted,
    }
}

#[test]
fn an_operators_prompt_is_a_trusted_prompt_and_the_models_text_is_kept_whole() {
    let text = "I will write the summary now.\n\nIt has two lines.";
    let messages = vec![
        Message::system("s"),
        Message::user("summarise"),
        pending_turn(Some(text)),
    ];
    let provenance = Provenance::of(&messages, PENDING, Some(&task(Actor::Operator, None)));
    assert_eq!(
        provenance,
        Provenance {
            model_text: Some(text.to_owned()),
            inputs: vec![input(InputKind::Prompt, "operator", false)],
            more: 0,
            untrusted_input: false,
        }
    );
    assert_eq!(
        serde_json::to_value(&provenance).unwrap(),
        json!({
            "model_text": text,
            "inputs": [{"kind": "prompt", "source": "operator", "untrusted": false}],
            "more": 0,
            "untrusted_input": false,
        })
    );
}

#[test]
fn a_team_users_prompt_names_the_user() {
    let messages = vec![Message::user("go"), pending_turn(None)];
    let mut task = task(Actor::Operator, None);
    task.created_by_user = Some("ada".into());
    let provenance = Provenance::of(&messages, PENDING, Some(&task));
    assert_eq!(provenance.inputs, [input(InputKind::Prompt, "ada", false)]);
}

#[test]
fn a_webhooks_prompt_and_a_file_read_are_untrusted_newest_first() {
    let mut messages = vec![Message::system("s"), Message::user("URGENT: approve")];
    messages.extend(answered("r1", "search_files", &json!({"pattern": "order"})));
    messages.push(pending_turn(Some("Writing as the mail asks.")));
    let provenance = Provenance::of(
        &messages,
        PENDING,
        Some(&task(Actor::Webhook, Some("forms"))),
    );
    assert_eq!(
        provenance.inputs,
        [
            input(InputKind::FileRead, "\"order\"", true),
            input(InputKind::Webhook, "forms", true),
        ]
    );
    assert!(provenance.untrusted_input);
    assert_eq!(provenance.more, 0);
}

#[test]
fn schedules_and_mcp_clients_name_their_origin_or_their_kind() {
    let messages = vec![Message::user("nightly"), pending_turn(None)];
    let of = |actor, origin| {
        Provenance::of(&messages, PENDING, Some(&task(actor, origin)))
            .inputs
            .remove(0)
    };
    assert_eq!(
        of(Actor::Scheduler, Some("invoices")),
        input(InputKind::Schedule, "invoices", true)
    );
    assert_eq!(
        of(Actor::McpClient, Some("claude-desktop 1.2")),
        input(InputKind::McpClient, "claude-desktop 1.2", true)
    );
    assert_eq!(
        of(Actor::Webhook, None),
        input(InputKind::Webhook, "webhook", true)
    );
    assert_eq!(
        of(Actor::Scheduler, None),
        input(InputKind::Schedule, "schedule", true)
    );
}

#[test]
fn a_later_chat_turn_is_a_message_and_only_what_followed_it_counts() {
    let mut messages = vec![Message::system("s"), Message::user("first question")];
    messages.extend(answered("old", "expand_skill", &json!({"name": "old"})));
    messages.push(turn(Some("first answer"), vec![]));
    messages.push(Message::user("now write it"));
    messages.extend(answered("new", "search_files", &json!({"pattern": "todo"})));
    messages.push(pending_turn(None));
    let provenance = Provenance::of(&messages, PENDING, Some(&task(Actor::Operator, None)));
    assert_eq!(
        provenance.inputs,
        [
            input(InputKind::FileRead, "\"todo\"", true),
            input(InputKind::Message, "operator", false),
        ]
    );
    assert_eq!(provenance.model_text, None);
}

/// Built-in tools map to the kinds of what `pp_tools::input_of` says they read (their
/// sources, tested there, fall back to the tool's name without arguments); MCP tools
/// are `mcp_output`; own reports and unknown tools are no input.
#[test]
fn each_tool_maps_to_its_kind() {
    let cases = [
        ("read_file", Some((InputKind::FileRead, "read_file"))),
        ("list_files", Some((InputKind::FileRead, "list_files"))),
        ("search_files", Some((InputKind::FileRead, "search_files"))),
        ("run_command", Some((InputKind::FileRead, "run_command"))),
        (
            "extract_document",
            Some((InputKind::Document, "extract_document")),
        ),
        (
            "extract_invoice",
            Some((InputKind::Document, "extract_invoice")),
        ),
        (
            "analyze_table",
            Some((InputKind::Document, "analyze_table")),
        ),
        ("expand_skill", Some((InputKind::Skill, "expand_skill"))),
        (
            "read_skill_file",
            Some((InputKind::Skill, "read_skill_file")),
        ),
        (
            "github__get_issue",
            Some((InputKind::McpOutput, "github:get_issue")),
        ),
        ("fs__write", Some((InputKind::McpOutput, "fs:write"))),
        ("no_such_tool", None),
        ("__tool", None),
        ("srv__", None),
    ];
    let reports = pp_tools::OWN_REPORTS.map(|name| (name, None));
    for (name, expected) in cases.into_iter().chain(reports) {
        let mut messages = vec![Message::user("go")];
        messages.extend(answered("c", name, &json!({})));
        messages.push(pending_turn(None));
        let provenance = Provenance::of(&messages, PENDING, None);
        let expected: Vec<Input> = expected
            .map(|(kind, source)| input(kind, source, true))
            .into_iter()
            .collect();
        assert_eq!(provenance.inputs, expected, "{name}");
        assert_eq!(provenance.untrusted_input, !expected.is_empty(), "{name}");
    }
}

#[test]
fn malformed_arguments_name_the_tool() {
    let messages = vec![
        Message::user("go"),
        turn(
            None,
            vec![ToolCall {
                id: "c".into(),
                name: "read_file".into(),
                arguments: "{not json".into(),
            }],
        ),
        Message::tool("c", "error: invalid JSON"),
        pending_turn(None),
    ];
    let provenance = Provenance::of(&messages, PENDING, None);
    assert_eq!(
        provenance.inputs,
        [input(InputKind::FileRead, "read_file", true)]
    );
}

#[test]
fn the_pending_turns_own_earlier_calls_are_not_inputs() {
    let messages = vec![
        Message::user("go"),
        turn(
            Some("Reading and writing at once."),
            vec![
                call("same", "read_file", &json!({})),
                call(PENDING, "write_file", &json!({})),
            ],
        ),
        Message::tool("same", "the file"),
    ];
    let provenance = Provenance::of(&messages, PENDING, Some(&task(Actor::Operator, None)));
    assert_eq!(
        provenance.inputs,
        [input(InputKind::Prompt, "operator", false)]
    );
    assert_eq!(
        provenance.model_text.as_deref(),
        Some("Reading and writing at once.")
    );
}

#[test]
fn an_unreadable_task_leaves_the_prompt_out_and_blank_text_is_null() {
    let mut messages = vec![Message::user("go")];
    messages.extend(answered("r", "expand_skill", &json!({"name": "a"})));
    messages.push(pending_turn(Some("  \n")));
    let provenance = Provenance::of(&messages, PENDING, None);
    assert_eq!(provenance.inputs, [input(InputKind::Skill, "a", true)]);
    assert_eq!(provenance.model_text, None);
}

#[test]
fn the_list_keeps_the_newest_twenty_and_counts_the_rest() {
    let mut messages = vec![Message::user("go")];
    for n in 0..25 {
        messages.extend(answered(
            &format!("r{n}"),
            "expand_skill",
            &json!({"name": format!("f{n}")}),
        ));
    }
    messages.push(pending_turn(None));
    let provenance = Provenance::of(&messages, PENDING, Some(&task(Actor::Operator, None)));
    assert_eq!(provenance.inputs.len(), MAX_INPUTS);
    // 25 reads and the prompt: the prompt and the 5 oldest reads are left out.
    assert_eq!(provenance.more, 6);
    let sources: Vec<&str> = provenance
        .inputs
        .iter()
        .map(|i| i.source.as_str())
        .collect();
    let expected: Vec<String> = (5..25).rev().map(|n| format!("f{n}")).collect();
    assert_eq!(sources, expected);
}

#[test]
fn a_long_source_is_cut() {
    let name = "p".repeat(MAX_SOURCE_CHARS * 2);
    let mut messages = vec![Message::user("go")];
    messages.extend(answered("r", "expand_skill", &json!({ "name": name })));
    messages.push(pending_turn(None));
    let source = Provenance::of(&messages, PENDING, None)
        .inputs
        .remove(0)
        .source;
    assert_eq!(source.chars().count(), MAX_SOURCE_CHARS);
    assert!(source.ends_with('…'), "{source}");
    assert!(source.starts_with("ppp"), "{source}");
}

#[test]
fn the_kinds_are_the_nine_documented_names() {
    assert_eq!(
        InputKind::NAMES,
        [
            "prompt",
            "message",
            "webhook",
            "schedule",
            "mcp_client",
            "mcp_output",
            "document",
            "file_read",
            "skill",
        ]
    );
    let trusted: Vec<InputKind> = InputKind::ALL
        .into_iter()
        .filter(|kind| !kind.untrusted())
        .collect();
    assert_eq!(trusted, [InputKind::Prompt, InputKind::Message]);
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The tools a generated turn calls: name, and the kind of its answer if it is an input.
const TOOLS: [(&str, Option<InputKind>); 6] = [
    ("search_files", Some(InputKind::FileRead)),
    ("extract_document", Some(InputKind::Document)),
    ("expand_skill", Some(InputKind::Skill)),
    ("srv__fetch", Some(InputKind::McpOutput)),
    ("write_file", None),
    ("memory_write", None),
];

/// The source a generated call of `name` named `n` shows.
fn generated_source(name: &str, n: &str) -> String {
    match name {
        "search_files" => format!("{n:?}"),
        "extract_document" => name.to_owned(),
        "srv__fetch" => "srv:fetch".to_owned(),
        _ => n.to_owned(),
    }
}

/// Generated conversations: earlier chat turns (whose reads must never count), then the
/// last user message, then model turns of 1–3 answered calls each, then the pending turn
/// with calls before the pending one (which must not count either). Every call's
/// argument names it (all but `extract_document`, which names no source here), so the
/// expected list is known.
#[test]
fn generated_conversations_follow_the_rules() {
    let actors = [
        Actor::Operator,
        Actor::Webhook,
        Actor::Scheduler,
        Actor::McpClient,
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..500 {
        let actor = actors[usize::try_from(rng.below(4)).unwrap()];
        let earlier_turns = rng.below(3);
        let mut messages = vec![Message::system("s")];
        for old in 0..earlier_turns {
            messages.push(Message::user(format!("earlier {old}")));
            messages.extend(answered(
                &format!("old{old}"),
                "expand_skill",
                &json!({"name": "old"}),
            ));
            messages.push(turn(Some("answer"), vec![]));
        }
        messages.push(Message::user("the last message"));
        // (kind, source) of every input after the prompt, oldest first.
        let mut expected: Vec<(InputKind, String)> = Vec::new();
        let mut n = 0;
        for _ in 0..rng.below(12) {
            let calls: Vec<ToolCall> = (0..=rng.below(3))
                .map(|_| {
                    let (name, kind) = TOOLS[usize::try_from(rng.below(6)).unwrap()];
                    n += 1;
                    let source = format!("s{n}");
                    if let Some(kind) = kind {
                        expected.push((kind, generated_source(name, &source)));
                    }
                    call(
                        &format!("c{n}"),
                        name,
                        &json!({"pattern": source, "name": source}),
                    )
                })
                .collect();
            let answers: Vec<Message> = calls
                .iter()
                .map(|call| Message::tool(&call.id, "answer"))
                .collect();
            messages.push(turn(None, calls));
            messages.extend(answers);
        }
        let before = rng.below(3);
        let mut last = vec![];
        for b in 0..before {
            last.push(call(
                &format!("same{b}"),
                "expand_skill",
                &json!({"name": "same"}),
            ));
        }
        last.push(call(PENDING, "write_file", &json!({})));
        messages.push(turn(Some("why"), last));
        for b in 0..before {
            messages.push(Message::tool(format!("same{b}"), "answer"));
        }

        let provenance = Provenance::of(&messages, PENDING, Some(&task(actor, Some("origin"))));
        let prompt_kind = match actor {
            Actor::Webhook => InputKind::Webhook,
            Actor::Scheduler => InputKind::Schedule,
            Actor::McpClient => InputKind::McpClient,
            _ if earlier_turns > 0 => InputKind::Message,
            _ => InputKind::Prompt,
        };
        let total = expected.len() + 1;
        assert_eq!(
            provenance.inputs.len(),
            total.min(MAX_INPUTS),
            "case {case}"
        );
        assert_eq!(
            provenance.more,
            total.saturating_sub(MAX_INPUTS),
            "case {case}"
        );
        // Newest first: the generated ones in reverse, then the prompt.
        let mut all: Vec<(InputKind, String)> = expected.into_iter().rev().collect();
        let prompt_source = if prompt_kind.untrusted() {
            "origin"
        } else {
            "operator"
        };
        all.push((prompt_kind, prompt_source.to_owned()));
        let shown: Vec<(InputKind, String)> = provenance
            .inputs
            .iter()
            .map(|input| (input.kind, input.source.clone()))
            .collect();
        assert_eq!(shown, all[..shown.len()], "case {case}");
        for input in &provenance.inputs {
            assert_eq!(input.untrusted, input.kind.untrusted(), "case {case}");
            assert_ne!(input.source, "old", "case {case}: before the last message");
            assert_ne!(
                input.source, "same",
                "case {case}: the pending turn's own call"
            );
        }
        let untrusted = all.iter().any(|(kind, _)| kind.untrusted());
        assert_eq!(provenance.untrusted_input, untrusted, "case {case}");
        assert_eq!(provenance.model_text.as_deref(), Some("why"), "case {case}");
    }
}
