//! Team mode: every route × every role against the role matrix (and the matrix in
//! docs/team.md against the code's table), object-level rules (another member's task is
//! 404, an approver of another workspace gets 403), the user recorded on decisions,
//! token rotation, and the single server token refused.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use pp_channels::ChannelSettings;
use pp_server::ServerSettings;
use pp_tasks::{CreateTask, ModelSource, TaskService, TaskSettings, Workspace, Workspaces};
use pp_test_support::TempTree;
use pp_types::{Actor, Role, TaskId, TaskRecord, TaskState};
use serde_json::{Value, json};

use crate::{HOST, Reply, TOKEN, anonymous, send, write_script};

/// A team server over two workspaces, `main` (the default) and `other`, with one user
/// per role plus a second member; everyone but the owner is granted `main` only.
struct Team {
    /// Keeps the temporary directories alive.
    _tree: TempTree,
    service: TaskService,
    users: pp_users::Users,
    sessions: pp_chat::Sessions,
    router: Router,
    tokens: BTreeMap<&'static str, String>,
}

/// The users: name and role.
const USERS: [(&str, Role); 5] = [
    ("olga", Role::Owner),
    ("abe", Role::Approver),
    ("mia", Role::Member),
    ("max", Role::Member),
    ("vic", Role::Viewer),
];

/// The user acting as each role in the matrix test (`max` owns the tasks).
fn actor_of(role: Role) -> &'static str {
    match role {
        Role::Owner => "olga",
        Role::Approver => "abe",
        Role::Member => "mia",
        Role::Viewer => "vic",
    }
}

