//! `/api/skills`: list, show, write, write a file, remove; every 4xx; audit as operator.
#![allow(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects its own skill folders with std::fs"
)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::Method;
use pp_knowledge::{SkillsService, SkillsSettings};
use pp_test_support::Store;
use pp_test_support::TempTree;
use pp_test_support::skills::{FOREIGN_LAYOUTS, skill_md, write_skill};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, authed};

/// The fixture's skills: `skills-home/` (writable) and `skills-shared/` (read-only) in the
/// tree's base, outside the workspace.
pub(crate) fn service(tree: &TempTree, store: &Store) -> SkillsService {
    let home = tree.base().join("skills-home");
    let shared = tree.base().join("skills-shared");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    SkillsService::new(
        SkillsSettings {
            home,
            dirs: vec![shared],
            max_body_bytes: 1024,
            shared: None,
        },
        store.clone(),
    )
}

fn home(app: &App) -> PathBuf {
    app.tree.base().join("skills-home")
}

fn shared(app: &App) -> PathBuf {
    app.tree.base().join("skills-shared")
}

#[tokio::test]
async fn list_shows_valid_and_invalid_skills_with_reasons() {
    let app = App::idle();
    for (name, files) in FOREIGN_LAYOUTS {
        write_skill(&shared(&app), name, files);
    }
    write_skill(&home(&app), "broken", &[("SKILL.md", "no front matter")]);
    let reply = app.call(Method::GET, "/api/skills").await;
    reply.expect(200, None);
    let skills = reply.json["skills"].as_array().unwrap();
    let summary: Vec<(&str, bool)> = skills
        .iter()
        .map(|skill| {
            (
                skill["name"].as_str().unwrap(),
                skill["valid"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("broken", false),
            ("notes-sync", true),
            ("pdf-forms", true),
            ("weather", true)
        ]
    );
    assert_eq!(
        skills[0],
        json!({"name": "broken", "description": "", "valid": false,
               "reason": "no front matter: SKILL.md must start with a `---` line",
               "source": "home", "read_only": false})
    );
    assert_eq!(skills[1]["read_only"], true);

    let reply = app.call(Method::GET, "/api/skills/pdf-forms").await;
    reply.expect(200, None);
    assert_eq!(
        reply.json["files"],
        json!(["LICENSE.txt", "reference.md", "scripts/list_fields.py"])
    );
    assert_eq!(reply.json["other_fields"], json!(["license"]));
    assert!(
        reply.json["skill_md"]
            .as_str()
            .unwrap()
            .starts_with("---\nname: pdf-forms")
    );
    app.call(Method::GET, "/api/skills/nope")
        .await
        .expect(404, Some("not_found"));
}

#[tokio::test]
async fn put_creates_replaces_and_refuses_invalid_skills() {
    let app = App::idle();
    let uri = "/api/skills/notes";
    let text = skill_md("notes", "Notes.", "Body.\n");
    let reply = app
        .call_json(Method::PUT, uri, &json!({"skill_md": text}))
        .await;
    reply.expect(201, None);
    assert_eq!(reply.json["valid"], true);
    app.call_json(Method::PUT, uri, &json!({"skill_md": text}))
        .await
        .expect(200, None);

    for (body, what) in [
        (json!({"skill_md": "no front matter"}), "no front matter"),
        (
            json!({"skill_md": "---\nname: [x\n---\n"}),
            "not valid YAML",
        ),
        (
            json!({"skill_md": skill_md("other", "d", "")}),
            "does not match",
        ),
        (
            json!({"skill_md": skill_md("notes", "d", &"x".repeat(1025))}),
            "over the limit",
        ),
    ] {
        let reply = app.call_json(Method::PUT, uri, &body).await;
        reply.expect(422, Some("invalid_skill"));
        assert!(
            reply.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains(what),
            "{reply:?}"
        );
    }
    app.call_json(
        Method::PUT,
        "/api/skills/Bad_Name",
        &json!({"skill_md": text}),
    )
    .await
    .expect(422, Some("invalid_skill"));
    app.call_json(Method::PUT, uri, &json!({"content": "x"}))
        .await
        .expect(400, Some("bad_request"));
    assert_eq!(
        std::fs::read_to_string(home(&app).join("notes/SKILL.md")).unwrap(),
        text,
        "refused writes change nothing"
    );

    write_skill(
        &shared(&app),
        "shared",
        &[("SKILL.md", &skill_md("shared", "d", ""))],
    );
    app.call_json(
        Method::PUT,
        "/api/skills/shared",
        &json!({"skill_md": skill_md("shared", "d", "x")}),
    )
    .await
    .expect(409, Some("read_only"));

    let audit = app.audit("skill_updated", None).await;
    assert_eq!(audit.len(), 2);
    assert!(
        audit
            .iter()
            .all(|row| row.actor == pp_types::Actor::Operator)
    );
}

#[tokio::test]
async fn files_go_through_the_skill_jail() {
    let app = App::idle();
    write_skill(
        &home(&app),
        "notes",
        &[("SKILL.md", &skill_md("notes", "d", ""))],
    );
    let put = |uri: &str, body: &'static str| {
        authed(Method::PUT, uri)
            .header("content-type", "application/octet-stream")
            .body(Body::from(body))
            .unwrap()
    };
    let reply = app
        .send(put("/api/skills/notes/files/refs/deep/a.md", "A"))
        .await;
    reply.expect(201, None);
    assert_eq!(
        reply.json,
        json!({"name": "notes", "path": "refs/deep/a.md", "created": true})
    );
    assert_eq!(
        std::fs::read_to_string(home(&app).join("notes/refs/deep/a.md")).unwrap(),
        "A"
    );
    app.send(put("/api/skills/notes/files/refs/deep/a.md", "B"))
        .await
        .expect(200, None);
    app.tree.outside_file("target.txt", "outside");
    std::os::unix::fs::symlink(app.tree.outside(), home(&app).join("notes/out")).unwrap();
    for escape in [
        "/api/skills/notes/files/..%2F..%2Fescaped.md",
        "/api/skills/notes/files/%2Fetc%2Fx",
        "/api/skills/notes/files/out/target.txt",
    ] {
        app.send(put(escape, "x"))
            .await
            .expect(403, Some("forbidden"));
    }
    assert_eq!(
        std::fs::read_to_string(app.tree.outside().join("target.txt")).unwrap(),
        "outside"
    );
    assert!(!app.tree.base().join("escaped.md").exists());
    app.send(put("/api/skills/notes/files/SKILL.md", "broken"))
        .await
        .expect(422, Some("invalid_skill"));
    app.send(put("/api/skills/nope/files/a.md", "x"))
        .await
        .expect(404, Some("not_found"));
    write_skill(
        &shared(&app),
        "shared",
        &[("SKILL.md", &skill_md("shared", "d", ""))],
    );
    app.send(put("/api/skills/shared/files/a.md", "x"))
        .await
        .expect(409, Some("read_only"));
}

#[tokio::test]
async fn delete_removes_home_skills_only() {
    let app = App::idle();
    write_skill(
        &home(&app),
        "notes",
        &[("SKILL.md", &skill_md("notes", "d", ""))],
    );
    write_skill(
        &shared(&app),
        "shared",
        &[("SKILL.md", &skill_md("shared", "d", ""))],
    );
    app.call(Method::DELETE, "/api/skills/shared")
        .await
        .expect(409, Some("read_only"));
    assert!(shared(&app).join("shared/SKILL.md").exists());
    app.call(Method::DELETE, "/api/skills/nope")
        .await
        .expect(404, Some("not_found"));
    let reply = app.call(Method::DELETE, "/api/skills/notes").await;
    reply.expect(200, None);
    assert_eq!(reply.json, json!({"removed": "notes"}));
    assert!(!home(&app).join("notes").exists());
    let removed = app.audit("skill_removed", None).await;
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].target.as_deref(), Some("notes"));
    // A cross-site request is refused before anything happens.
    write_skill(
        &home(&app),
        "again",
        &[("SKILL.md", &skill_md("again", "d", ""))],
    );
    app.send(
        authed(Method::DELETE, "/api/skills/again")
            .header("origin", "http://evil.example.com")
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .expect(403, Some("forbidden"));
    assert!(home(&app).join("again/SKILL.md").exists());
}

