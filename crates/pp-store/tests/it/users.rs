//! Team users: tokens stored only as SHA-256, grants, rotation ending the user's logins,
//! and the user recorded on tasks, chat sessions, approvals and audit rows.

use std::time::Duration;

use pp_store::{AuditFilter, Error, LoginOwner, NewChatSession, Resolve};
use pp_types::{Actor, NewAudit, Role, TaskId};

use crate::{TestDb, approve, new_task, race};

both!(tokens_are_stored_hashed_and_recognised);
async fn tokens_are_stored_hashed_and_recognised(db: TestDb) {
    let (user, token) = db.store.add_user("alice", Role::Owner).await.unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(user.role, Role::Owner);
    assert_eq!(user.workspaces, Vec::<String>::new());
    assert_eq!(user.created_at, crate::START);
    assert_eq!(user.rotated_at, None);
    assert!(token.starts_with("ppu_") && token.len() == 68, "{token}");
    assert!(token[4..].bytes().all(|byte| byte.is_ascii_hexdigit()));

    let stored = db
        .raw_texts("SELECT name || ':' || token_sha256 FROM users")
        .await;
    assert_eq!(stored.len(), 1);
    let (name, digest) = stored[0].split_once(':').unwrap();
    assert_eq!(name, "alice");
    assert_eq!(digest.len(), 64, "a SHA-256 in hex");
    assert!(!digest.contains(&token[4..]) && !token.contains(digest));
    // No column of the row holds the token text.
    let row = db
        .raw_texts(
            "SELECT name || role || token_sha256 || CAST(created_at AS TEXT) || \
             COALESCE(CAST(rotated_at AS TEXT), '') FROM users",
        )
        .await;
    assert!(!row[0].contains(&token[4..]), "{row:?}");

    assert_eq!(db.store.user_by_token(&token).await.unwrap(), Some(user));
    assert_eq!(
        db.open_again().await.user("alice").await.unwrap().name,
        "alice"
    );
    assert_eq!(db.store.user_by_token("ppu_0000").await.unwrap(), None);
    assert_eq!(db.store.user_by_token(&token[4..]).await.unwrap(), None);
    assert_eq!(db.store.user_by_token("").await.unwrap(), None);
    assert!(matches!(
        db.store.add_user("alice", Role::Viewer).await,
        Err(Error::NameTaken { what: "user", .. })
    ));
    assert_eq!(
        db.store.user("alice").await.unwrap().role,
        Role::Owner,
        "the refused add changed nothing"
    );
    assert!(matches!(
        db.store.user("nobody").await,
        Err(Error::NotFound { what: "user", .. })
    ));
}

both!(users_are_listed_by_name_with_their_grants);
async fn users_are_listed_by_name_with_their_grants(db: TestDb) {
    assert!(db.store.users().await.unwrap().is_empty());
    for (name, role) in [
        ("zoe", Role::Viewer),
        ("abe", Role::Member),
        ("mia", Role::Approver),
    ] {
        db.store.add_user(name, role).await.unwrap();
    }
    db.store.grant_workspace("mia", "research").await.unwrap();
    db.store.grant_workspace("mia", "Finance").await.unwrap();
    db.store.grant_workspace("abe", "home").await.unwrap();
    let users = db.store.users().await.unwrap();
    let names: Vec<&str> = users.iter().map(|user| user.name.as_str()).collect();
    assert_eq!(names, ["abe", "mia", "zoe"]);
    let roles: Vec<Role> = users.iter().map(|user| user.role).collect();
    assert_eq!(roles, [Role::Member, Role::Approver, Role::Viewer]);
    // Byte order on both backends: upper case first.
    assert_eq!(users[1].workspaces, ["Finance", "research"]);
    assert_eq!(users[0].workspaces, ["home"]);
    assert!(users[2].workspaces.is_empty());
    assert_eq!(db.store.user("mia").await.unwrap(), users[1]);
}

