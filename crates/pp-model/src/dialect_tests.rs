//! Generative tests of both dialects through [`Dialect`]:
//! - tool calls streamed as fragments (arguments split anywhere, calls interleaved, the
//!   bytes cut anywhere) come out the same as the calls that were sent, and the same as
//!   the non-streamed answer carrying them;
//! - arbitrary JSON (and bytes) given to the body parser or the stream accumulator never
//!   panics: an answer or an error, nothing else.

use std::sync::atomic::AtomicU64;

use pp_agent::{ModelError, ModelResponse};
use pp_types::ToolCall;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{Context, Dialect, StreamAccumulator};
use crate::anthropic::Messages;
use crate::openai::ChatCompletions;
use crate::sse::SseParser;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Runs `body` with a fresh context (generated ids start at `call_pp_0`).
fn with_context<T>(body: impl FnOnce(&Context<'_>) -> T) -> T {
    let ids = AtomicU64::new(0);
    let context = Context {
        model: "test-model",
        max_tokens: None,
        temperature: None,
        stream: true,
        base_url: "http://127.0.0.1:1/v1",
        observer: None,
        generated_ids: &ids,
    };
    body(&context)
}

/// Feeds `chunks` through the SSE parser into `D`'s accumulator the way the transport
/// does: stop at the event that completes the stream, else deliver the open last event.
fn assemble<D: Dialect>(
    context: &Context<'_>,
    chunks: &[&[u8]],
) -> Result<ModelResponse, ModelError> {
    let mut parser = SseParser::default();
    let mut stream = D::Stream::default();
    let mut done = false;
    'chunks: for chunk in chunks {
        for event in parser.push(chunk) {
            if stream.push(context, &event.data)? {
                done = true;
                break 'chunks;
            }
        }
    }
    if !done && let Some(event) = parser.finish() {
        stream.push(context, &event.data)?;
    }
    stream.finish(context)
}

/// A position in `0..size` (`size > 0`) picked by a generated number.
fn pick(number: u32, size: usize) -> usize {
    usize::try_from(number).unwrap_or(usize::MAX) % size
}

/// `bytes` cut at `cuts` (positions, in any order, repeats allowed).
fn cut<'a>(bytes: &'a [u8], cuts: &[u32]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|cut| pick(*cut, bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for point in points {
        pieces.push(&bytes[start..point]);
        start = point;
    }
    pieces.push(&bytes[start..]);
    pieces
}

/// `text` cut into pieces at char boundaries picked by `cuts`.
fn fragments(text: &str, cuts: &[u32]) -> Vec<String> {
    let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).skip(1).collect();
    let mut points: Vec<usize> = if boundaries.is_empty() {
        Vec::new()
    } else {
        cuts.iter()
            .map(|cut| boundaries[pick(*cut, boundaries.len())])
            .collect()
    };
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for point in points {
        pieces.push(text[start..point].to_owned());
        start = point;
    }
    pieces.push(text[start..].to_owned());
    pieces
}

// ---------------------------------------------------------------------------------------
// Generated answers

/// A tool call the server means to send, and how it sends it.
#[derive(Debug, Clone)]
struct SentCall {
    /// `None`: the server sends no id and one is generated.
    id: Option<String>,
    name: String,
    /// The arguments object.
    arguments: Value,
    /// Where the arguments text is split into fragments.
    splits: Vec<u32>,
    /// Whether the id / the name are repeated in every fragment (some servers do).
    repeat_id: bool,
    repeat_name: bool,
}

/// A whole answer: optional text, tool calls, and how the stream is laid out.
#[derive(Debug, Clone)]
struct SentAnswer {
    text: Option<String>,
    calls: Vec<SentCall>,
    /// Picks the next fragment among the calls under way (interleaving them).
    schedule: Vec<u32>,
    /// For OpenAI: whether a fragment shares the previous fragment's chunk.
    joins: Vec<bool>,
    /// Where the bytes of the stream are cut.
    cuts: Vec<u32>,
    /// Whether lines end `\r\n` instead of `\n`.
    crlf: bool,
}

/// Arguments objects: strings (any unicode, quotes and escapes), integers, booleans,
/// nulls, nested lists and objects. No floats: their text need not survive a round trip.
fn json_arguments() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        Just(Value::String("\"{}[],:\\\n".to_owned())),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,8}|path|content", value, 0..4)
        .prop_map(|map| Value::Object(map.into_iter().collect()))
}