/// Issue 29, item 5: a skill's version is its `ETag`; `If-Match` is optional on every
/// change (no 428) and a stale one is `412 version_mismatch` with nothing changed.
#[tokio::test]
async fn a_skill_change_with_a_stale_if_match_is_refused() {
    let app = App::idle();
    let uri = "/api/skills/notes";
    let body = |text: &str| Body::from(json!({"skill_md": text}).to_string());
    let created = app
        .call_json(
            Method::PUT,
            uri,
            &json!({"skill_md": skill_md("notes", "Notes.", "v1\n")}),
        )
        .await;
    created.expect(201, None);
    let v1 = created.headers["etag"].to_str().unwrap().to_owned();
    assert_eq!(
        v1,
        format!("\"{}\"", created.json["version"].as_str().unwrap())
    );
    assert!(v1.starts_with("\"sha256:"), "{v1}");
    let shown = app.call(Method::GET, uri).await;
    assert_eq!(shown.headers["etag"].to_str().unwrap(), v1);
    // With the current version: the change lands and the version moves on.
    let put = |if_match: &str, text: String| {
        authed(Method::PUT, uri)
            .header("content-type", "application/json")
            .header("if-match", if_match)
            .body(body(&text))
            .unwrap()
    };
    let replaced = app
        .send(put(&v1, skill_md("notes", "Notes.", "v2\n")))
        .await;
    replaced.expect(200, None);
    assert_ne!(replaced.headers["etag"].to_str().unwrap(), v1);
    // With the old one: 412, for a write, a file and a removal alike.
    app.send(put(&v1, skill_md("notes", "Notes.", "v3\n")))
        .await
        .expect(412, Some("version_mismatch"));
    app.send(
        authed(Method::PUT, "/api/skills/notes/files/a.md")
            .header("if-match", v1.as_str())
            .body(Body::from("A"))
            .unwrap(),
    )
    .await
    .expect(412, Some("version_mismatch"));
    app.send(
        authed(Method::DELETE, uri)
            .header("if-match", v1.as_str())
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .expect(412, Some("version_mismatch"));
    let now = app.call(Method::GET, uri).await;
    assert!(now.json["skill_md"].as_str().unwrap().contains("v2"));
    assert_eq!(now.json["files"], json!([]));
    // Without If-Match: no 428, the change lands.
    app.call(Method::DELETE, uri).await.expect(200, None);
    app.call(Method::GET, uri)
        .await
        .expect(404, Some("not_found"));
}
