//! `pocketpilot channels`: `add --json` prints the secret once, `list` never does,
//! `test` sends a signed delivery to a running `serve`, whose task waits for approval
//! with nothing on disk until `approvals approve`; the key file is private.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::Server;
use crate::{pocketpilot_in, text, write_script};

fn json_out(output: &std::process::Output) -> Value {
    assert!(output.status.success(), "{:?}", text(output));
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{}", text(output).0))
}

#[test]
fn a_channel_delivery_from_the_cli_waits_for_approval_before_writing() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "form.txt", "content": "Ada"}}]},
                {"content": "filed"}]),
    );
    let server = Server::start(&home, tree.workspace(), Some(&script));

    let added = json_out(
        &pocketpilot_in(&home)
            .args([
                "channels",
                "add",
                "forms",
                "--template",
                "File {{json.name}}",
                "--json",
            ])
            .output()
            .unwrap(),
    );
    let keys: Vec<&str> = added
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["name", "secret", "url"]);
    assert_eq!(added["name"], "forms");
    let secret = added["secret"].as_str().unwrap();
    assert_eq!(secret.len(), 64);
    assert!(
        added["url"]
            .as_str()
            .unwrap()
            .ends_with("/api/channels/forms/webhook")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(home.join("channels.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let listed = pocketpilot_in(&home)
        .args(["channels", "list", "--json"])
        .output()
        .unwrap();
    let listed_text = text(&listed).0;
    assert!(!listed_text.contains(secret), "the secret is shown once");
    assert_eq!(json_out(&listed)["channels"][0]["name"], "forms");

    let sent = json_out(
        &pocketpilot_in(&home)
            .args([
                "channels",
                "test",
                "forms",
                "--json",
                "--body",
                r#"{"name":"Ada"}"#,
            ])
            .arg("--url")
            .arg(format!("http://127.0.0.1:{}", server.port))
            .output()
            .unwrap(),
    );
    assert_eq!(sent["status"], 202, "{sent}");
    let task = sent["response"]["task_id"].as_str().unwrap().to_owned();
    let waiting = server.wait_for_state(&task, "waiting_approval");
    assert_eq!(waiting["created_by"], "webhook");
    assert_eq!(waiting["origin"], "forms");
    assert!(
        !tree.workspace().join("form.txt").exists(),
        "nothing written yet"
    );

    let tasks = json_out(
        &pocketpilot_in(&home)
            .args(["tasks", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(tasks["tasks"][0]["created_by"], "webhook");
    let approvals = json_out(
        &pocketpilot_in(&home)
            .args(["approvals", "list", "--json"])
            .output()
            .unwrap(),
    );
    let approval = approvals["approvals"][0]["id"].as_str().unwrap().to_owned();
    assert!(
        approvals["approvals"][0].to_string().contains("forms"),
        "{approvals}"
    );

    let log = json_out(
        &pocketpilot_in(&home)
            .args(["channels", "deliveries", "forms", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(log["deliveries"][0]["status"], "accepted");

    let approve = pocketpilot_in(&home)
        .args(["approvals", "approve", &approval])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve).1);
    assert_eq!(tree.read("form.txt"), "Ada");

    // A rotated secret: the old deliveries' signatures no longer work, `test` signs anew.
    let rotated = json_out(
        &pocketpilot_in(&home)
            .args(["channels", "rotate", "forms", "--json"])
            .output()
            .unwrap(),
    );
    assert_ne!(rotated["secret"], added["secret"]);
    let disabled = pocketpilot_in(&home)
        .args(["channels", "disable", "forms"])
        .output()
        .unwrap();
    assert!(disabled.status.success());
    let refused = pocketpilot_in(&home)
        .args(["channels", "test", "forms", "--json"])
        .arg("--url")
        .arg(format!("http://127.0.0.1:{}", server.port))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let refused: Value = serde_json::from_str(text(&refused).0.trim()).unwrap();
    assert_eq!(refused["status"], 401);
    assert_eq!(refused["response"]["error"]["code"], "unauthorized");
    let removed = pocketpilot_in(&home)
        .args(["channels", "remove", "forms"])
        .output()
        .unwrap();
    assert!(removed.status.success());
    let missing = pocketpilot_in(&home)
        .args(["channels", "rotate", "forms"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn server_bind_and_allowed_hosts_are_checked_and_name_the_url() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = tree.base().join("pocketpilot.toml");
    std::fs::write(
        &config,
        "[server]\nport = 9123\nbind = \"0.0.0.0\"\nallowed_hosts = [\"pp.example.org\"]\n",
    )
    .unwrap();
    let added = json_out(
        &pocketpilot_in(&home)
            .arg("--config")
            .arg(&config)
            .args(["channels", "add", "forms", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(
        added["url"],
        "http://127.0.0.1:9123/api/channels/forms/webhook"
    );
    for (bad, word) in [
        ("bind = \"example.org\"", "bind"),
        ("allowed_hosts = [\"a/b\"]", "allowed_hosts"),
        ("allowed_hostz = []", "allowed_hostz"),
    ] {
        std::fs::write(&config, format!("[server]\n{bad}\n")).unwrap();
        let refused = pocketpilot_in(&home)
            .arg("--config")
            .arg(&config)
            .args(["channels", "list"])
            .output()
            .unwrap();
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{bad}: {:?}",
            text(&refused)
        );
        assert!(
            text(&refused).1.contains(word),
            "{bad}: {}",
            text(&refused).1
        );
    }
}

/// Posts `body` with these signature headers to `port`; the status code.
fn post_signed(port: u16, name: &str, timestamp: &str, signature: &str, body: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /api/channels/{name}/webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         X-PocketPilot-Timestamp: {timestamp}\r\nX-PocketPilot-Signature: {signature}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn two_servers_on_one_data_directory_refuse_the_same_replay() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(tree.base(), &json!([{"content": "noted"}]));
    let one = Server::start(&home, tree.workspace(), Some(&script));
    let two = Server::start(&home, tree.workspace(), Some(&script));
    let added = json_out(
        &pocketpilot_in(&home)
            .args(["channels", "add", "forms", "--json"])
            .output()
            .unwrap(),
    );
    let secret = added["secret"].as_str().unwrap();
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let body = r#"{"once":true}"#;
    let signature = pp_channels::sign(secret, &timestamp, body.as_bytes());
    assert_eq!(
        post_signed(one.port, "forms", &timestamp, &signature, body),
        202
    );
    assert_eq!(
        post_signed(two.port, "forms", &timestamp, &signature, body),
        401
    );
    assert_eq!(
        post_signed(one.port, "forms", &timestamp, &signature, body),
        401
    );
    let tasks = json_out(
        &pocketpilot_in(&home)
            .args(["tasks", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 1, "{tasks}");
    let log = json_out(
        &pocketpilot_in(&home)
            .args(["channels", "deliveries", "forms", "--json"])
            .output()
            .unwrap(),
    );
    let reasons: Vec<&str> = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["replayed signature", "replayed signature"]);
}
