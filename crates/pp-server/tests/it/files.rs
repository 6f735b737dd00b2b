//! Operator files through the jail, audited as operator.

use axum::body::Body;
use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, authed};
use pp_server::ServerSettings;

fn put(uri: &str, body: impl Into<Body>) -> axum::http::Request<Body> {
    authed(Method::PUT, uri).body(body.into()).unwrap()
}

#[tokio::test]
async fn list_download_upload() {
    let app = App::idle();
    app.tree.file("docs/a.txt", "alpha\n");
    app.tree.file("b.bin", "bee");

    let root = app.call(Method::GET, "/api/files").await;
    root.expect(200, None);
    assert_eq!(root.json["workspace"], "main");
    assert_eq!(root.json["truncated"], false);
    let entries: Vec<(String, String)> = root.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().unwrap().to_owned(),
                entry["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            ("b.bin".into(), "file".into()),
            ("docs".into(), "dir".into())
        ]
    );
    let docs = app
        .call(Method::GET, "/api/files?path=docs&workspace=main")
        .await;
    assert_eq!(docs.json["entries"][0]["path"], "docs/a.txt");
    assert_eq!(docs.json["entries"][0]["size"], 6);
    assert!(
        docs.json["entries"][0]["modified_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );

    let download = app
        .call(Method::GET, "/api/files/content?path=docs/a.txt")
        .await;
    download.expect(200, None);
    assert_eq!(download.bytes, b"alpha\n");
    assert_eq!(download.header("content-type"), "application/octet-stream");
    assert_eq!(
        download.header("content-disposition"),
        "attachment; filename=\"a.txt\"; filename*=UTF-8''a.txt"
    );
    assert_eq!(download.header("cache-control"), "no-store");

    let created = app
        .send(put("/api/files/content?path=up/new.txt", "uploaded\n"))
        .await;
    created.expect(201, None);
    assert_eq!(created.json["path"], "up/new.txt");
    assert_eq!(created.json["created"], true);
    assert_eq!(created.json["size"], 9);
    assert_eq!(app.tree.read("up/new.txt"), "uploaded\n");
    app.send(put("/api/files/content?path=up/new.txt", "again\n"))
        .await
        .expect(409, Some("exists"));
    assert_eq!(
        app.tree.read("up/new.txt"),
        "uploaded\n",
        "not replaced unasked"
    );
    let replaced = app
        .send(put(
            "/api/files/content?path=up/new.txt&overwrite=true",
            "again\n",
        ))
        .await;
    replaced.expect(200, None);
    assert_eq!(replaced.json["created"], false);
    assert_eq!(app.tree.read("up/new.txt"), "again\n");

    let uploads = app.audit("file_uploaded", None).await;
    assert_eq!(uploads.len(), 2);
    for entry in &uploads {
        assert_eq!(entry.actor, pp_types::Actor::Operator);
        assert_eq!(entry.target.as_deref(), Some("up/new.txt"));
    }
    // Newest first: the second upload's hash.
    assert_eq!(
        uploads[0].detail.as_deref().unwrap().split(' ').next(),
        replaced.json["sha256"].as_str()
    );
    assert!(uploads[0].detail.as_deref().unwrap().starts_with("sha256:"));
    let downloads = app.audit("file_downloaded", None).await;
    assert_eq!(downloads.len(), 1);
    assert_eq!(downloads[0].actor, pp_types::Actor::Operator);
    assert_eq!(downloads[0].target.as_deref(), Some("docs/a.txt"));
}

#[tokio::test]
async fn the_jail_applies_to_the_operator_too() {
    let app = App::idle();
    app.tree.outside_file("secret.txt", "TOP-SECRET");
    app.tree.symlink("link", app.tree.outside());
    let outside = app.tree.outside().to_str().unwrap().to_owned();
    let escapes = [
        "../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "/etc/passwd",
        "link/secret.txt",
        "a%00b",
        "..%2Foutside%2Fsecret.txt",
    ];
    for path in escapes {
        for reply in [
            app.call(Method::GET, &format!("/api/files?path={path}"))
                .await,
            app.call(Method::GET, &format!("/api/files/content?path={path}"))
                .await,
            app.send(put(&format!("/api/files/content?path={path}"), "pwned"))
                .await,
        ] {
            reply.expect(403, Some("forbidden"));
            let message = reply.json["error"]["message"].as_str().unwrap();
            assert!(!message.contains(&outside), "{message}");
        }
    }
    let absolute = format!("/api/files/content?path={outside}/secret.txt");
    let reply = app.call(Method::GET, &absolute).await;
    reply.expect(403, Some("forbidden"));
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("absolute")
    );
    assert_eq!(app.tree.read("../outside/secret.txt"), "TOP-SECRET");
    assert!(app.audit("file_uploaded", None).await.is_empty());
    assert!(app.audit("file_downloaded", None).await.is_empty());

    // A directory is not a file.
    app.tree.dir("docs");
    app.call(Method::GET, "/api/files/content?path=docs")
        .await
        .expect(400, Some("bad_request"));
    app.call(Method::GET, "/api/files?path=missing")
        .await
        .expect(404, Some("not_found"));
}

