//! Where the real MCP servers the tests start live: `crates/pp-mcp/tests/servers`, whose
//! `node_modules` `scripts/test.sh` installs with `npm ci` from the committed lockfile
//! (nothing is fetched at test time).

use std::path::{Path, PathBuf};

/// The folder holding `package.json` and (once installed) `node_modules`.
pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pp-mcp/tests/servers")
        .canonicalize()
        .expect("crates/pp-mcp/tests/servers exists")
}

/// The installed servers' folder, or `None` (with a message on stderr) when `npm ci` has
/// not run there: the test then returns early. Under CI (`CI=true`) a missing install
/// panics instead, so the tests cannot silently pass without their servers.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
pub fn installed() -> Option<PathBuf> {
    let dir = servers_dir();
    let ready = dir
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .is_file()
        && dir
            .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
            .is_file();
    if ready {
        return Some(dir);
    }
    let message = format!(
        "the MCP test servers are not installed: run `npm ci` in {} (scripts/test.sh does)",
        dir.display()
    );
    if std::env::var_os("CI").is_some_and(|value| value == "true") {
        panic!("{message}");
    }
    eprintln!("skipping: {message}");
    None
}

/// `node` and the arguments that start `@modelcontextprotocol/server-everything` over
/// stdio.
pub fn everything(dir: &Path) -> (String, Vec<String>) {
    (
        "node".to_owned(),
        vec![
            dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
            "stdio".to_owned(),
        ],
    )
}

/// `node` and the arguments that start `@modelcontextprotocol/server-filesystem` over
/// stdio, allowed into `root` (the server's own limit; ours is the jail).
pub fn filesystem(dir: &Path, root: &Path) -> (String, Vec<String>) {
    (
        "node".to_owned(),
        vec![
            dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
                .display()
                .to_string(),
            root.display().to_string(),
        ],
    )
}

/// The venv holding the official Python MCP SDK (`scripts/test.sh` makes it:
/// `target/mcp-venv`, the version pinned in `crates/pp-mcp/tests/servers/python/
/// requirements.txt`), or `PP_TEST_MCP_VENV`.
pub fn python_venv() -> PathBuf {
    std::env::var_os("PP_TEST_MCP_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-venv"),
        PathBuf::from,
    )
}

/// The venv's `python` and the arguments that start the Python probe server
/// (`crates/pp-mcp/tests/servers/python/probe_server.py`, FastMCP over stdio), or `None`
/// (with a message on stderr) when the venv is missing: the test then returns early.
/// Under CI (`CI=true`) a missing venv panics instead.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
pub fn python_probe() -> Option<(String, Vec<String>)> {
    let venv = python_venv();
    let python = venv.join("bin/python");
    let has_sdk = std::fs::read_dir(venv.join("lib"))
        .map(|entries| {
            entries.flatten().any(|entry| {
                entry
                    .path()
                    .join("site-packages/mcp/server/fastmcp")
                    .is_dir()
            })
        })
        .unwrap_or(false);
    if python.is_file() && has_sdk {
        let script = servers_dir().join("python/probe_server.py");
        return Some((
            python.display().to_string(),
            vec![script.display().to_string()],
        ));
    }
    let message = format!(
        "the Python MCP SDK venv is missing at {}: run `python3 -m venv {0} && {0}/bin/pip \
         install -r crates/pp-mcp/tests/servers/python/requirements.txt` (scripts/test.sh does)",
        venv.display()
    );
    if std::env::var_os("CI").is_some_and(|value| value == "true") {
        panic!("{message}");
    }
    eprintln!("skipping: {message}");
    None
}
