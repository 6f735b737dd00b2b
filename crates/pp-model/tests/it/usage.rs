//! Token usage as the providers report it: OpenAI-compatible (whole and streamed, with
//! `stream_options.include_usage`) and Anthropic (cache reads and writes).

use pp_model::ProviderKind;
use pp_test_support::mock::{MockServer, Reply};
use pp_test_support::openai::{self, MockTurn, MockUsage};
use pp_types::Usage;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{complete, model, settings, simple_request};

const REPORTED: MockUsage = MockUsage {
    prompt: 1200,
    completion: 340,
    cached: 1024,
    reasoning: 128,
};

const EXPECTED: Usage = Usage {
    prompt_tokens: 1200,
    completion_tokens: 340,
    cached_tokens: 1024,
    reasoning_tokens: 128,
};

#[tokio::test(flavor = "current_thread")]
async fn openai_whole_completion_reports_cached_and_reasoning_tokens() {
    let server = MockServer::start_with(|request| {
        openai::answer(request, &MockTurn::text("done"), REPORTED)
    })
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.stream = false;
    let response = complete(&model(&settings), &simple_request())
        .await
        .unwrap();
    assert_eq!(response.content.as_deref(), Some("done"));
    assert_eq!(response.usage, Some(EXPECTED));
}

#[tokio::test(flavor = "current_thread")]
async fn openai_stream_asks_for_usage_and_reads_the_last_chunk() {
    // The mock sends the usage chunk only to a request with
    // `stream_options.include_usage`, as the OpenAI API does.
    let server = MockServer::start_with(|request| {
        openai::answer(
            request,
            &MockTurn::call("call_1", "read_file", &json!({"path": "a.txt"})),
            REPORTED,
        )
    })
    .await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.usage, Some(EXPECTED));
}

#[tokio::test(flavor = "current_thread")]
async fn openai_stream_without_a_usage_chunk_reports_none() {
    let server = MockServer::start(vec![openai::streamed(
        &MockTurn::text("hi"),
        REPORTED,
        false,
    )])
    .await;
    let response = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("hi"));
    assert_eq!(response.usage, None);
    let body = server.only_request().json();
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test(flavor = "current_thread")]
async fn openai_null_details_and_top_level_parts_are_read() {
    let server = MockServer::start(vec![
        Reply::json(
            200,
            &json!({"choices": [{"index": 0, "message": {"content": "a"}}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 5,
                              "prompt_tokens_details": null,
                              "completion_tokens_details": null}}),
        ),
        Reply::json(
            200,
            &json!({"choices": [{"index": 0, "message": {"content": "b"}}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 5,
                              "cached_tokens": 80, "reasoning_tokens": 2}}),
        ),
    ])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.stream = false;
    let model = model(&settings);
    let first = complete(&model, &simple_request()).await.unwrap();
    assert_eq!(
        first.usage,
        Some(Usage {
            prompt_tokens: 50,
            completion_tokens: 5,
            ..Usage::default()
        })
    );
    // A part larger than its total is clamped to it.
    let second = complete(&model, &simple_request()).await.unwrap();
    assert_eq!(
        second.usage,
        Some(Usage {
            prompt_tokens: 50,
            completion_tokens: 5,
            cached_tokens: 50,
            reasoning_tokens: 2,
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn deepseek_cache_hits_count_as_cached() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &json!({"choices": [{"index": 0, "message": {"content": "a"}}],
                "usage": {"prompt_tokens": 64, "completion_tokens": 9, "total_tokens": 73,
                          "prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 24}}),
    )])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.stream = false;
    let response = complete(&model(&settings), &simple_request())
        .await
        .unwrap();
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 64,
            completion_tokens: 9,
            cached_tokens: 40,
            reasoning_tokens: 0,
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn anthropic_counts_cache_reads_and_writes_in_the_prompt() {
    let server = MockServer::start(vec![Reply::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 20, "output_tokens": 4,
                          "cache_read_input_tokens": 900,
                          "cache_creation_input_tokens": 100}}),
    )])
    .await;
    let mut settings = settings(ProviderKind::Anthropic, &server.url());
    settings.stream = false;
    let response = complete(&model(&settings), &simple_request())
        .await
        .unwrap();
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 1020,
            completion_tokens: 4,
            cached_tokens: 900,
            reasoning_tokens: 0,
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn anthropic_stream_takes_cache_figures_from_message_start() {
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "content": [],
               "usage": {"input_tokens": 12, "output_tokens": 1,
                         "cache_read_input_tokens": 3000,
                         "cache_creation_input_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "ok"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": 57}}),
        json!({"type": "message_stop"}),
    ];
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
    let server =
        MockServer::start(vec![Reply::stream(vec![(std::time::Duration::ZERO, text)])]).await;
    let response = complete(
        &model(&settings(ProviderKind::Anthropic, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("ok"));
    assert_eq!(
        response.usage,
        Some(Usage {
            prompt_tokens: 3012,
            completion_tokens: 57,
            cached_tokens: 3000,
            reasoning_tokens: 0,
        })
    );
}
