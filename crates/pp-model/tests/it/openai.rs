//! The OpenAI-compatible provider: request shape, parsing, streaming assembly.

use std::sync::{Arc, Mutex};

use pp_agent::{Model as _, ModelErrorKind, ModelRequest};
use pp_model::{ProviderKind, StreamDelta, ping};
use pp_types::{Message, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{call, complete, model, settings, simple_request};
use pp_test_support::mock::{MockServer, Reply};

fn completion(message: &Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    })
}

#[tokio::test(flavor = "current_thread")]
async fn non_streamed_text_and_request_shape() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &completion(&json!({"role": "assistant", "content": "hello"})),
    )])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.stream = false;
    settings.max_tokens = Some(100);
    settings.temperature = Some(0.5);
    let response = complete(&model(&settings), &simple_request())
        .await
        .unwrap();
    assert_eq!(response.content.as_deref(), Some("hello"));
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 3,
            ..Usage::default()
        })
    );
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-test-secret-123")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "you are a test"},
                {"role": "user", "content": "read a.txt"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file", "description": "Reads a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
            }}],
            "stream": false,
            "max_tokens": 100,
            "temperature": 0.5
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn no_key_means_no_authorization_header_and_no_empty_tools() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &completion(&json!({"content": "hi"})),
    )])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.api_key = None;
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: [].into(),
    };
    complete(&model(&settings), &request).await.unwrap();
    let sent = server.only_request();
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.json().get("tools").is_none());
    // Streaming was asked for, with usage; the server answered plain JSON anyway.
    assert_eq!(sent.json()["stream"], json!(true));
    assert_eq!(
        sent.json()["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn lenient_about_missing_fields_and_odd_finish_reasons() {
    for finish_reason in [json!("eos"), json!(""), Value::Null] {
        // No id, object, created, model or usage.
        let body =
            json!({"choices": [{"message": {"content": "ok"}, "finish_reason": finish_reason}]});
        let server = MockServer::start(vec![Reply::json(200, &body)]).await;
        let response = complete(
            &model(&settings(ProviderKind::OpenAi, &server.url())),
            &simple_request(),
        )
        .await
        .unwrap();
        assert_eq!(response.content.as_deref(), Some("ok"));
        assert_eq!(response.usage, None);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn content_parts_object_arguments_and_missing_ids() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &completion(&json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "tool_calls": [
                {"type": "function", "function": {"name": "read_file", "arguments": {"path": "x"}}},
                {"id": "", "function": {"name": "read_file", "arguments": "{bad json"}}
            ]
        })),
    )])
    .await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("ab"));
    assert_eq!(
        response.tool_calls,
        vec![
            call("call_pp_0", "read_file", r#"{"path":"x"}"#),
            // Malformed arguments pass through verbatim: the loop turns them into a
            // tool error the model sees.
            call("call_pp_1", "read_file", "{bad json"),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn function_call_disagreeing_with_tool_calls_trusts_tool_calls() {
    let server = MockServer::start(vec![
        Reply::json(
            200,
            &completion(&json!({
                "content": null,
                "function_call": {"name": "write_file", "arguments": "{}"},
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]
            })),
        ),
        // Legacy-only servers still work.
        Reply::json(
            200,
            &completion(&json!({"function_call": {"name": "read_file", "arguments": "{}"}})),
        ),
    ])
    .await;
    let model = model(&settings(ProviderKind::OpenAi, &server.url()));
    let first = complete(&model, &simple_request()).await.unwrap();
    assert_eq!(
        first.tool_calls,
        vec![call("call_1", "read_file", r#"{"path":"a"}"#)]
    );
    assert_eq!(first.content, None);
    let second = complete(&model, &simple_request()).await.unwrap();
    assert_eq!(
        second.tool_calls,
        vec![call("call_pp_0", "read_file", "{}")]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn streams_text_with_usage_and_observer() {
    let server = MockServer::start(vec![Reply::sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#,
        "[DONE]",
    ])])
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let model = model(&settings(ProviderKind::OpenAi, &server.url())).with_observer(Arc::new(
        move |delta: StreamDelta<'_>| {
            if let StreamDelta::Text(text) = delta {
                sink.lock().unwrap().push(text.to_owned());
            }
        },
    ));
    let response = complete(&model, &simple_request()).await.unwrap();
    assert_eq!(response.content.as_deref(), Some("Hello"));
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 7,
            completion_tokens: 2,
            ..Usage::default()
        })
    );
    assert_eq!(*seen.lock().unwrap(), vec!["Hel", "lo"]);
}

