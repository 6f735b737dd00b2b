//! Team users: tokens stored only as SHA-256, grants, rotation ending the user's logins,
//! and the user recorded on tasks, approvals and audit rows.

use std::time::Duration;

use pp_store::{LoginOwner, Store};
use pp_types::{NewAudit, Role};

use crate::{TestDb, approve, new_task};

#[test]
fn tokens_are_stored_hashed_and_recognised() {
    let db = TestDb::new();
    let (user, token) = db.store.add_user("alice", Role::Owner).unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(user.role, Role::Owner);
    assert!(token.starts_with("ppu_") && token.len() == 68, "{token}");

    let (name, stored): (String, String) = db
        .raw()
        .query_row("SELECT name, token_sha256 FROM users", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!(name, "alice");
    assert_eq!(stored.len(), 64, "a SHA-256 in hex");
    assert!(!stored.contains(&token[4..]) && !token.contains(&stored));
    // No column of the row holds the token text.
    let row: String = db
        .raw()
        .query_row(
            "SELECT name || role || token_sha256 || created_at FROM users",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(!row.contains(&token[4..]));

    assert_eq!(
        db.store
            .user_by_token(&token)
            .unwrap()
            .map(|user| user.name),
        Some("alice".to_owned())
    );
    assert_eq!(db.store.user_by_token("ppu_0000").unwrap(), None);
    assert_eq!(db.store.user_by_token(&token[4..]).unwrap(), None);
    assert!(matches!(
        db.store.add_user("alice", Role::Viewer),
        Err(pp_store::Error::NameTaken { .. })
    ));
}

#[test]
fn grants_and_rotation() {
    let db = TestDb::new();
    let (_, old) = db.store.add_user("bob", Role::Approver).unwrap();
    let user = db.store.grant_workspace("bob", "finance").unwrap();
    assert_eq!(user.workspaces, ["finance"]);
    db.store.grant_workspace("bob", "finance").unwrap();
    let user = db.store.grant_workspace("bob", "research").unwrap();
    assert_eq!(user.workspaces, ["finance", "research"]);
    let (user, removed) = db.store.revoke_workspace("bob", "research").unwrap();
    assert!(removed);
    assert_eq!(user.workspaces, ["finance"]);
    assert!(!db.store.revoke_workspace("bob", "research").unwrap().1);
    assert!(matches!(
        db.store.grant_workspace("nobody", "finance"),
        Err(pp_store::Error::NotFound { what: "user", .. })
    ));

    let login = db
        .store
        .create_user_login("bob", Duration::from_secs(60))
        .unwrap();
    let server_login = db.store.create_login(Duration::from_secs(60)).unwrap();
    assert_eq!(
        db.store.login_owner(&login).unwrap(),
        Some(LoginOwner::User("bob".into()))
    );
    assert_eq!(
        db.store.login_owner(&server_login).unwrap(),
        Some(LoginOwner::Server)
    );

    let (user, new, ended) = db.store.rotate_user_token("bob").unwrap();
    assert_eq!(ended, 1);
    assert!(user.rotated_at.is_some());
    assert_ne!(new, old);
    assert_eq!(db.store.user_by_token(&old).unwrap(), None);
    assert!(db.store.user_by_token(&new).unwrap().is_some());
    assert_eq!(db.store.login_owner(&login).unwrap(), None);
    assert_eq!(
        db.store.login_owner(&server_login).unwrap(),
        Some(LoginOwner::Server),
        "other logins stay"
    );
    let users: Vec<String> = db
        .store
        .users()
        .unwrap()
        .into_iter()
        .map(|user| user.name)
        .collect();
    assert_eq!(users, ["bob"]);
}

#[test]
fn the_user_is_recorded_on_tasks_approvals_and_audit_rows() {
    let db = TestDb::new();
    let task = db
        .store
        .create_task_as(new_task("team task"), Some("mia"))
        .unwrap();
    assert_eq!(task.created_by_user.as_deref(), Some("mia"));
    assert_eq!(
        db.store.task(&task.id).unwrap().created_by_user.as_deref(),
        Some("mia")
    );
    let plain = db.create("single-user task");
    assert_eq!(plain.created_by_user, None);

    let (waiting, approval) = db.waiting("needs approval");
    let resolve = approve();
    let resolve = pp_store::Resolve {
        audit: NewAudit {
            user: Some("abe".into()),
            ..resolve.audit
        },
        ..resolve
    };
    let (approval, _) = db.store.resolve(&approval.id, resolve).unwrap();
    assert_eq!(approval.resolved_by_user.as_deref(), Some("abe"));
    let again = db.store.approval(&approval.id).unwrap();
    assert_eq!(again.resolved_by_user.as_deref(), Some("abe"));
    let rows = db
        .store
        .list_audit(&pp_store::AuditFilter {
            actor: None,
            task_id: Some(waiting.id),
            action: Some("approval_approved".into()),
            before_id: None,
            exclude: Vec::new(),
            limit: 10,
        })
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].user.as_deref(), Some("abe"));
    let created = db
        .store
        .list_audit(&pp_store::AuditFilter {
            actor: None,
            task_id: Some(task.id),
            action: Some("task_created".into()),
            before_id: None,
            exclude: Vec::new(),
            limit: 10,
        })
        .unwrap();
    assert_eq!(created[0].user.as_deref(), Some("mia"));
    let _: &Store = &db.store;
}