both!(grants_and_rotation);
async fn grants_and_rotation(db: TestDb) {
    let (_, old) = db.store.add_user("bob", Role::Approver).await.unwrap();
    let user = db.store.grant_workspace("bob", "finance").await.unwrap();
    assert_eq!(user.workspaces, ["finance"]);
    db.store.grant_workspace("bob", "finance").await.unwrap();
    let user = db.store.grant_workspace("bob", "research").await.unwrap();
    assert_eq!(user.workspaces, ["finance", "research"]);
    let (user, removed) = db.store.revoke_workspace("bob", "research").await.unwrap();
    assert!(removed);
    assert_eq!(user.workspaces, ["finance"]);
    assert!(
        !db.store
            .revoke_workspace("bob", "research")
            .await
            .unwrap()
            .1
    );
    assert!(matches!(
        db.store.grant_workspace("nobody", "finance").await,
        Err(Error::NotFound { what: "user", .. })
    ));
    assert!(matches!(
        db.store.revoke_workspace("nobody", "finance").await,
        Err(Error::NotFound { what: "user", .. })
    ));

    let login = db
        .store
        .create_user_login("bob", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(login.len(), 64);
    let server_login = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        db.store.login_owner(&login).await.unwrap(),
        Some(LoginOwner::User("bob".into()))
    );
    assert_eq!(
        db.store.login_owner(&server_login).await.unwrap(),
        Some(LoginOwner::Server)
    );
    assert!(matches!(
        db.store
            .create_user_login("nobody", Duration::from_secs(60))
            .await,
        Err(Error::NotFound { what: "user", .. })
    ));

    db.clock.advance(Duration::from_secs(5));
    let (user, new, ended) = db.store.rotate_user_token("bob").await.unwrap();
    assert_eq!(ended, 1);
    assert_eq!(
        user.rotated_at,
        Some(crate::START.saturating_add(Duration::from_secs(5)))
    );
    assert_eq!(user.workspaces, ["finance"], "grants survive a rotation");
    assert_ne!(new, old);
    assert_eq!(db.store.user_by_token(&old).await.unwrap(), None);
    assert_eq!(db.store.user_by_token(&new).await.unwrap(), Some(user));
    assert_eq!(db.store.login_owner(&login).await.unwrap(), None);
    assert_eq!(
        db.store.login_owner(&server_login).await.unwrap(),
        Some(LoginOwner::Server),
        "other logins stay"
    );
    assert!(matches!(
        db.store.rotate_user_token("nobody").await,
        Err(Error::NotFound { what: "user", .. })
    ));
    let users: Vec<String> = db
        .store
        .users()
        .await
        .unwrap()
        .into_iter()
        .map(|user| user.name)
        .collect();
    assert_eq!(users, ["bob"]);
}

both!(a_user_login_expires_and_unknown_logins_have_no_owner);
async fn a_user_login_expires_and_unknown_logins_have_no_owner(db: TestDb) {
    db.store.add_user("eve", Role::Member).await.unwrap();
    let login = db
        .store
        .create_user_login("eve", Duration::from_millis(30))
        .await
        .unwrap();
    assert_eq!(db.store.login_owner(&"0".repeat(64)).await.unwrap(), None);
    db.clock.advance(Duration::from_millis(29));
    assert_eq!(
        db.open_again().await.login_owner(&login).await.unwrap(),
        Some(LoginOwner::User("eve".into()))
    );
    db.clock.advance(Duration::from_millis(1));
    assert_eq!(
        db.store.login_owner(&login).await.unwrap(),
        None,
        "expired at 30 ms"
    );
    // The next login purges the expired one; the rotation then ends only the live one.
    db.store
        .create_user_login("eve", Duration::from_secs(60))
        .await
        .unwrap();
    let (_, _, ended) = db.store.rotate_user_token("eve").await.unwrap();
    assert_eq!(ended, 1);
}

both!(the_user_is_recorded_on_tasks_approvals_and_audit_rows);
async fn the_user_is_recorded_on_tasks_approvals_and_audit_rows(db: TestDb) {
    let task = db
        .store
        .create_task_as(new_task("team task"), Some("mia"))
        .await
        .unwrap();
    assert_eq!(task.created_by_user.as_deref(), Some("mia"));
    assert_eq!(db.store.task(&task.id).await.unwrap(), task);
    let plain = db.create("single-user task").await;
    assert_eq!(plain.created_by_user, None);
    let anonymous = db
        .store
        .create_task_as(new_task("no user"), None)
        .await
        .unwrap();
    assert_eq!(anonymous.created_by_user, None);
    assert_eq!(db.store.task(&anonymous.id).await.unwrap(), anonymous);

    let (waiting, approval) = db.waiting("needs approval").await;
    assert_eq!(approval.resolved_by_user, None);
    let resolve = approve();
    let resolve = Resolve {
        audit: NewAudit {
            user: Some("abe".into()),
            ..resolve.audit
        },
        ..resolve
    };
    let (approval, _) = db.store.resolve(&approval.id, resolve).await.unwrap();
    assert_eq!(approval.resolved_by_user.as_deref(), Some("abe"));
    let again = db.store.approval(&approval.id).await.unwrap();
    assert_eq!(again.resolved_by_user.as_deref(), Some("abe"));
    let rows = db
        .store
        .list_audit(&audit_of(waiting.id, "approval_approved"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].user.as_deref(), Some("abe"));
    let created = db
        .store
        .list_audit(&audit_of(task.id, "task_created"))
        .await
        .unwrap();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].user.as_deref(), Some("mia"));
    assert_eq!(created[0].actor, Actor::Operator);
    let plain_created = db
        .store
        .list_audit(&audit_of(plain.id, "task_created"))
        .await
        .unwrap();
    assert_eq!(plain_created[0].user, None);

    let appended = db
        .store
        .append_audit(NewAudit {
            user: Some("zoe".into()),
            ..NewAudit::new(pp_types::AuditAction::TaskCreated)
        })
        .await
        .unwrap();
    assert_eq!(appended.user.as_deref(), Some("zoe"));
}