fn sent_call() -> impl Strategy<Value = SentCall> {
    (
        proptest::option::weighted(0.8, "[A-Za-z0-9]{1,10}"),
        "[a-z_]{1,16}",
        json_arguments(),
        prop::collection::vec(any::<u32>(), 0..6),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(id, name, arguments, splits, repeat_id, repeat_name)| SentCall {
                id,
                name,
                arguments,
                splits,
                repeat_id,
                repeat_name,
            },
        )
}

fn sent_answer() -> impl Strategy<Value = SentAnswer> {
    (
        proptest::option::of(".{1,20}"),
        prop::collection::vec(sent_call(), 1..4),
        prop::collection::vec(any::<u32>(), 32),
        prop::collection::vec(any::<bool>(), 32),
        prop::collection::vec(any::<u32>(), 0..10),
        any::<bool>(),
    )
        .prop_map(|(text, mut calls, schedule, joins, cuts, crlf)| {
            // Ids are unique within a turn; number them so random ones never collide.
            for (number, call) in calls.iter_mut().enumerate() {
                if let Some(id) = &mut call.id {
                    *id = format!("call_{number}_{id}");
                }
            }
            SentAnswer {
                text,
                calls,
                schedule,
                joins,
                cuts,
                crlf,
            }
        })
}

impl SentAnswer {
    /// The calls the model must come back with: missing ids generated in call order.
    fn expected(&self) -> Vec<ToolCall> {
        let mut generated = 0;
        self.calls
            .iter()
            .map(|call| ToolCall {
                id: call.id.clone().unwrap_or_else(|| {
                    generated += 1;
                    format!("call_pp_{}", generated - 1)
                }),
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
            })
            .collect()
    }

    /// Each call's argument fragments, in the order the stream sends them: `(call,
    /// fragment number, text)`. A call starts only after the one before it started
    /// (the turn's order is the order calls start); fragments of started calls
    /// interleave as `schedule` says.
    fn fragment_order(&self) -> Vec<(usize, usize, String)> {
        let pieces: Vec<Vec<String>> = self
            .calls
            .iter()
            .map(|call| fragments(&call.arguments.to_string(), &call.splits))
            .collect();
        let mut next = vec![0usize; pieces.len()];
        let mut started = 0usize;
        let mut order = Vec::new();
        let mut step = 0usize;
        loop {
            let mut candidates: Vec<usize> = (0..started)
                .filter(|&call| next[call] < pieces[call].len())
                .collect();
            if started < pieces.len() {
                candidates.push(started);
            }
            if candidates.is_empty() {
                return order;
            }
            let pick = pick(self.schedule[step % self.schedule.len()], candidates.len());
            step += 1;
            let call = candidates[pick];
            if call == started {
                started += 1;
            }
            order.push((call, next[call], pieces[call][next[call]].clone()));
            next[call] += 1;
        }
    }

    fn line_end(&self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }

    /// The answer as an OpenAI chat-completions stream.
    fn openai_stream(&self) -> Vec<u8> {
        let end = self.line_end();
        let mut text = String::new();
        let mut chunk = |delta: Value| {
            let value = json!({"id": "x", "choices": [{"index": 0, "delta": delta}]});
            text.push_str(&format!("data: {value}{end}{end}"));
        };
        chunk(json!({"role": "assistant", "content": ""}));
        if let Some(content) = &self.text {
            chunk(json!({ "content": content }));
        }
        let mut pending: Vec<Value> = Vec::new();
        for (number, (call, fragment, arguments)) in self.fragment_order().into_iter().enumerate() {
            let sent = &self.calls[call];
            let mut function = Map::new();
            if fragment == 0 || sent.repeat_name {
                function.insert("name".into(), sent.name.clone().into());
            }
            function.insert("arguments".into(), arguments.into());
            let mut piece = Map::new();
            piece.insert("index".into(), call.into());
            if let Some(id) = sent.id.as_ref().filter(|_| fragment == 0 || sent.repeat_id) {
                piece.insert("id".into(), id.clone().into());
                piece.insert("type".into(), "function".into());
            }
            piece.insert("function".into(), Value::Object(function));
            if !pending.is_empty() && !self.joins[number % self.joins.len()] {
                chunk(json!({ "tool_calls": std::mem::take(&mut pending) }));
            }
            pending.push(Value::Object(piece));
        }
        if !pending.is_empty() {
            chunk(json!({ "tool_calls": pending }));
        }
        text.push_str(&format!(
            "data: {}{end}{end}",
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
        ));
        text.push_str(&format!("data: [DONE]{end}{end}"));
        text.into_bytes()
    }

