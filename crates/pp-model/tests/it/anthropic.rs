//! The Anthropic Messages provider.

use pp_agent::{ModelErrorKind, ModelRequest};
use pp_model::{ANTHROPIC_VERSION, ProviderKind};
use pp_types::{Message, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{call, complete, model, read_file_tool, settings, simple_request};
use pp_test_support::mock::{MockServer, Reply};

fn sse(events: &[serde_json::Value]) -> Reply {
    let text: Vec<u8> = events
        .iter()
        .flat_map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
            .into_bytes()
        })
        .collect();
    Reply::stream(vec![(std::time::Duration::ZERO, text)])
}

#[tokio::test(flavor = "current_thread")]
async fn request_shape_merges_tool_results_and_hoists_system() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 20, "output_tokens": 4}}),
    )])
    .await;
    let mut settings = settings(ProviderKind::Anthropic, &server.url());
    settings.stream = false;
    let request = ModelRequest {
        messages: vec![
            Message::system("you are a test"),
            Message::user("read two files"),
            Message::Assistant {
                content: Some("reading".into()),
                tool_calls: vec![
                    call("toolu_1", "read_file", r#"{"path":"a"}"#),
                    call("toolu_2", "read_file", "{not json"),
                ],
                reasoning_content: Some("not sent".into()),
            },
            Message::tool("toolu_1", "A"),
            Message::tool("toolu_2", "error: arguments are not valid json"),
            Message::user("and then?"),
        ],
        tools: [read_file_tool()].into(),
    };
    let response = complete(&model(&settings), &request).await.unwrap();
    assert_eq!(response.content.as_deref(), Some("done"));
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 20,
            completion_tokens: 4,
            ..Usage::default()
        })
    );
    let sent = server.only_request();
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-test-secret-123"));
    assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.json(),
        json!({
            "model": "test-model",
            "max_tokens": 4096,
            "system": "you are a test",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "read two files"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file",
                     "input": {"_unparsed_arguments": "{not json"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "toolu_2",
                     "content": "error: arguments are not valid json"},
                    {"type": "text", "text": "and then?"}
                ]}
            ],
            "tools": [{"name": "read_file", "description": "Reads a file",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "stream": false
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn streams_text_and_tool_use_blocks() {
    let server = MockServer::start(vec![sse(&[
        json!({"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ".txt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "list_files", "input": {}}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
        json!({"type": "message_stop"}),
    ])])
    .await;
    let response = complete(
        &model(&settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("Let me look."));
    assert_eq!(
        response.tool_calls,
        vec![
            call("toolu_a", "read_file", r#"{"path": "a.txt"}"#),
            call("toolu_b", "list_files", "{}"),
        ]
    );
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 30,
            completion_tokens: 42,
            ..Usage::default()
        })
    );
    assert_eq!(server.only_request().json()["stream"], json!(true));
}

#[tokio::test(flavor = "current_thread")]
async fn errors_wrong_key_overloaded_and_stream_error() {
    let server = MockServer::start(vec![Reply::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )])
    .await;
    let error = complete(
        &model(&settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Refused);
    assert!(error.message.contains("rejected the api key"), "{error}");
    assert!(error.message.contains("invalid x-api-key"), "{error}");
    assert_eq!(server.requests().len(), 1);

    // 529 overloaded is retried like a 5xx.
    let server = MockServer::start(vec![
        Reply::json(529, &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        sse(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "hi"}}),
            json!({"type": "message_stop"}),
        ]),
    ])
    .await;
    let response = complete(
        &model(&settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("hi"));
    assert_eq!(server.requests().len(), 2);

    let server = MockServer::start(vec![sse(&[
        json!({"type": "message_start", "message": {}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ])])
    .await;
    let error = complete(
        &model(&settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Unreachable);
    assert!(error.message.contains("Overloaded"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_body_and_unknown_model() {
    let server = MockServer::start(vec![Reply::text(200, "application/json", "nope")]).await;
    let mut settings = settings(ProviderKind::Anthropic, &server.url());
    settings.stream = false;
    let error = complete(&model(&settings), &simple_request())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);

    let server = MockServer::start(vec![Reply::json(
        404,
        &json!({"type": "error", "error": {"type": "not_found_error", "message": "model: test-model"}}),
    )])
    .await;
    let error = complete(
        &model(&crate::settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Refused);
    assert!(error.message.contains("model `test-model`"), "{error}");
}