#[tokio::test]
async fn uploads_and_downloads_are_size_capped() {
    let app = App::with_settings(ServerSettings {
        max_upload_bytes: 1024,
        max_download_bytes: 1024,
        ..ServerSettings::default()
    });
    app.send(put("/api/files/content?path=big.bin", vec![7_u8; 1025]))
        .await
        .expect(413, Some("payload_too_large"));
    assert!(!app.tree.exists("big.bin"));
    app.send(put("/api/files/content?path=ok.bin", vec![7_u8; 1024]))
        .await
        .expect(201, None);
    app.tree.file("large.txt", &"x".repeat(2048));
    app.call(Method::GET, "/api/files/content?path=large.txt")
        .await
        .expect(413, Some("payload_too_large"));

    // The default upload limit (25 MiB) is far above the JSON body limit (1 MiB).
    let app = App::idle();
    let two_mib = vec![1_u8; 2 << 20];
    app.send(put("/api/files/content?path=two.bin", two_mib))
        .await
        .expect(201, None);
    let over = vec![1_u8; (25 << 20) + 1];
    app.send(put("/api/files/content?path=over.bin", over))
        .await
        .expect(413, Some("payload_too_large"));
}

#[tokio::test]
async fn workspaces_are_listed() {
    let app = App::idle();
    let reply = app.call(Method::GET, "/api/workspaces").await;
    reply.expect(200, None);
    assert_eq!(
        reply.json,
        json!({"workspaces": [{
            "name": "main",
            "path": app.tree.workspace().display().to_string(),
            "default": true,
        }]})
    );
}

#[tokio::test]
async fn internal_errors_are_generic_and_logged() {
    let app = App::idle();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = std::sync::Arc::clone(&lines);
    app.state
        .set_error_log(move |line| sink.lock().unwrap().push(line.to_owned()));
    #[expect(
        clippy::disallowed_methods,
        reason = "the test removes its own workspace"
    )]
    std::fs::remove_dir_all(app.tree.workspace()).unwrap();
    let reply = app.call(Method::GET, "/api/files").await;
    reply.expect(500, Some("internal"));
    let workspace = app.tree.workspace().to_str().unwrap().to_owned();
    assert!(!String::from_utf8_lossy(&reply.bytes).contains(&workspace));
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("GET /api/files"), "{lines:?}");
    assert!(
        lines[0].contains(&workspace),
        "the detail is in the log: {lines:?}"
    );
}

#[tokio::test]
async fn an_upload_replaces_an_existing_file_only_when_asked() {
    let app = App::idle();
    app.tree.file("notes/todo.md", "mine\n");
    for uri in [
        "/api/files/content?path=notes/todo.md",
        "/api/files/content?path=notes/todo.md&overwrite=false",
        "/api/files/content?path=notes/../notes/todo.md",
    ] {
        let reply = app.send(put(uri, "theirs\n")).await;
        reply.expect(409, Some("exists"));
        assert!(
            reply.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains("overwrite=true"),
            "{reply:?}"
        );
    }
    assert_eq!(app.tree.read("notes/todo.md"), "mine\n");
    assert!(app.audit("file_uploaded", None).await.is_empty());
    app.send(put(
        "/api/files/content?path=notes/todo.md&overwrite=true",
        "theirs\n",
    ))
    .await
    .expect(200, None);
    assert_eq!(app.tree.read("notes/todo.md"), "theirs\n");
    // A new file needs no permission to be created.
    app.send(put("/api/files/content?path=notes/new.md", "new\n"))
        .await
        .expect(201, None);
}

#[tokio::test]
async fn a_chinese_file_name_downloads_under_its_own_name() {
    let app = App::idle();
    app.tree.file("报告/季度 \"总结\".md", "内容\n");
    let reply = app
        .call(
            Method::GET,
            "/api/files/content?path=%E6%8A%A5%E5%91%8A/%E5%AD%A3%E5%BA%A6%20%22%E6%80%BB%E7%BB%93%22.md",
        )
        .await;
    reply.expect(200, None);
    assert_eq!(reply.bytes, "内容\n".as_bytes());
    assert_eq!(reply.header("content-type"), "application/octet-stream");
    assert_eq!(
        reply.header("content-disposition"),
        "attachment; filename=\"__ \\\"__\\\".md\"; \
         filename*=UTF-8''%E5%AD%A3%E5%BA%A6%20%22%E6%80%BB%E7%BB%93%22.md"
    );
}
