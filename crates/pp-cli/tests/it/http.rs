//! A minimal HTTP/1.1 client and a `pocketpilot serve` process for end-to-end tests.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::pocketpilot_in;

/// A running `pocketpilot serve`; killed (SIGKILL) on drop.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Server {
    /// Starts `serve --port 0` with `home`, `workspace` and optionally a script.
    pub(crate) fn start(home: &Path, workspace: &Path, script: Option<&Path>) -> Self {
        let mut command = pocketpilot_in(home);
        command
            .args(["serve", "--port", "0", "--workspace"])
            .arg(workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(script) = script {
            command.arg("--script").arg(script);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("PocketPilot console: http://127.0.0.1:")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let (port, token) = url.split_once("/login?token=").unwrap();
        Self {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    /// Sends a request with the bearer token; returns status and JSON body.
    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        request(self.port, method, path, Some(&self.token), body)
    }

    /// Polls `GET /api/tasks/{id}` until its state is `state`.
    pub(crate) fn wait_for_state(&self, id: &str, state: &str) -> Value {
        let mut seen = Value::Null;
        let reached = pp_test_support::wait_until(Duration::from_secs(10), || {
            let (status, task) = self.call("GET", &format!("/api/tasks/{id}"), None);
            let reached = status == 200 && task["state"] == state;
            seen = task;
            reached
        });
        assert!(reached, "task {id} never reached {state}: {seen}");
        seen
    }

    /// SIGKILL, like a crash.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a fresh connection.
pub(crate) fn request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        out.push_str(&after[..size.min(after.len())]);
        rest = after.get(size + 2..).unwrap_or("");
    }
    out
}