    /// The same answer, not streamed.
    fn openai_body(&self) -> Vec<u8> {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|call| {
                let mut value = json!({
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments.to_string()},
                });
                if let Some(id) = &call.id {
                    value["id"] = id.clone().into();
                }
                value
            })
            .collect();
        json!({"choices": [{"index": 0, "message": {
            "role": "assistant",
            "content": self.text,
            "tool_calls": calls,
        }}]})
        .to_string()
        .into_bytes()
    }

    /// The answer as an Anthropic Messages stream (named events, blocks by index).
    fn anthropic_stream(&self) -> Vec<u8> {
        let end = self.line_end();
        let mut text = String::new();
        let mut event = |value: Value| {
            let name = value["type"].as_str().unwrap_or_default().to_owned();
            text.push_str(&format!("event: {name}{end}data: {value}{end}{end}"));
        };
        event(json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}));
        let offset = usize::from(self.text.is_some());
        if let Some(content) = &self.text {
            event(json!({"type": "content_block_start", "index": 0,
                         "content_block": {"type": "text", "text": ""}}));
            event(json!({"type": "content_block_delta", "index": 0,
                         "delta": {"type": "text_delta", "text": content}}));
            event(json!({"type": "content_block_stop", "index": 0}));
        }
        for (call, fragment, arguments) in self.fragment_order() {
            let sent = &self.calls[call];
            let index = call + offset;
            if fragment == 0 {
                let mut block = json!({"type": "tool_use", "name": sent.name, "input": {}});
                if let Some(id) = &sent.id {
                    block["id"] = id.clone().into();
                }
                event(json!({"type": "content_block_start", "index": index,
                             "content_block": block}));
            }
            event(json!({"type": "content_block_delta", "index": index,
                         "delta": {"type": "input_json_delta", "partial_json": arguments}}));
        }
        event(json!({"type": "message_delta", "usage": {"output_tokens": 4}}));
        event(json!({"type": "message_stop"}));
        text.into_bytes()
    }

    /// The same answer, not streamed.
    fn anthropic_body(&self) -> Vec<u8> {
        let mut content: Vec<Value> = Vec::new();
        if let Some(text) = &self.text {
            content.push(json!({"type": "text", "text": text}));
        }
        for call in &self.calls {
            let mut block = json!({"type": "tool_use", "name": call.name, "input": call.arguments});
            if let Some(id) = &call.id {
                block["id"] = id.clone().into();
            }
            content.push(block);
        }
        json!({"content": content, "usage": {"input_tokens": 3, "output_tokens": 4}})
            .to_string()
            .into_bytes()
    }
}