both!(a_chat_turn_and_a_session_record_their_user);
async fn a_chat_turn_and_a_session_record_their_user(db: TestDb) {
    let task = db.create("a chat turn").await;
    db.store.set_task_user(&task.id, "mia").await.unwrap();
    assert_eq!(
        db.store
            .task(&task.id)
            .await
            .unwrap()
            .created_by_user
            .as_deref(),
        Some("mia")
    );
    db.store.set_task_user(&task.id, "zoe").await.unwrap();
    assert_eq!(
        db.store
            .task(&task.id)
            .await
            .unwrap()
            .created_by_user
            .as_deref(),
        Some("mia"),
        "a recorded creator is kept"
    );
    // An unknown task is a no-op, as on SQLite.
    db.store
        .set_task_user(&TaskId("t_missing".into()), "mia")
        .await
        .unwrap();

    let session = db
        .store
        .create_chat_session(
            NewChatSession {
                title: None,
                workspace: "home".into(),
                created_by: Actor::Operator,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(db.store.chat_session_user(&session.id).await.unwrap(), None);
    db.store
        .set_chat_session_user(&session.id, "mia")
        .await
        .unwrap();
    assert_eq!(
        db.open_again()
            .await
            .chat_session_user(&session.id)
            .await
            .unwrap()
            .as_deref(),
        Some("mia")
    );
    assert!(matches!(
        db.store.set_chat_session_user("s_missing", "mia").await,
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
    assert!(matches!(
        db.store.chat_session_user("s_missing").await,
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
}

both!(a_session_its_turns_and_its_deletion_name_their_user_in_the_ledger);
async fn a_session_its_turns_and_its_deletion_name_their_user_in_the_ledger(db: TestDb) {
    let rows = |action: &'static str| {
        let store = db.store.clone();
        async move {
            store
                .list_audit(&AuditFilter {
                    action: Some(action.into()),
                    ..AuditFilter::default()
                })
                .await
                .unwrap()
        }
    };
    let session = db
        .store
        .create_chat_session(
            NewChatSession {
                title: None,
                workspace: "home".into(),
                created_by: Actor::Operator,
            },
            Some("mia"),
        )
        .await
        .unwrap();
    assert_eq!(
        db.store
            .chat_session_user(&session.id)
            .await
            .unwrap()
            .as_deref(),
        Some("mia")
    );
    let created = rows("session_created").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].user.as_deref(), Some("mia"));

    let turn = db
        .store
        .add_chat_turn(&session.id, new_task("hello"), Some("mia"))
        .await
        .unwrap();
    assert_eq!(turn.task.created_by_user.as_deref(), Some("mia"));
    let task_rows = db
        .store
        .list_audit(&audit_of(turn.task.id.clone(), "task_created"))
        .await
        .unwrap();
    assert_eq!(task_rows.len(), 1);
    assert_eq!(task_rows[0].user.as_deref(), Some("mia"));

    db.store
        .transition(
            &turn.task.id,
            &[pp_types::TaskState::Queued],
            pp_store::TaskChange::to(pp_types::TaskState::Cancelled),
        )
        .await
        .unwrap();
    db.store
        .delete_chat_session(&session.id, Some("olga"))
        .await
        .unwrap();
    let deleted = rows("session_deleted").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].user.as_deref(), Some("olga"));
}

both!(removing_a_user_ends_their_logins_and_keeps_their_tasks);
async fn removing_a_user_ends_their_logins_and_keeps_their_tasks(db: TestDb) {
    db.store.add_user("olga", Role::Owner).await.unwrap();
    let (_, token) = db.store.add_user("mia", Role::Member).await.unwrap();
    db.store.grant_workspace("mia", "finance").await.unwrap();
    let login = db
        .store
        .create_user_login("mia", Duration::from_secs(60))
        .await
        .unwrap();
    let olga_login = db
        .store
        .create_user_login("olga", Duration::from_secs(60))
        .await
        .unwrap();
    let task = db
        .store
        .create_task_as(new_task("mia's task"), Some("mia"))
        .await
        .unwrap();

    let (removed, ended) = db.store.remove_user("mia").await.unwrap();
    assert_eq!(removed.name, "mia");
    assert_eq!(removed.workspaces, ["finance"], "the user as they were");
    assert_eq!(ended, 1);
    assert!(matches!(
        db.store.user("mia").await,
        Err(Error::NotFound { what: "user", .. })
    ));
    assert_eq!(db.store.user_by_token(&token).await.unwrap(), None);
    assert_eq!(db.store.login_owner(&login).await.unwrap(), None);
    assert_eq!(
        db.store.login_owner(&olga_login).await.unwrap(),
        Some(LoginOwner::User("olga".into())),
        "other users' logins stay"
    );
    assert!(
        db.raw_texts("SELECT workspace FROM user_grants WHERE user_name = 'mia'")
            .await
            .is_empty()
    );
    // Their task and its audit row stay, naming them.
    let kept = db.store.task(&task.id).await.unwrap();
    assert_eq!(kept.created_by_user.as_deref(), Some("mia"));
    let rows = db
        .store
        .list_audit(&audit_of(task.id.clone(), "task_created"))
        .await
        .unwrap();
    assert_eq!(rows[0].user.as_deref(), Some("mia"));
    assert!(matches!(
        db.store.remove_user("mia").await,
        Err(Error::NotFound { what: "user", .. })
    ));
    // A name freed by a removal can be added again, with a new token.
    let (_, again) = db.store.add_user("mia", Role::Viewer).await.unwrap();
    assert_ne!(again, token);
}

both!(the_last_owner_is_neither_removed_nor_demoted);
async fn the_last_owner_is_neither_removed_nor_demoted(db: TestDb) {
    db.store.add_user("olga", Role::Owner).await.unwrap();
    db.store.add_user("abe", Role::Approver).await.unwrap();
    assert!(matches!(
        db.store.remove_user("olga").await,
        Err(Error::LastOwner { name }) if name == "olga"
    ));
    assert!(matches!(
        db.store.set_user_role("olga", Role::Approver).await,
        Err(Error::LastOwner { .. })
    ));
    assert_eq!(db.store.user("olga").await.unwrap().role, Role::Owner);
    // Owner to owner changes nothing and is allowed.
    let (same, before) = db.store.set_user_role("olga", Role::Owner).await.unwrap();
    assert_eq!((same.role, before), (Role::Owner, Role::Owner));

    let (abe, before) = db.store.set_user_role("abe", Role::Owner).await.unwrap();
    assert_eq!((abe.role, before), (Role::Owner, Role::Approver));
    let (olga, before) = db.store.set_user_role("olga", Role::Viewer).await.unwrap();
    assert_eq!((olga.role, before), (Role::Viewer, Role::Owner));
    assert_eq!(
        db.open_again().await.user("olga").await.unwrap().role,
        Role::Viewer
    );
    assert!(matches!(
        db.store.remove_user("abe").await,
        Err(Error::LastOwner { .. })
    ));
    db.store.remove_user("olga").await.unwrap();
    assert!(matches!(
        db.store.set_user_role("nobody", Role::Member).await,
        Err(Error::NotFound { what: "user", .. })
    ));
}

both!(two_owners_demoting_each_other_at_once_leave_one_owner);
async fn two_owners_demoting_each_other_at_once_leave_one_owner(db: TestDb) {
    db.store.add_user("olga", Role::Owner).await.unwrap();
    db.store.add_user("otto", Role::Owner).await.unwrap();
    let stores = vec![db.open_again().await, db.open_again().await];
    let outcomes = race(stores, |index, store| async move {
        let name = if index == 0 { "olga" } else { "otto" };
        store.set_user_role(name, Role::Member).await
    })
    .await;
    let refused = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Err(Error::LastOwner { .. })))
        .count();
    assert_eq!(refused, 1, "{outcomes:?}");
    let owners = db
        .store
        .users()
        .await
        .unwrap()
        .into_iter()
        .filter(|user| user.role == Role::Owner)
        .count();
    assert_eq!(owners, 1);
}

both!(eight_processes_adding_one_name_add_it_once);
async fn eight_processes_adding_one_name_add_it_once(db: TestDb) {
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(db.open_again().await);
    }
    let outcomes = race(stores, |_, store| async move {
        store.add_user("sam", Role::Member).await
    })
    .await;
    let mut tokens = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok((_, token)) => tokens.push(token),
            Err(Error::NameTaken { what: "user", name }) => assert_eq!(name, "sam"),
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(tokens.len(), 1, "one add wins");
    assert_eq!(
        db.store
            .user_by_token(&tokens[0])
            .await
            .unwrap()
            .map(|user| user.name),
        Some("sam".to_owned())
    );
    assert_eq!(db.store.users().await.unwrap().len(), 1);
}

/// The audit filter for `action` rows of `task`.
fn audit_of(task: TaskId, action: &str) -> AuditFilter {
    AuditFilter {
        actor: None,
        task_id: Some(task),
        action: Some(action.into()),
        before_id: None,
        exclude: Vec::new(),
        limit: 10,
    }
}
