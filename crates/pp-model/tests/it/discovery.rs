//! Discovery from provider keys and from local servers.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use pp_model::{
    LocalCandidate, LocalServerKind, ProbeOptions, ProviderKind, discover_from_keys, probe_local,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use pp_test_support::mock::{MockServer, Reply};

#[test]
fn keys_pick_the_first_known_provider_with_a_value() {
    assert_eq!(discover_from_keys(&[]), None);
    assert_eq!(
        discover_from_keys(&[("OPENAI_API_KEY", "  "), ("OTHER", "x")]),
        None
    );
    let found = discover_from_keys(&[
        ("OPENROUTER_API_KEY", "or-key"),
        ("OPENAI_API_KEY", ""),
        ("ANTHROPIC_API_KEY", "ant-key"),
    ])
    .unwrap();
    assert_eq!(found.settings.kind, ProviderKind::Anthropic);
    assert_eq!(found.settings.base_url, "https://api.anthropic.com/v1");
    assert_eq!(found.settings.api_key.as_deref(), Some("ant-key"));
    assert_eq!(
        found.reason,
        "ANTHROPIC_API_KEY is set: using Anthropic (claude-sonnet-4-5 at https://api.anthropic.com/v1)"
    );
    assert!(!found.reason.contains("ant-key"));
    let dashscope = discover_from_keys(&[("DASHSCOPE_API_KEY", "d")]).unwrap();
    assert_eq!(
        dashscope.settings.base_url,
        "https://dashscope.aliyuncs.com/compatible-mode/v1"
    );
    assert_eq!(dashscope.settings.model, "qwen-plus");
}

fn options(candidates: Vec<LocalCandidate>) -> ProbeOptions {
    ProbeOptions {
        host: IpAddr::V4(Ipv4Addr::LOCALHOST),
        candidates,
        timeout: Duration::from_millis(300),
    }
}

async fn free_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "current_thread")]
async fn finds_a_mock_ollama_and_skips_embedding_models() {
    let ollama = MockServer::start(vec![Reply::json(
        200,
        &json!({"models": [{"name": "nomic-embed-text:latest"}, {"name": "qwen3:8b"}, {"name": "llama3.1"}]}),
    )])
    .await;
    let nothing = free_port().await;
    let found = probe_local(&options(vec![
        LocalCandidate {
            kind: LocalServerKind::LlamaCpp,
            port: nothing,
        },
        LocalCandidate {
            kind: LocalServerKind::Ollama,
            port: ollama.port(),
        },
    ]))
    .await
    .unwrap();
    assert_eq!(found.settings.kind, ProviderKind::OpenAi);
    assert_eq!(
        found.settings.base_url,
        format!("http://127.0.0.1:{}/v1", ollama.port())
    );
    assert_eq!(found.settings.model, "qwen3:8b");
    assert_eq!(found.settings.api_key, None);
    assert_eq!(
        found.reason,
        format!(
            "found Ollama on 127.0.0.1:{}: using model `qwen3:8b` (first of 3 listed; set `model` to choose)",
            ollama.port()
        )
    );
    assert_eq!(ollama.only_request().path, "/api/tags");
}

#[tokio::test(flavor = "current_thread")]
async fn falls_back_to_v1_models_and_reports_what_it_tried() {
    let llama = MockServer::start(vec![Reply::json(
        200,
        &json!({"object": "list", "data": [{"id": "gguf-model", "object": "model"}]}),
    )])
    .await;
    let found = probe_local(&options(vec![LocalCandidate {
        kind: LocalServerKind::LlamaCpp,
        port: llama.port(),
    }]))
    .await
    .unwrap();
    assert_eq!(found.settings.model, "gguf-model");
    assert_eq!(llama.only_request().path, "/v1/models");

    let empty = MockServer::start(vec![Reply::json(200, &json!({"models": []}))]).await;
    let nothing = free_port().await;
    let report = probe_local(&options(vec![
        LocalCandidate {
            kind: LocalServerKind::Ollama,
            port: empty.port(),
        },
        LocalCandidate {
            kind: LocalServerKind::LmStudio,
            port: nothing,
        },
    ]))
    .await
    .unwrap_err();
    assert_eq!(
        report.tried,
        vec![
            format!("Ollama on 127.0.0.1:{}: no models installed", empty.port()),
            format!("LM Studio on 127.0.0.1:{nothing}: nothing listening"),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_silent_port_times_out_quickly() {
    let slow = MockServer::start(vec![
        Reply::json(200, &json!({"models": [{"name": "m"}]})).delayed(Duration::from_secs(2)),
    ])
    .await;
    let start = std::time::Instant::now();
    let report = probe_local(&options(vec![LocalCandidate {
        kind: LocalServerKind::LmStudio,
        port: slow.port(),
    }]))
    .await
    .unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(1000));
    assert!(report.tried[0].contains("no answer within"), "{report}");
}

/// A loopback server (std, one thread) answering every request on each connection with
/// `body` as JSON, after `before_answer` returns.
fn answering_server(body: serde_json::Value, before_answer: impl Fn() + Send + 'static) -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            before_answer();
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => request.extend_from_slice(&buffer[..read]),
                }
            }
            let body = body.to_string();
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    port
}

#[tokio::test(flavor = "current_thread")]
async fn ports_are_probed_at_once_and_the_first_in_order_wins() {
    // The preferred server answers only once the second one has been contacted. Probed
    // one after the other it would time out first (and the second would win); probed
    // concurrently, both answer and the preferred one is chosen.
    let (contacted, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Mutex::new(wait);
    let preferred = answering_server(json!({"models": [{"name": "first-choice"}]}), move || {
        let _ = wait.lock().unwrap().recv_timeout(Duration::from_secs(10));
    });
    let contacted = std::sync::Mutex::new(contacted);
    let second = answering_server(
        json!({"object": "list", "data": [{"id": "second-choice"}]}),
        move || {
            let _ = contacted.lock().unwrap().send(());
        },
    );
    let mut options = options(vec![
        LocalCandidate {
            kind: LocalServerKind::Ollama,
            port: preferred,
        },
        LocalCandidate {
            kind: LocalServerKind::LlamaCpp,
            port: second,
        },
    ]);
    options.timeout = Duration::from_secs(5);
    let found = probe_local(&options).await.unwrap();
    assert_eq!(found.settings.model, "first-choice", "{}", found.reason);
}