impl Team {
    async fn new() -> Self {
        let tree = TempTree::new();
        let other = tree.base().join("other");
        #[expect(
            clippy::disallowed_methods,
            reason = "the test makes its second workspace folder"
        )]
        std::fs::create_dir_all(&other).unwrap();
        // The store's clock stands still: logins, tokens and leases never meet wall time.
        let clock = std::sync::Arc::new(pp_types::ManualClock::new(pp_types::Timestamp::now()));
        let store =
            pp_test_support::sqlite_store_with_clock(&tree.base().join("pocketpilot.db"), clock);
        let service = TaskService::new(
            store.clone(),
            TaskSettings {
                workers: 4,
                poll_interval: Duration::from_millis(20),
                ..TaskSettings::default()
            },
            Workspaces {
                list: vec![
                    Workspace {
                        name: "main".into(),
                        path: tree.workspace().to_owned(),
                    },
                    Workspace {
                        name: "other".into(),
                        path: other,
                    },
                ],
                default: Some("main".into()),
            },
            ModelSource::Scripted,
        );
        let settings = ServerSettings {
            team: true,
            ..ServerSettings::default()
        };
        let state = crate::bare_state(&service, &store, settings);
        let (users, sessions) = (state.users().clone(), state.sessions().clone());
        state.set_skills(crate::skills::service(&tree, &store));
        state.set_memory(crate::memory::service(&tree, &store));
        state.set_channels(crate::channels::service(
            &service,
            &store,
            ChannelSettings::default(),
        ));
        state.set_scheduler(crate::schedules::scheduler(&service, &store, None));
        let router = pp_server::router(state);
        let mut tokens = BTreeMap::new();
        for (name, role) in USERS {
            let issued = users.add(name, role).await.unwrap();
            if role != Role::Owner {
                users.grant_workspace(name, "main").await.unwrap();
            }
            tokens.insert(name, issued.token);
        }
        service.start_workers();
        Self {
            _tree: tree,
            service,
            users,
            sessions,
            router,
            tokens,
        }
    }

    /// A request as `user` (bearer token), with a JSON body for writes.
    async fn call(&self, user: &str, method: Method, uri: &str, body: Option<&Value>) -> Reply {
        self.call_with(&format!("Bearer {}", self.tokens[user]), method, uri, body)
            .await
    }

    async fn call_with(
        &self,
        authorization: &str,
        method: Method,
        uri: &str,
        body: Option<&Value>,
    ) -> Reply {
        let builder = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", HOST)
            .header("authorization", authorization);
        let request = match body {
            Some(body) => builder
                .header("content-type", "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        };
        send(&self.router, request.unwrap()).await
    }

    /// A task created by `user` on `workspace` that waits for approval of a write.
    async fn waiting_task(&self, user: &str, workspace: &str) -> (TaskRecord, String) {
        let task = self
            .service
            .create_as_user(
                CreateTask {
                    prompt: format!("{user}'s task"),
                    workspace: Some(workspace.into()),
                    actor: Actor::Operator,
                    script: Some(write_script(&format!("{user}.txt"), "hello")),
                },
                Some(user.into()),
            )
            .await
            .unwrap();
        let task = self.wait_for(&task.id, TaskState::WaitingApproval).await;
        let approval = self
            .service
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .pop()
            .unwrap();
        (task, approval.id.to_string())
    }

    async fn wait_for(&self, task: &TaskId, state: TaskState) -> TaskRecord {
        for _ in 0..1000 {
            let record = self.service.task(task).await.unwrap();
            if record.state == state {
                return record;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {task} never reached {state:?}");
    }
}

/// The role matrix as docs/team.md writes it: `(method, path) → cells`.
fn documented_matrix() -> BTreeMap<(String, String), [String; 4]> {
    let doc = include_str!("../../../../docs/team.md");
    let mut matrix = BTreeMap::new();
    let methods = ["| `GET` |", "| `POST` |", "| `PUT` |", "| `DELETE` |"];
    for line in doc
        .lines()
        .filter(|line| methods.iter().any(|method| line.starts_with(method)))
    {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().trim_matches('`').to_owned())
            .collect();
        assert_eq!(cells.len(), 6, "a matrix row has six cells: {line}");
        let roles = [
            cells[2].clone(),
            cells[3].clone(),
            cells[4].clone(),
            cells[5].clone(),
        ];
        let key = (cells[0].clone(), cells[1].clone());
        assert!(
            matrix.insert(key, roles).is_none(),
            "a route is listed twice in docs/team.md: {line}"
        );
    }
    matrix
}

#[test]
fn the_documented_matrix_is_the_codes_matrix() {
    let code: BTreeMap<(String, String), [String; 4]> = pp_server::route_access()
        .into_iter()
        .map(|(method, path, cells)| {
            (
                (method.to_owned(), path.to_owned()),
                cells.map(str::to_owned),
            )
        })
        .collect();
    let routes: BTreeSet<(String, String)> = pp_server::api_routes()
        .into_iter()
        .map(|(method, path)| (method.to_owned(), path.to_owned()))
        .collect();
    assert_eq!(
        code.keys().cloned().collect::<BTreeSet<_>>(),
        routes,
        "every route of the router has its access"
    );
    pretty_assertions::assert_eq!(documented_matrix(), code);
}

/// A concrete URI for a route: `{id}` of task routes is `max`'s task, of approvals its
/// approval, of sessions `olga`'s session; other parameters name things that do not exist
/// (a 404 still proves the role got past the matrix).
fn concrete(path: &str, task: &str, approval: &str, session: &str) -> String {
    let id = if path.starts_with("/api/tasks/") {
        task
    } else if path.starts_with("/api/approvals/") {
        approval
    } else if path.starts_with("/api/sessions/") {
        session
    } else {
        "missing"
    };
    path.replace("{id}", id)
        .replace("{name}", "missing")
        .replace("{path}", "x.txt")
}

#[tokio::test]
async fn every_route_answers_every_role_as_the_matrix_says() {
    let team = Team::new().await;
    let (task, approval) = team.waiting_task("max", "main").await;
    let session = team
        .call("olga", Method::POST, "/api/sessions", Some(&json!({})))
        .await;
    let session = session.json["id"].as_str().unwrap().to_owned();

    let mut checked = 0;
    for (method, path, cells) in pp_server::route_access() {
        if cells == ["public"; 4] {
            continue;
        }
        let uri = concrete(path, task.id.as_str(), &approval, &session);
        let method: Method = method.parse().unwrap();
        // A well-formed body where one is needed to reach the object check.
        let body = (method != Method::GET && method != Method::DELETE).then(|| {
            if path.ends_with("/messages") {
                json!({"content": "hello"})
            } else {
                json!({})
            }
        });

        let anonymous = send(
            &team.router,
            anonymous(method.clone(), &uri).body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(anonymous.status, 401, "{method} {uri} without credentials");
        let server_token = team
            .call_with(
                &format!("Bearer {TOKEN}"),
                method.clone(),
                &uri,
                body.as_ref(),
            )
            .await;
        assert_eq!(
            server_token.status, 401,
            "{method} {uri} with the server token"
        );

        for (index, role) in Role::ALL.into_iter().enumerate() {
            let reply = team
                .call(actor_of(role), method.clone(), &uri, body.as_ref())
                .await;
            let status = reply.status.as_u16();
            let what = format!("{method} {uri} as {role}: {reply:?}");
            let names_object =
                uri.contains(task.id.as_str()) || uri.contains(&approval) || uri.contains(&session);
            match cells[index] {
                "no" => {
                    assert_eq!(status, 403, "{what}");
                    assert_eq!(reply.code(), "forbidden", "{what}");
                }
                "own" if names_object => assert_eq!(status, 404, "{what}"),
                _ => {
                    assert!(status != 401 && status != 403, "{what}");
                    assert!(status != 405, "{what}");
                    assert!(
                        !reply.json["error"]["message"]
                            .as_str()
                            .unwrap_or_default()
                            .starts_with("no route"),
                        "{what}"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 4 * 40, "{checked} route × role checks");
}

#[tokio::test]
async fn members_see_only_their_own_tasks() {
    let team = Team::new().await;
    let (theirs, approval) = team.waiting_task("max", "main").await;
    let created = team
        .call(
            "mia",
            Method::POST,
            "/api/tasks",
            Some(&json!({"prompt": "mine"})),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.json["created_by_user"], "mia");
    let mine = created.json["id"].as_str().unwrap().to_owned();

    let uri = format!("/api/tasks/{}", theirs.id);
    for (method, uri) in [
        (Method::GET, uri.clone()),
        (Method::POST, format!("{uri}/cancel")),
        (Method::POST, format!("{uri}/retry")),
        (Method::GET, format!("{uri}/events")),
        (Method::GET, format!("{uri}/changes")),
        (Method::GET, format!("/api/approvals/{approval}")),
        (Method::POST, format!("/api/approvals/{approval}/precheck")),
    ] {
        let body = (method == Method::POST).then(|| json!({}));
        let reply = team.call("mia", method.clone(), &uri, body.as_ref()).await;
        assert_eq!(reply.status, 404, "{method} {uri}: {reply:?}");
        assert_eq!(reply.code(), "not_found");
    }
    assert_eq!(
        team.service.task(&theirs.id).await.unwrap().state,
        TaskState::WaitingApproval,
        "the cancel did not happen"
    );

    let listed = team.call("mia", Method::GET, "/api/tasks", None).await;
    let ids: Vec<&str> = listed.json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [mine.as_str()]);
    let approvals = team.call("mia", Method::GET, "/api/approvals", None).await;
    assert_eq!(approvals.json["approvals"], json!([]));
    // The badge counts only what the caller may see.
    let count = team
        .call("mia", Method::GET, "/api/approvals/count", None)
        .await;
    assert_eq!(count.json, json!({"pending": 0}));
    let count = team
        .call("max", Method::GET, "/api/approvals/count", None)
        .await;
    assert_eq!(count.json, json!({"pending": 1}));
    let events = team.call("mia", Method::GET, "/api/events", None).await;
    for event in events.json["events"].as_array().unwrap() {
        assert_eq!(event["task_id"], mine.as_str(), "{event}");
    }

    // max sees his own task; the approver of `main` sees both.
    let own = team.call("max", Method::GET, &uri, None).await;
    assert_eq!(own.status, 200);
    let listed = team.call("abe", Method::GET, "/api/tasks", None).await;
    assert_eq!(listed.json["tasks"].as_array().unwrap().len(), 2);
    let events = team.call("abe", Method::GET, "/api/events", None).await;
    assert!(
        events.json["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|event| event["task_id"] == theirs.id.as_str())
    );
}

#[tokio::test]
async fn approvers_decide_only_on_granted_workspaces_and_are_named() {
    let team = Team::new().await;
    let (elsewhere, on_other) = team.waiting_task("olga", "other").await;
    let (here, on_main) = team.waiting_task("max", "main").await;
    let decide = json!({"decision": "approve"});

    let refused = team
        .call(
            "abe",
            Method::POST,
            &format!("/api/approvals/{on_other}/resolve"),
            Some(&decide),
        )
        .await;
    refused.expect(403, Some("forbidden"));
    assert_eq!(
        team.service.task(&elsewhere.id).await.unwrap().state,
        TaskState::WaitingApproval
    );
    // Nor does the approver see that workspace's tasks.
    let hidden = team
        .call(
            "abe",
            Method::GET,
            &format!("/api/tasks/{}", elsewhere.id),
            None,
        )
        .await;
    hidden.expect(404, Some("not_found"));

    for user in ["mia", "max", "vic"] {
        let reply = team
            .call(
                user,
                Method::POST,
                &format!("/api/approvals/{on_main}/resolve"),
                Some(&decide),
            )
            .await;
        reply.expect(403, Some("forbidden"));
    }

    let resolved = team
        .call(
            "abe",
            Method::POST,
            &format!("/api/approvals/{on_main}/resolve?wait=true"),
            Some(&decide),
        )
        .await;
    resolved.expect(200, None);
    assert_eq!(resolved.json["state"], "completed");
    let card = team
        .call(
            "abe",
            Method::GET,
            &format!("/api/approvals/{on_main}"),
            None,
        )
        .await;
    assert_eq!(card.json["resolved_by_user"], "abe");
    let audit = team
        .call(
            "vic",
            Method::GET,
            &format!("/api/audit?task_id={}&action=approval_approved", here.id),
            None,
        )
        .await;
    let rows = audit.json["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{audit:?}");
    assert_eq!(rows[0]["user"], "abe");

    // The owner decides anywhere.
    let owner = team
        .call(
            "olga",
            Method::POST,
            &format!("/api/approvals/{on_other}/resolve"),
            Some(&json!({"decision": "reject", "reason": "no"})),
        )
        .await;
    owner.expect(202, None);
}

#[tokio::test]
async fn viewers_read_but_cannot_create() {
    let team = Team::new().await;
    let reply = team
        .call(
            "vic",
            Method::POST,
            "/api/tasks",
            Some(&json!({"prompt": "please"})),
        )
        .await;
    reply.expect(403, Some("forbidden"));
    // A member may not create on a workspace not granted.
    let reply = team
        .call(
            "mia",
            Method::POST,
            "/api/tasks",
            Some(&json!({"prompt": "there", "workspace": "other"})),
        )
        .await;
    reply.expect(403, Some("forbidden"));
    let me = team.call("vic", Method::GET, "/api/me", None).await;
    assert_eq!(
        me.json,
        json!({"user": "vic", "role": "viewer", "workspaces": ["main"]})
    );
    let me = team.call("olga", Method::GET, "/api/me", None).await;
    assert_eq!(
        me.json,
        json!({"user": "olga", "role": "owner", "workspaces": ["main", "other"]})
    );
    let workspaces = team.call("vic", Method::GET, "/api/workspaces", None).await;
    assert_eq!(workspaces.json["workspaces"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn rotation_ends_the_old_token_and_its_console_logins() {
    let team = Team::new().await;
    let old = team.tokens["mia"].clone();
    let login = send(
        &team.router,
        anonymous(Method::GET, &format!("/login?token={old}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(login.status, 303, "{login:?}");
    let set_cookie = login.header("set-cookie").to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Secure"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let with_cookie = || {
        anonymous(Method::GET, "/api/me")
            .header("cookie", cookie.clone())
            .body(Body::empty())
            .unwrap()
    };
    let me = send(&team.router, with_cookie()).await;
    assert_eq!(me.json["user"], "mia", "{me:?}");

    let issued = team.users.rotate_token("mia").await.unwrap();
    assert_eq!(issued.logins_ended, 1);
    assert_eq!(send(&team.router, with_cookie()).await.status, 401);
    let stale = team
        .call_with(&format!("Bearer {old}"), Method::GET, "/api/me", None)
        .await;
    assert_eq!(stale.status, 401);
    let fresh = team
        .call_with(
            &format!("Bearer {}", issued.token),
            Method::GET,
            "/api/me",
            None,
        )
        .await;
    assert_eq!(fresh.json["user"], "mia");

    // The single server token logs nobody in in team mode.
    let refused = send(
        &team.router,
        anonymous(Method::GET, &format!("/login?token={TOKEN}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(refused.status, 401);
}

#[tokio::test]
async fn single_user_mode_answers_me_as_the_owner() {
    let app = crate::App::idle();
    let me = app.call(Method::GET, "/api/me").await;
    assert_eq!(
        me.json,
        json!({"user": null, "role": "owner", "workspaces": ["main"]})
    );
}

#[tokio::test]
async fn the_global_event_stream_carries_only_tasks_the_caller_may_see() {
    use futures_util::StreamExt as _;
    use tower::ServiceExt as _;

    let team = Team::new().await;
    let (theirs, _) = team.waiting_task("max", "main").await;
    let (mine, _) = team.waiting_task("mia", "main").await;
    let all = team.call("olga", Method::GET, "/api/events", None).await;
    let events = all.json["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|event| event["task_id"] == theirs.id.as_str())
    );
    let last_mine = events
        .iter()
        .filter(|event| event["task_id"] == mine.id.as_str())
        .filter_map(|event| event["seq"].as_i64())
        .max()
        .unwrap();

    let request = Request::builder()
        .uri("/api/events")
        .header("host", HOST)
        .header("authorization", format!("Bearer {}", team.tokens["mia"]))
        .header("accept", "text/event-stream")
        .header("last-event-id", "0")
        .body(Body::empty())
        .unwrap();
    let response = team.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body().into_data_stream();
    let (mut text, mut seen) = (String::new(), Vec::new());
    while seen.last() != Some(&last_mine) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap_or_else(|_| panic!("the stream stopped before {last_mine}; saw {seen:?}"))
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let Some(data) = block.lines().find_map(|line| line.strip_prefix("data:")) else {
                continue;
            };
            let event: Value = serde_json::from_str(data.trim()).unwrap();
            assert_eq!(event["task_id"], mine.id.as_str(), "{event}");
            seen.push(event["seq"].as_i64().unwrap());
        }
    }
}

/// Finding 9: revoking a grant stops the user from acting on that workspace's objects at
/// once (a new chat turn in a session opened before, resolve, revert, cancel, retry, a
/// new task or session), whatever they opened before; tasks already queued or waiting go
/// on (the owner approves one and it completes).
#[tokio::test]
async fn a_revoked_grant_stops_every_action_at_once() {
    let team = Team::new().await;
    let mut sessions = BTreeMap::new();
    for user in ["mia", "abe"] {
        let created = team
            .call(user, Method::POST, "/api/sessions", Some(&json!({})))
            .await;
        created.expect(201, None);
        sessions.insert(user, created.json["id"].as_str().unwrap().to_owned());
    }
    let (mine, my_approval) = team.waiting_task("mia", "main").await;
    let (theirs, their_approval) = team.waiting_task("max", "main").await;
    let (done, done_approval) = team.waiting_task("olga", "main").await;
    team.call(
        "olga",
        Method::POST,
        &format!("/api/approvals/{done_approval}/resolve?wait=true"),
        Some(&json!({"decision": "approve"})),
    )
    .await
    .expect(200, None);
    let change = team.service.changes().of_task(&done.id).await.unwrap()[0]
        .id
        .to_string();

    for user in ["mia", "abe"] {
        team.users.revoke_workspace(user, "main").await.unwrap();
    }

    // The actions named in the finding, with the answer each gets now.
    let approve = json!({"decision": "approve"});
    let message = json!({"content": "hello"});
    let mia_session = &sessions["mia"];
    for (user, uri, body, status) in [
        (
            "mia",
            format!("/api/sessions/{mia_session}/messages"),
            &message,
            403,
        ),
        (
            "mia",
            format!("/api/tasks/{}/cancel", mine.id),
            &json!({}),
            403,
        ),
        (
            "mia",
            format!("/api/tasks/{}/retry", mine.id),
            &json!({}),
            403,
        ),
        (
            "abe",
            format!("/api/approvals/{their_approval}/resolve"),
            &approve,
            403,
        ),
        (
            "abe",
            format!("/api/changes/{change}/revert"),
            &json!({}),
            403,
        ),
        // An approver sees only granted workspaces' tasks: the matrix's 404.
        (
            "abe",
            format!("/api/tasks/{}/cancel", theirs.id),
            &json!({}),
            404,
        ),
        (
            "abe",
            format!("/api/tasks/{}/retry", theirs.id),
            &json!({}),
            404,
        ),
    ] {
        let reply = team.call(user, Method::POST, &uri, Some(body)).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{user} POST {uri}: {reply:?}"
        );
    }

    // Every state-changing route, so a new one cannot forget the check: a revoked user
    // gets 403 or 404 on every object of `main` and on `main` itself. (Deleting one's own
    // session touches no workspace and stays allowed.)
    for (method, path, cells) in pp_server::route_access() {
        if method == "GET" || method == "DELETE" || cells == ["public"; 4] {
            continue;
        }
        for user in ["mia", "abe"] {
            let (task, approval) = if user == "mia" {
                (mine.id.to_string(), my_approval.clone())
            } else {
                (theirs.id.to_string(), their_approval.clone())
            };
            let changeset = team
                .service
                .approval_view(&pp_types::ApprovalId(approval.clone()))
                .await
                .unwrap()
                .changeset_id
                .unwrap();
            let id = if path.starts_with("/api/tasks/") {
                task
            } else if path.starts_with("/api/approvals/") {
                approval.clone()
            } else if path.starts_with("/api/changesets/") {
                changeset
            } else if path.starts_with("/api/sessions/") {
                sessions[user].clone()
            } else if path.starts_with("/api/changes/") {
                change.clone()
            } else {
                "missing".to_owned()
            };
            let uri = path
                .replace("{id}", &id)
                .replace("{name}", "missing")
                .replace("{path}", "x.txt");
            let body = match path {
                "/api/tasks" => json!({"prompt": "more", "workspace": "main"}),
                "/api/sessions" => json!({"workspace": "main"}),
                _ if path.ends_with("/messages") => message.clone(),
                _ if path.starts_with("/api/changesets/") => {
                    json!({"decisions": [{"approval_id": approval, "decision": "approve"}]})
                }
                _ if path.ends_with("/resolve") => approve.clone(),
                _ => json!({}),
            };
            let method: Method = method.parse().unwrap();
            let reply = team.call(user, method.clone(), &uri, Some(&body)).await;
            let status = reply.status.as_u16();
            assert!(
                status == 403 || status == 404,
                "{user} {method} {uri} after the revoke: {reply:?}"
            );
        }
    }

    // Nothing happened.
    assert!(
        team.sessions
            .session(mia_session)
            .await
            .unwrap()
            .turns
            .is_empty()
    );
    for task in [&mine, &theirs] {
        assert_eq!(
            team.service.task(&task.id).await.unwrap().state,
            TaskState::WaitingApproval
        );
    }
    let changes = team.service.changes().of_task(&done.id).await.unwrap();
    assert!(changes.iter().all(|change| change.reverted_by.is_none()));
    let tasks = team.service.search_tasks(Default::default()).await.unwrap();
    assert_eq!(tasks.tasks.len(), 3, "no task was created");

    // What was already queued or waiting goes on: the owner approves mia's task.
    let resolved = team
        .call(
            "olga",
            Method::POST,
            &format!("/api/approvals/{my_approval}/resolve?wait=true"),
            Some(&approve),
        )
        .await;
    resolved.expect(200, None);
    assert_eq!(resolved.json["state"], "completed");
}

#[tokio::test]
async fn changesets_follow_the_matrix_of_the_single_card_and_its_resolve() {
    let team = Team::new().await;
    let (elsewhere, on_other) = team.waiting_task("olga", "other").await;
    let (here, on_main) = team.waiting_task("max", "main").await;
    let changeset_of = |approval: &str| {
        let service = team.service.clone();
        let approval = pp_types::ApprovalId(approval.to_owned());
        async move {
            service
                .approval_view(&approval)
                .await
                .unwrap()
                .changeset_id
                .expect("every suspension makes a changeset")
        }
    };
    let (other_set, main_set) = (changeset_of(&on_other).await, changeset_of(&on_main).await);
    let approve =
        |approval: &str| json!({"decisions": [{"approval_id": approval, "decision": "approve"}]});

    // An approver of another workspace neither sees nor decides it.
    team.call(
        "abe",
        Method::GET,
        &format!("/api/changesets/{other_set}"),
        None,
    )
    .await
    .expect(404, Some("not_found"));
    team.call(
        "abe",
        Method::POST,
        &format!("/api/changesets/{other_set}/resolve"),
        Some(&approve(&on_other)),
    )
    .await
    .expect(403, Some("forbidden"));
    assert_eq!(
        team.service.task(&elsewhere.id).await.unwrap().state,
        TaskState::WaitingApproval
    );
    // Members and viewers may not decide, whoever's task it is.
    for user in ["mia", "max", "vic"] {
        team.call(
            user,
            Method::POST,
            &format!("/api/changesets/{main_set}/resolve"),
            Some(&approve(&on_main)),
        )
        .await
        .expect(403, Some("forbidden"));
    }
    // The task's member sees the review; the approver of its workspace decides it.
    let review = team
        .call(
            "max",
            Method::GET,
            &format!("/api/changesets/{main_set}"),
            None,
        )
        .await;
    review.expect(200, None);
    assert_eq!(review.json["approvals"][0]["id"], on_main.as_str());
    let decided = team
        .call(
            "abe",
            Method::POST,
            &format!("/api/changesets/{main_set}/resolve?wait=true"),
            Some(&approve(&on_main)),
        )
        .await;
    decided.expect(200, None);
    assert_eq!(decided.json["results"][0]["status"], "accepted");
    assert_eq!(
        team.service.task(&here.id).await.unwrap().state,
        TaskState::Completed
    );
    let card = team
        .call(
            "abe",
            Method::GET,
            &format!("/api/approvals/{on_main}"),
            None,
        )
        .await;
    assert_eq!(card.json["resolved_by_user"], "abe");
}

impl Team {
    /// A request as `user` with a raw body and extra headers (uploads, `If-Match`).
    async fn raw(
        &self,
        user: &str,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Reply {
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", HOST)
            .header("authorization", format!("Bearer {}", self.tokens[user]));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        send(&self.router, builder.body(Body::from(body)).unwrap()).await
    }

    /// The `user` of every audit row with `action`, newest first.
    async fn audit_users(&self, action: &str) -> Vec<Option<String>> {
        let reply = self
            .call(
                "olga",
                Method::GET,
                &format!("/api/audit?action={action}"),
                None,
            )
            .await;
        reply.expect(200, None);
        reply.json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["user"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Finding 4: in team mode every audit row of an action a person took through the API
/// names the user: cancel, revert, memory, skills, file uploads and downloads, schedule
/// changes, chat sessions and their turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_through_the_api_names_its_user() {
    let team = Team::new().await;
    let one = |users: Vec<Option<String>>, who: &str| {
        assert_eq!(users, [Some(who.to_owned())], "{who}");
    };

    // A cancel by the member who owns the task.
    let (mine, _) = team.waiting_task("mia", "main").await;
    team.call(
        "mia",
        Method::POST,
        &format!("/api/tasks/{}/cancel", mine.id),
        Some(&json!({})),
    )
    .await
    .expect(200, None);
    one(team.audit_users("task_cancelled").await, "mia");

    // A revert by an approver of the workspace.
    let (done, approval) = team.waiting_task("max", "main").await;
    team.call(
        "abe",
        Method::POST,
        &format!("/api/approvals/{approval}/resolve?wait=true"),
        Some(&json!({"decision": "approve"})),
    )
    .await
    .expect(200, None);
    let change = team.service.changes().of_task(&done.id).await.unwrap()[0]
        .id
        .to_string();
    team.call(
        "abe",
        Method::POST,
        &format!("/api/changes/{change}/revert"),
        Some(&json!({})),
    )
    .await
    .expect(200, None);
    one(team.audit_users("change_reverted").await, "abe");

    // The owner's memory, skill, file and schedule changes.
    let memory = team.call("olga", Method::GET, "/api/memory", None).await;
    let etag = format!("\"{}\"", memory.json["version"].as_str().unwrap());
    team.raw(
        "olga",
        Method::PUT,
        "/api/memory",
        &[("if-match", &etag), ("content-type", "application/json")],
        json!({"content": "remember\n"}).to_string().into_bytes(),
    )
    .await
    .expect(200, None);
    one(team.audit_users("memory_updated").await, "olga");

    let skill_md = "---\nname: tidy\ndescription: Tidy up.\n---\nTidy.\n";
    team.call(
        "olga",
        Method::PUT,
        "/api/skills/tidy",
        Some(&json!({ "skill_md": skill_md })),
    )
    .await
    .expect(201, None);
    team.call("olga", Method::DELETE, "/api/skills/tidy", None)
        .await
        .expect(200, None);
    one(team.audit_users("skill_updated").await, "olga");
    one(team.audit_users("skill_removed").await, "olga");

    team.raw(
        "olga",
        Method::PUT,
        "/api/files/content?path=up.txt",
        &[],
        b"uploaded\n".to_vec(),
    )
    .await
    .expect(201, None);
    team.call("olga", Method::GET, "/api/files/content?path=up.txt", None)
        .await
        .expect(200, None);
    one(team.audit_users("file_uploaded").await, "olga");
    one(team.audit_users("file_downloaded").await, "olga");

    let created = team
        .call(
            "olga",
            Method::POST,
            "/api/schedules",
            Some(&json!({"name": "daily", "cron": "0 9 * * *", "prompt": "report"})),
        )
        .await;
    created.expect(201, None);
    let id = created.json["id"].as_str().unwrap().to_owned();
    team.call(
        "olga",
        Method::PUT,
        &format!("/api/schedules/{id}"),
        Some(&json!({"enabled": false})),
    )
    .await
    .expect(200, None);
    team.call(
        "olga",
        Method::POST,
        &format!("/api/schedules/{id}/run"),
        Some(&json!({})),
    )
    .await
    .expect(202, None);
    team.call(
        "olga",
        Method::DELETE,
        &format!("/api/schedules/{id}"),
        None,
    )
    .await
    .expect(204, None);
    for action in [
        "schedule_created",
        "schedule_updated",
        "schedule_run",
        "schedule_removed",
    ] {
        one(team.audit_users(action).await, "olga");
    }

    // A chat session and its turn, by the member.
    let session = team
        .call("mia", Method::POST, "/api/sessions", Some(&json!({})))
        .await;
    session.expect(201, None);
    let session = session.json["id"].as_str().unwrap().to_owned();
    let sent = team
        .call(
            "mia",
            Method::POST,
            &format!("/api/sessions/{session}/messages"),
            Some(&json!({"content": "hello"})),
        )
        .await;
    sent.expect(202, None);
    let turn = sent.json["task_id"].as_str().unwrap().to_owned();
    one(team.audit_users("session_created").await, "mia");
    let turn_rows = team
        .call(
            "olga",
            Method::GET,
            &format!("/api/audit?task_id={turn}&action=task_created"),
            None,
        )
        .await;
    assert_eq!(
        turn_rows.json["entries"][0]["user"], "mia",
        "{:?}",
        turn_rows.json
    );
}

/// Item 7: in team mode the 401 (API) and the refused login page say how a team user
/// logs in, never "the login link" `serve` prints (which team mode does not use).
#[tokio::test]
async fn team_mode_401_says_how_a_user_logs_in() {
    let team = Team::new().await;
    for authorization in ["Bearer ppu_0000", "Bearer not-a-token"] {
        let reply = team
            .call_with(authorization, Method::GET, "/api/tasks", None)
            .await;
        reply.expect(401, Some("unauthorized"));
        let message = reply.json["error"]["message"].as_str().unwrap();
        assert!(!message.contains("login link"), "{message}");
        assert!(message.contains("/login?token=<user token>"), "{message}");
        assert!(message.contains("users rotate"), "{message}");
    }
    let page = team
        .call_with("", Method::GET, "/login?token=ppu_0000", None)
        .await;
    assert_eq!(page.status.as_u16(), 401);
    let text = String::from_utf8_lossy(&page.bytes);
    assert!(!text.contains("login link"), "{text}");
    assert!(text.contains("users rotate"), "{text}");

    // A removed user's token is refused the same way.
    let removed = team.users.remove("vic").await.unwrap();
    assert_eq!(removed.user.name, "vic");
    let reply = team.call("vic", Method::GET, "/api/tasks", None).await;
    reply.expect(401, Some("unauthorized"));
}

/// Issue 29, item 4 (channels): every change to a channel through the API is audited as
/// the operator with the owner who made it.
#[tokio::test]
async fn channel_changes_are_audited_with_the_owner_who_made_them() {
    let team = Team::new().await;
    for (method, uri, body, status) in [
        (
            Method::POST,
            "/api/channels",
            Some(json!({"name": "forms"})),
            201,
        ),
        (
            Method::PUT,
            "/api/channels/forms",
            Some(json!({"enabled": false})),
            200,
        ),
        (Method::POST, "/api/channels/forms/rotate", None, 200),
        (Method::DELETE, "/api/channels/forms", None, 200),
    ] {
        team.call("olga", method, uri, body.as_ref())
            .await
            .expect(status, None);
    }
    for action in [
        "channel_created",
        "channel_updated",
        "channel_rotated",
        "channel_removed",
    ] {
        let audit = team
            .call(
                "vic",
                Method::GET,
                &format!("/api/audit?action={action}"),
                None,
            )
            .await;
        let rows = audit.json["entries"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{action}: {audit:?}");
        assert_eq!(rows[0]["user"], "olga", "{action}");
        assert_eq!(rows[0]["actor"], "operator", "{action}");
        assert_eq!(rows[0]["target"], "forms", "{action}");
    }
}
