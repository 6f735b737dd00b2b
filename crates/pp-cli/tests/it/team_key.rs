//! Issue 29, item 1: in team mode channel secrets are sealed with the team key
//! (`[team] key_env` or `key_file`), never a data directory's `channels.key`. `serve` and
//! `channels` refuse without it (or with a key file other users may read); a channel
//! sealed with a data directory's key is re-sealed once; and a delivery signed with a
//! channel's secret is accepted by every `serve` of the team (two data directories, one
//! PostgreSQL store), where it used to get 500 from the serve that did not create it.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use pp_test_support::TempTree;
use pp_test_support::postgres::Schema;
use serde_json::{Value, json};

use crate::{Wait as _, pocketpilot_in, text, write_script};

const TEAM_KEY: &str = "7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e";

/// A team config (workspace `finance` at the tree's workspace) with `extra` lines in
/// `[team]` and `store` as `[store] url` when given.
pub(crate) fn team_config(
    tree: &TempTree,
    name: &str,
    extra: &str,
    store: Option<&str>,
) -> PathBuf {
    let file = tree.base().join(name);
    let store = store
        .map(|url| format!("[store]\nurl = {url:?}\n\n"))
        .unwrap_or_default();
    std::fs::write(
        &file,
        format!(
            "{store}[team]\nenabled = true\n{extra}\n[[workspace]]\nname = \"finance\"\n\
             path = {:?}\ndefault = true\n",
            tree.workspace().display().to_string()
        ),
    )
    .unwrap();
    file
}

fn run(home: &Path, config: &Path, args: &[&str]) -> Output {
    pocketpilot_in(home)
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub(crate) fn write_key(file: &Path, mode: u32) {
    std::fs::write(file, format!("{TEAM_KEY}\n")).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn team_mode_refuses_serve_and_channels_without_the_team_key() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_script(tree.base(), &json!([{"content": "ok"}]));
    let none = team_config(&tree, "none.toml", "", None);
    for args in [
        vec!["channels", "list"],
        vec!["serve", "--port", "0", "--script", script.to_str().unwrap()],
    ] {
        let output = run(&home, &none, &args);
        let (_, err) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("team key"), "{args:?}: {err}");
        assert!(err.contains("[team] key_file"), "{args:?}: {err}");
    }
    assert!(
        !home.join("channels.key").exists(),
        "team mode never makes a data directory key"
    );

    let env = team_config(&tree, "env.toml", "key_env = \"PP_TEST_TEAM_KEY\"\n", None);
    let unset = run(&home, &env, &["channels", "list"]);
    assert_eq!(unset.status.code(), Some(2));
    assert!(
        text(&unset).1.contains("PP_TEST_TEAM_KEY"),
        "{}",
        text(&unset).1
    );
    let short = pocketpilot_in(&home)
        .arg("--config")
        .arg(&env)
        .args(["channels", "list"])
        .env("PP_TEST_TEAM_KEY", "abc")
        .output()
        .unwrap();
    assert_eq!(short.status.code(), Some(2));
    assert!(
        text(&short).1.contains("64 hex characters"),
        "{}",
        text(&short).1
    );
    let good = pocketpilot_in(&home)
        .arg("--config")
        .arg(&env)
        .args(["channels", "list"])
        .env("PP_TEST_TEAM_KEY", TEAM_KEY)
        .output()
        .unwrap();
    assert!(good.status.success(), "{:?}", text(&good));
}

#[test]
fn a_team_key_file_other_users_may_read_is_refused() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let key = tree.base().join("team.key");
    let config = team_config(&tree, "team.toml", "key_file = \"team.key\"\n", None);
    let missing = run(&home, &config, &["channels", "list"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing).1.contains("cannot read the team key file"),
        "{}",
        text(&missing).1
    );
    for mode in [0o644, 0o640, 0o604] {
        write_key(&key, mode);
        let output = run(&home, &config, &["channels", "list"]);
        let (_, err) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{mode:o}: {err}");
        assert!(err.contains("chmod 600"), "{mode:o}: {err}");
    }
    write_key(&key, 0o600);
    let output = run(&home, &config, &["channels", "list"]);
    assert!(output.status.success(), "{:?}", text(&output));
}

/// A team `serve` (killed on drop): its port and its stderr lines so far.
pub(crate) struct TeamServe {
    child: Child,
    pub(crate) port: u16,
}

impl TeamServe {
    pub(crate) fn start(home: &Path, config: &Path, script: &Path, log: &Path) -> Self {
        let mut child = pocketpilot_in(home)
            .arg("--config")
            .arg(config)
            .args(["serve", "--port", "0", "--script"])
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PocketPilot team console: http://127.0.0.1:")
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {line:?}; stderr: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )
            });
        Self { child, port }
    }
}

