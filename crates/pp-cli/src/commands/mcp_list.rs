//! `pocketpilot mcp list` and `pocketpilot mcp check`: what the configured MCP servers
//! offer the model, and whether they answer.
//!
//! `list` starts (or connects to) every server to learn its tools, resolves them exactly
//! as the "mcp" tool provider does (`pp_mcp::report`), prints each offered tool with the
//! name the model sees, its capability and the level that decided it, and the tools left
//! out with why, and each stdio server's sandbox; `--json` prints `pp_types::McpReport`.
//! Stdio servers start for the default workspace (docs/mcp.md). `check` starts each server (or
//! only NAME), lists its tools and says ok or the error with how long it took; it exits
//! 1 when any server fails.

use std::sync::Arc;
use std::time::Instant;

use pp_mcp::{Backend, ServerConfig};
use pp_types::{McpReport, McpSandbox};
use serde_json::json;

use crate::config::Config;
use crate::output::{errln, outln};
use crate::render::one_line;
use crate::{Exit, exit};

/// `mcp list [--json]`.
pub(crate) async fn list(config: &Config, json: bool) -> anyhow::Result<u8> {
    let clients = crate::mcp_tools::clients(config, config.mcp.servers.clone());
    let (report, warnings) = pp_mcp::report::report_with_warnings(&clients.servers()).await;
    clients.shutdown().await;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report)?;
        for warning in &warnings {
            errln!("warning: {}", one_line(warning));
        }
    }
    Ok(exit::OK)
}

/// A stdio server's sandbox in one line: `NOT confined`, or the workspace access, the
/// network and the extra paths.
fn sandbox_text(sandbox: &McpSandbox) -> String {
    if !sandbox.confined {
        return "NOT confined (confined = false)".to_owned();
    }
    let mut parts = vec![
        format!("workspace {}", one_line(&sandbox.workspace)),
        if sandbox.network {
            "network"
        } else {
            "no network"
        }
        .to_owned(),
    ];
    parts.extend(
        sandbox
            .read
            .iter()
            .map(|path| format!("reads {}", one_line(path))),
    );
    parts.extend(
        sandbox
            .write
            .iter()
            .map(|path| format!("writes {}", one_line(path))),
    );
    parts.join(", ")
}

fn print_report(report: &McpReport) -> anyhow::Result<()> {
    for server in &report.servers {
        outln!(
            "{} ({})",
            one_line(&server.name),
            one_line(&server.transport)
        )?;
        if let Some(sandbox) = &server.sandbox {
            outln!("  sandbox: {}", sandbox_text(sandbox))?;
        }
        if let Some(error) = &server.error {
            outln!("  error: {}", one_line(error))?;
            continue;
        }
        if server.tools.is_empty() {
            outln!("  no tools offered")?;
        }
        for tool in &server.tools {
            outln!(
                "  {:<32} {:<48} {}",
                one_line(&tool.model_name),
                one_line(&tool.capability),
                one_line(&tool.decided_by)
            )?;
        }
        let (unlisted, others): (Vec<_>, Vec<_>) = server
            .unregistered
            .iter()
            .partition(|tool| tool.reason == pp_mcp::resolve::NOT_WHITELISTED);
        for tool in others {
            outln!(
                "  not offered: {} ({})",
                one_line(&tool.name),
                one_line(&tool.reason)
            )?;
        }
        if !unlisted.is_empty() {
            let names: Vec<String> = unlisted
                .iter()
                .map(|tool| one_line(&tool.name).into_owned())
                .collect();
            outln!("  not in the whitelist: {}", names.join(", "))?;
        }
    }
    Ok(())
}

/// One server's check.
struct Checked {
    name: String,
    transport: &'static str,
    result: Result<usize, String>,
    millis: u128,
}

/// `mcp check [NAME] [--json]`.
pub(crate) async fn check(config: &Config, name: Option<String>, json: bool) -> anyhow::Result<u8> {
    let servers = config.mcp.servers.clone();
    let servers: Vec<ServerConfig> = match &name {
        None => servers,
        Some(name) => {
            let chosen: Vec<ServerConfig> = servers
                .into_iter()
                .filter(|server| &server.name == name)
                .collect();
            if chosen.is_empty() {
                return Err(Exit::usage(format!("no MCP server is configured as `{name}`")).into());
            }
            chosen
        }
    };
    let clients = crate::mcp_tools::clients(config, servers);
    let mut checked = Vec::new();
    for (config, backend) in clients.servers() {
        checked.push(check_one(&config, &backend).await);
    }
    clients.shutdown().await;
    let failed = checked.iter().any(|checked| checked.result.is_err());
    if json {
        let servers: Vec<_> = checked
            .iter()
            .map(|checked| match &checked.result {
                Ok(tools) => json!({"name": checked.name, "transport": checked.transport,
                    "ok": true, "tools": tools, "millis": checked.millis}),
                Err(error) => json!({"name": checked.name, "transport": checked.transport,
                    "ok": false, "error": error, "millis": checked.millis}),
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"ok": !failed, "servers": servers}))?
        )?;
    } else {
        for checked in &checked {
            match &checked.result {
                Ok(tools) => outln!(
                    "{}: ok ({}, {tools} tool(s) listed in {} ms)",
                    one_line(&checked.name),
                    checked.transport,
                    checked.millis
                )?,
                Err(error) => outln!(
                    "{}: error after {} ms: {}",
                    one_line(&checked.name),
                    checked.millis,
                    one_line(error)
                )?,
            }
        }
    }
    Ok(if failed { exit::FAILED } else { exit::OK })
}

async fn check_one(config: &ServerConfig, backend: &Arc<dyn Backend>) -> Checked {
    let started = Instant::now();
    let result = backend
        .list_tools()
        .await
        .map(|tools| tools.len())
        .map_err(|error| error.to_string());
    Checked {
        name: config.name.clone(),
        transport: config.transport.kind(),
        result,
        millis: started.elapsed().as_millis(),
    }
}

/// `doctor`'s lines for the MCP servers, `(ok, what, detail)` per server, each started
/// and listed like `mcp check`.
pub(crate) async fn doctor_lines(config: &Config) -> Vec<(bool, String, String)> {
    let clients = crate::mcp_tools::clients(config, config.mcp.servers.clone());
    let mut lines = Vec::new();
    for (config, backend) in clients.servers() {
        let checked = check_one(&config, &backend).await;
        let what = format!("MCP server {}", checked.name);
        lines.push(match checked.result {
            Ok(tools) => (
                true,
                what,
                format!(
                    "{} answered: {tools} tool(s) listed in {} ms",
                    checked.transport, checked.millis
                ),
            ),
            Err(error) => (false, what, error),
        });
    }
    clients.shutdown().await;
    lines
}
