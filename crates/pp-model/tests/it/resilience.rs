//! Retries, timeouts and error messages (shared by both providers' transport).

use std::time::{Duration, Instant};

use pp_agent::ModelErrorKind;
use pp_model::ProviderKind;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{complete, model, settings, simple_request};
use pp_test_support::mock::{MockServer, Reply};

const SECRET: &str = "sk-test-secret-123";

fn ok() -> Reply {
    Reply::json(200, &json!({"choices": [{"message": {"content": "ok"}}]}))
}

#[tokio::test(flavor = "current_thread")]
async fn retries_429_honouring_retry_after_then_succeeds() {
    let server = MockServer::start(vec![
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "1"),
        ok(),
    ])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    // Retry-After (1 s) is capped at `backoff.max`; the exponential delay alone would
    // be ~1 ms, so waiting ≥ 150 ms proves the header was used.
    settings.backoff.max = Duration::from_millis(150);
    let start = Instant::now();
    let response = complete(&model(&settings), &simple_request())
        .await
        .unwrap();
    let waited = start.elapsed();
    assert_eq!(response.content.as_deref(), Some("ok"));
    assert_eq!(server.requests().len(), 2);
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_millis(1000), "{waited:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn gives_up_after_max_retries_on_5xx() {
    let server = MockServer::start(vec![Reply::text(500, "text/plain", "boom")]).await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.max_retries = 3;
    let error = complete(&model(&settings), &simple_request())
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 4);
    assert_eq!(error.kind, ModelErrorKind::Unreachable);
    assert_eq!(
        error.message,
        format!(
            "{}/v1/chat/completions failed with http 500: boom (gave up after 4 attempts)",
            server.url()
        )
    );
}

#[tokio::test(flavor = "current_thread")]
async fn wrong_key_is_refused_without_retry_or_leaking_the_key() {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {SECRET}"),
                                "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = MockServer::start(vec![Reply::json(401, &body)]).await;
    let settings = settings(ProviderKind::OpenAi, &server.url());
    let error = complete(&model(&settings), &simple_request())
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 1);
    assert_eq!(error.kind, ModelErrorKind::Refused);
    assert_eq!(
        error.message,
        format!(
            "{}/v1 rejected the api key (http 401: Incorrect API key provided: <redacted>); \
             check the key configured for this provider",
            server.url()
        )
    );
    let model = model(&settings);
    assert!(!format!("{error} {error:?} {settings:?} {model:?}").contains(SECRET));
}

#[tokio::test(flavor = "current_thread")]
async fn unknown_model_is_refused_and_names_the_model() {
    // OpenAI: 404 with a JSON error; Ollama: 404 with `{"error": "…"}`; DeepSeek: 400.
    let cases = [
        (
            404,
            json!({"error": {"message": "The model `test-model` does not exist", "code": "model_not_found"}}),
        ),
        (
            404,
            json!({"error": "model \"test-model\" not found, try pulling it first"}),
        ),
        (
            400,
            json!({"error": {"message": "Model Not Exist", "type": "invalid_request_error"}}),
        ),
    ];
    for (status, body) in cases {
        let server = MockServer::start(vec![Reply::json(status, &body)]).await;
        let error = complete(
            &model(&settings(ProviderKind::OpenAi, &server.url())),
            &simple_request(),
        )
        .await
        .unwrap_err();
        assert_eq!(server.requests().len(), 1);
        assert_eq!(error.kind, ModelErrorKind::Refused);
        assert!(error.message.contains("model `test-model`"), "{error}");
        assert!(error.message.contains("check `model`"), "{error}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn ollama_plain_string_error_body() {
    let server = MockServer::start(vec![Reply::text(
        400,
        "text/plain; charset=utf-8",
        "json: cannot unmarshal string into Go value",
    )])
    .await;
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Refused);
    assert_eq!(
        error.message,
        format!(
            "{}/v1 refused the request (http 400: json: cannot unmarshal string into Go value)",
            server.url()
        )
    );
}

#[tokio::test(flavor = "current_thread")]
async fn slow_first_byte_times_out_then_retries() {
    let server = MockServer::start(vec![
        ok().delayed(Duration::from_millis(400)),
        ok().delayed(Duration::from_millis(400)),
    ])
    .await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.timeouts.first_byte = Duration::from_millis(100);
    settings.max_retries = 1;
    let start = Instant::now();
    let error = complete(&model(&settings), &simple_request())
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(error.kind, ModelErrorKind::Unreachable);
    assert!(error.message.contains("first-byte timeout"), "{error}");
    assert!(
        error.message.contains("gave up after 2 attempts"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn total_timeout_bounds_a_stalled_stream() {
    let pieces = vec![
        (
            Duration::ZERO,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".to_vec(),
        ),
        (
            Duration::from_millis(150),
            b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n".to_vec(),
        ),
        (Duration::from_millis(150), b"data: [DONE]\n\n".to_vec()),
    ];
    let server = MockServer::start(vec![Reply::stream(pieces)]).await;
    let mut settings = settings(ProviderKind::OpenAi, &server.url());
    settings.timeouts.total = Duration::from_millis(200);
    let error = complete(&model(&settings), &simple_request())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Unreachable);
    assert!(error.message.contains("total timeout"), "{error}");

    // The same stream within the idle timeout but a roomy total: fine.
    let server = MockServer::start(vec![Reply::stream(vec![
        (
            Duration::ZERO,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".to_vec(),
        ),
        (Duration::from_millis(50), b"data: [DONE]\n\n".to_vec()),
    ])])
    .await;
    let response = complete(
        &model(&crate::settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap();
    assert_eq!(response.content.as_deref(), Some("a"));
}

#[tokio::test(flavor = "current_thread")]
async fn unreachable_server_is_retried_then_reported() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &url)),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Unreachable);
    assert!(
        error
            .message
            .starts_with(&format!("cannot connect to {url}/v1/chat/completions")),
        "{error}"
    );
    assert!(
        error.message.contains("gave up after 3 attempts"),
        "{error}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_endless_answer_is_cut_off_not_buffered() {
    let huge = "x".repeat(17 * 1024 * 1024);
    let server = MockServer::start(vec![Reply::text(200, "application/json", &huge)]).await;
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(
        error.message,
        "the model's answer is larger than 16 MiB; giving up"
    );

    let delta = json!({"choices": [{"index": 0, "delta": {"content": "y".repeat(1024 * 1024)}}]});
    let line = format!("data: {delta}\n\n");
    let server = MockServer::start(vec![
        Reply::stream(
            (0..17)
                .map(|_| (Duration::ZERO, line.clone().into_bytes()))
                .collect(),
        )
        .header("content-type", "text/event-stream"),
    ])
    .await;
    let error = complete(
        &model(&settings(ProviderKind::OpenAi, &server.url())),
        &simple_request(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.message,
        "the model's answer is larger than 16 MiB; giving up"
    );
}