impl Drop for TeamServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Posts a delivery to `channel` on `port` signed with `secret`: the status code.
fn deliver(port: u16, channel: &str, secret: &str, body: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let signature = pp_channels::sign(secret, &timestamp, body.as_bytes());
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /api/channels/{channel}/webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
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

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{:?}", text(output));
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{:?}", text(output)))
}

#[test]
fn every_serve_of_a_team_accepts_a_channels_deliveries() {
    let Some(schema) = Schema::create(
        "cli_team",
        "every_serve_of_a_team_accepts_a_channels_deliveries",
    ) else {
        return;
    };
    let tree = TempTree::new();
    let (home_a, home_b) = (tree.base().join("home-a"), tree.base().join("home-b"));
    let script = write_script(tree.base(), &json!([{"content": "noted"}]));
    write_key(&tree.base().join("team.key"), 0o600);
    let url = schema.url();
    let team = team_config(&tree, "team.toml", "key_file = \"team.key\"\n", Some(&url));

    // Before the team key: a channel made on machine A in single-machine mode on the
    // same store, sealed with A's own channels.key.
    let single = tree.base().join("single.toml");
    std::fs::write(
        &single,
        format!(
            "[store]\nurl = {url:?}\n\n[[workspace]]\nname = \"finance\"\npath = {:?}\n\
             default = true\n",
            tree.workspace().display().to_string()
        ),
    )
    .unwrap();
    let old = json_of(&run(
        &home_a,
        &single,
        &["channels", "add", "old", "--json"],
    ));
    let old_secret = old["secret"].as_str().unwrap().to_owned();
    assert!(home_a.join("channels.key").exists());

    let owner = json_of(&run(
        &home_a,
        &team,
        &["users", "add", "olga", "--role", "owner", "--json"],
    ));
    let token = owner["token"].as_str().unwrap().to_owned();

    let (log_a, log_b) = (tree.base().join("a.log"), tree.base().join("b.log"));
    let a = TeamServe::start(&home_a, &team, &script, &log_a);
    let a_log = std::fs::read_to_string(&log_a).unwrap();
    assert!(
        a_log.contains("channel old: its secret was sealed with this data directory's"),
        "{a_log}"
    );
    assert!(
        a_log.contains("store: PostgreSQL") && !a_log.contains("password"),
        "{a_log}"
    );
    let b = TeamServe::start(&home_b, &team, &script, &log_b);

    // A channel created on machine B, by the owner.
    let forms = pocketpilot_in(&home_b)
        .arg("--config")
        .arg(&team)
        .args(["channels", "add", "forms", "--json", "--user", "olga"])
        .env("POCKETPILOT_TOKEN", &token)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let forms = json_of(&forms);
    let forms_secret = forms["secret"].as_str().unwrap().to_owned();
    assert!(
        !home_b.join("channels.key").exists(),
        "team mode never makes a data directory key"
    );

    for (port, channel, secret, body) in [
        (a.port, "forms", &forms_secret, r#"{"n":1}"#),
        (b.port, "forms", &forms_secret, r#"{"n":2}"#),
        (a.port, "old", &old_secret, r#"{"n":3}"#),
        (b.port, "old", &old_secret, r#"{"n":4}"#),
    ] {
        assert_eq!(
            deliver(port, channel, secret, body),
            202,
            "{channel} on port {port}"
        );
    }
    for channel in ["forms", "old"] {
        let log = json_of(&run(
            &home_b,
            &team,
            &["channels", "deliveries", channel, "--json"],
        ));
        let statuses: Vec<&str> = log["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["accepted", "accepted"], "{channel}: {log}");
    }
    // The creation is audited with the owner who made it; the older channel's re-seal as
    // an update without a user.
    let store_url = pp_store::StoreUrl::parse(&url).unwrap();
    let rows = async {
        let store =
            pp_store::Store::connect(&store_url, std::sync::Arc::new(pp_types::SystemClock))
                .await
                .unwrap();
        store
            .list_audit(&pp_store::AuditFilter::default())
            .await
            .unwrap()
    }
    .wait();
    let made: Vec<(&str, &str, Option<&str>)> = rows
        .iter()
        .filter(|row| row.action.as_str().starts_with("channel_"))
        .map(|row| {
            (
                row.action.as_str(),
                row.target.as_deref().unwrap_or_default(),
                row.user.as_deref(),
            )
        })
        .collect();
    assert!(
        made.contains(&("channel_created", "forms", Some("olga"))),
        "{made:?}"
    );
    assert!(made.contains(&("channel_created", "old", None)), "{made:?}");
    assert!(made.contains(&("channel_updated", "old", None)), "{made:?}");
    drop((a, b));
}