/// Checks one dialect: the stream, cut anywhere and fed byte by byte, and the whole
/// body all give the calls and text that were sent.
fn check_answer<D: Dialect>(
    answer: &SentAnswer,
    stream: &[u8],
    body: &[u8],
) -> Result<(), TestCaseError> {
    let expected = answer.expected();
    let whole = with_context(|context| assemble::<D>(context, &[stream]))
        .map_err(|error| TestCaseError::fail(error.message))?;
    prop_assert_eq!(&whole.tool_calls, &expected);
    prop_assert_eq!(&whole.content, &answer.text);
    let pieces = with_context(|context| assemble::<D>(context, &cut(stream, &answer.cuts)))
        .map_err(|error| TestCaseError::fail(error.message))?;
    prop_assert_eq!(&pieces, &whole);
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    let one_by_one = with_context(|context| assemble::<D>(context, &bytes))
        .map_err(|error| TestCaseError::fail(error.message))?;
    prop_assert_eq!(&one_by_one, &whole);
    let parsed = with_context(|context| D::parse_body(context, body))
        .map_err(|error| TestCaseError::fail(error.message))?;
    prop_assert_eq!(&parsed.tool_calls, &expected);
    prop_assert_eq!(&parsed.content, &answer.text);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Arbitrary JSON

/// Keys and strings the parsers look for, so arbitrary values reach their branches.
const WORDS: [&str; 34] = [
    "choices",
    "index",
    "message",
    "delta",
    "content",
    "reasoning_content",
    "reasoning",
    "tool_calls",
    "function_call",
    "function",
    "name",
    "arguments",
    "id",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "error",
    "type",
    "text",
    "thinking",
    "content_block",
    "input",
    "partial_json",
    "tool_use",
    "text_delta",
    "thinking_delta",
    "input_json_delta",
    "message_start",
    "content_block_start",
    "content_block_delta",
    "message_stop",
    "[DONE]",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(WORDS.to_vec()).prop_map(str::to_owned),
        1 => ".{0,6}",
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(vec![0u64, 1, 2, u64::MAX]).prop_map(Value::from),
        word().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((word(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// An answer or an error with a message: anything else (a panic) fails the test.
fn sane(result: &Result<ModelResponse, ModelError>) -> Result<(), TestCaseError> {
    if let Err(error) = result {
        prop_assert!(!error.message.is_empty());
    }
    Ok(())
}

fn check_any_body<D: Dialect>(body: &[u8]) -> Result<(), TestCaseError> {
    sane(&with_context(|context| D::parse_body(context, body)))
}

fn check_any_events<D: Dialect>(events: &[String]) -> Result<(), TestCaseError> {
    let result = with_context(|context| {
        let mut stream = D::Stream::default();
        for data in events {
            if stream.push(context, data)? {
                break;
            }
        }
        stream.finish(context)
    });
    sane(&result)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn openai_streamed_tool_calls_survive_any_chunking(answer in sent_answer()) {
        check_answer::<ChatCompletions>(&answer, &answer.openai_stream(), &answer.openai_body())?;
    }

    #[test]
    fn anthropic_streamed_tool_calls_survive_any_chunking(answer in sent_answer()) {
        check_answer::<Messages>(&answer, &answer.anthropic_stream(), &answer.anthropic_body())?;
    }

    #[test]
    fn arbitrary_json_bodies_never_panic(value in any_json()) {
        let body = value.to_string();
        check_any_body::<ChatCompletions>(body.as_bytes())?;
        check_any_body::<Messages>(body.as_bytes())?;
        // The same value where each parser expects its payload.
        let wrapped = json!({"choices": [{"message": value, "delta": value}],
                             "content": [value], "usage": value});
        check_any_body::<ChatCompletions>(wrapped.to_string().as_bytes())?;
        check_any_body::<Messages>(wrapped.to_string().as_bytes())?;
    }

    #[test]
    fn arbitrary_bytes_as_bodies_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check_any_body::<ChatCompletions>(&bytes)?;
        check_any_body::<Messages>(&bytes)?;
    }

    #[test]
    fn arbitrary_json_events_never_panic(values in prop::collection::vec(any_json(), 0..8)) {
        let events: Vec<String> = values.iter().map(Value::to_string).collect();
        check_any_events::<ChatCompletions>(&events)?;
        check_any_events::<Messages>(&events)?;
        // Wrapped where each accumulator looks: OpenAI deltas, Anthropic event fields.
        let openai: Vec<String> = values
            .iter()
            .map(|value| json!({"choices": [{"index": 0, "delta": value}]}).to_string())
            .collect();
        check_any_events::<ChatCompletions>(&openai)?;
        let anthropic: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(number, value)| {
                let kind = ["content_block_start", "content_block_delta", "message_start"]
                    [number % 3];
                json!({"type": kind, "index": number % 2, "content_block": value,
                       "delta": value, "message": value})
                .to_string()
            })
            .collect();
        check_any_events::<Messages>(&anthropic)?;
    }
}

/// Fixed cases: two OpenAI calls whose fragments interleave, the second without an id,
/// the name repeated in every fragment; and the Anthropic stream of the same calls.
#[test]
fn regression_interleaved_calls_without_id() {
    let answer = SentAnswer {
        text: None,
        calls: vec![
            SentCall {
                id: Some("call_a".into()),
                name: "read_file".into(),
                arguments: json!({"path": "a.txt"}),
                splits: vec![3, 6],
                repeat_id: false,
                repeat_name: true,
            },
            SentCall {
                id: None,
                name: "write_file".into(),
                arguments: json!({"path": "b.txt", "content": "é\"}"}),
                splits: vec![5],
                repeat_id: false,
                repeat_name: true,
            },
        ],
        schedule: vec![0, 9, 0, 9],
        joins: vec![false, true],
        cuts: vec![5],
        crlf: true,
    };
    let order: Vec<usize> = answer
        .fragment_order()
        .iter()
        .map(|(call, _, _)| *call)
        .collect();
    assert_eq!(order, vec![0, 1, 0, 1, 0]);
    let expected = vec![
        ToolCall {
            id: "call_a".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        },
        ToolCall {
            id: "call_pp_0".into(),
            name: "write_file".into(),
            arguments: r#"{"content":"é\"}","path":"b.txt"}"#.into(),
        },
    ];
    assert_eq!(answer.expected(), expected);
    check_answer::<ChatCompletions>(&answer, &answer.openai_stream(), &answer.openai_body())
        .unwrap();
    check_answer::<Messages>(
        &answer,
        &answer.anthropic_stream(),
        &answer.anthropic_body(),
    )
    .unwrap();
}