#[tokio::test(flavor = "current_thread")]
async fn assembles_tool_call_fragments() {
    // Two calls in one turn; arguments split over many chunks; the second call's later
    // fragments carry an index but no id; the first call's name is repeated by the
    // server in a later fragment.
    let chunks: Vec<String> = [
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[
            {"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"th\": "}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":1,"id":"call_b","type":"function","function":{"name":"list_files"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ]
    .iter()
    .map(Value::to_string)
    .chain(["[DONE]".to_owned()])
    .collect();
    let server = MockServer::start(vec![Reply::sse(&chunks)]).await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content, None);
    assert_eq!(
        response.tool_calls,
        vec![
            call("call_a", "read_file", r#"{"path": "a.txt"}"#),
            call("call_b", "list_files", "{}"),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn assembles_calls_that_only_have_an_index() {
    // llama.cpp / some vLLM versions: no ids at all, index only.
    let chunks = [
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}}]}"#,
        "[DONE]",
    ];
    let server = MockServer::start(vec![Reply::sse(&chunks)]).await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(
        response.tool_calls,
        vec![
            call("call_pp_0", "read_file", r#"{"path":"a"}"#),
            call("call_pp_1", "read_file", r#"{"path":"b"}"#),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn stream_without_done_split_across_tcp_chunks() {
    // Events cut at arbitrary byte positions, and no `[DONE]` before the end.
    let text = "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n";
    let pieces = text
        .as_bytes()
        .chunks(7)
        .map(|piece| (std::time::Duration::ZERO, piece.to_vec()))
        .collect();
    let server = MockServer::start(vec![Reply::stream(pieces)]).await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("abc"));
}

#[tokio::test(flavor = "current_thread")]
async fn deepseek_reasoning_is_kept_and_sent_back_and_tool_only_turns_send_empty_content() {
    let server = MockServer::start(vec![
        Reply::sse(&[
            r#"{"choices":[{"delta":{"reasoning_content":"I should "}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"read it."}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"read_file","arguments":"{}"}}]}}]}"#,
            "[DONE]",
        ]),
        Reply::sse(&[r#"{"choices":[{"delta":{"content":"done"}}]}"#, "[DONE]"]),
    ])
    .await;
    let model = model(&settings(ProviderKind::OpenAi, &server.url()));
    let mut request = simple_request();
    let first = complete(&model, &request).await.unwrap();
    assert_eq!(
        first.reasoning_content.as_deref(),
        Some("I should read it.")
    );
    assert_eq!(first.content, None);
    // The loop appends the turn as it came, then the tool result.
    request.messages.push(Message::Assistant {
        content: first.content,
        tool_calls: first.tool_calls,
        reasoning_content: first.reasoning_content,
    });
    request.messages.push(Message::tool("call_1", "file text"));
    complete(&model, &request).await.unwrap();
    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][2],
        json!({
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"}}],
            "reasoning_content": "I should read it."
        })
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "file text"})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn error_chunk_inside_a_stream() {
    let server = MockServer::start(vec![Reply::sse(&[
        r#"{"choices":[{"delta":{"content":"par"}}]}"#,
        r#"{"error":{"message":"upstream overloaded"}}"#,
    ])])
    .await;
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert!(error.message.contains("upstream overloaded"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_json_body_is_an_invalid_response() {
    for body in ["{\"choices\": [", "<html>gateway</html>", "{}"] {
        let server = MockServer::start(vec![Reply::text(200, "application/json", body)]).await;
        let error = complete(
            &model(&settings(ProviderKind::OpenAi, &server.url())),
            &simple_request(),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error.kind,
            ModelErrorKind::InvalidResponse,
            "{body}: {error}"
        );
        assert!(error.message.contains(&server.url()), "{error}");
    }
    let server = MockServer::start(vec![Reply::sse(&["not json"])]).await;
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(error.message.contains("not json"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn ping_reports_tool_calling() {
    let server = MockServer::start(vec![
        Reply::json(
            200,
            &completion(&json!({"tool_calls": [{"id": "c", "function": {"name": "ping", "arguments": "{\"message\":\"pong\"}"}}]})),
        ),
        Reply::json(200, &completion(&json!({"content": "pong"}))),
    ])
    .await;
    let model = model(&settings(ProviderKind::OpenAi, &server.url()));
    let report = ping(&model).await.unwrap();
    assert!(report.tool_call_worked && report.arguments_valid);
    assert!(report.latency < std::time::Duration::from_secs(5));
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["function"]["name"], json!("ping"));
    let report = ping(&model).await.unwrap();
    assert!(!report.tool_call_worked);
    assert_eq!(report.text.as_deref(), Some("pong"));
}

#[test]
fn a_model_is_named_by_provider_and_model_never_by_its_key_or_url() {
    let openai = model(&settings(
        ProviderKind::OpenAi,
        "http://user:pass@127.0.0.1:9",
    ));
    assert_eq!(openai.name(), "openai-compatible:test-model");
    let anthropic = model(&settings(ProviderKind::Anthropic, "http://127.0.0.1:9"));
    assert_eq!(anthropic.name(), "anthropic:test-model");
    for name in [openai.name(), anthropic.name()] {
        assert!(
            !name.contains("sk-test") && !name.contains("127.0.0.1"),
            "{name}"
        );
    }
}
