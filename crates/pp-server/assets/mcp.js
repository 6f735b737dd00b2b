// @ts-check
// #/mcp: the MCP servers of the operator's config file (read-only; they are configured
// in pocketpilot.toml, never here): each server's tools with the name the model sees,
// the capability the gate reads and the level that decided it (P0 the tool's action, P1
// the server's default_action, P2 its trusted annotations), and the tools the model is
// never offered, with why, and a stdio server's sandbox (what its process may reach).
// The same data as `pocketpilot mcp list --json`. Names and
// reasons come from the servers: untrusted text, shown with hidden characters visible.

import { api } from "./api.js";
import { h, notice, replace } from "./dom.js";
import { visibleCode } from "./visible.js";

const DECIDED_BY = {
  P0: "P0: the tool's action in the config",
  P1: "P1: the server's default_action",
  P2: "P2: the tool's annotations (trusted)",
};

/** The action word of `mcp:<server>:<tool>:<action>`. @param {string} capability */
function actionOf(capability) {
  return capability.slice(capability.lastIndexOf(":") + 1);
}

/** @param {{name: string, model_name: string, capability: string, decided_by: string}} tool */
function toolRow(tool) {
  const action = actionOf(tool.capability);
  const risk = action === "read" || action === "list" ? "low" : "high";
  return h(
    "tr",
    { dataset: { tool: tool.name } },
    h("td", { "data-label": "Model sees" }, visibleCode(tool.model_name)),
    h("td", { "data-label": "Tool" }, visibleCode(tool.name)),
    h(
      "td",
      { "data-label": "Capability", class: "capability-cell" },
      visibleCode(tool.capability, "capability"),
      " ",
      h("span", {
        class: "badge risk risk-" + risk,
        text: risk === "low" ? "runs at once" : "asks you first",
      }),
    ),
    h("td", { "data-label": "Decided by", text: DECIDED_BY[tool.decided_by] || tool.decided_by }),
  );
}

/**
 * A stdio server's sandbox in one line ("NOT confined" in the strong style).
 * @param {{confined: boolean, workspace: string, read: string[], write: string[], network: boolean}} sandbox
 */
function sandboxLine(sandbox) {
  if (!sandbox.confined) {
    return h("p", { class: "mcp-sandbox" }, h("strong", { class: "unconfined-inline", text: "NOT confined" }), h("span", { text: " (confined = false): its process can reach everything your user can." }));
  }
  const parts = [h("span", { text: `Sandbox: workspace ${sandbox.workspace}, ${sandbox.network ? "network" : "no network"}` })];
  for (const [word, paths] of [["reads", sandbox.read], ["writes", sandbox.write]]) {
    for (const path of paths) {
      parts.push(h("span", { text: `, ${word} ` }), visibleCode(path, "sandbox path"));
    }
  }
  return h("p", { class: "mcp-sandbox muted" }, parts);
}

/** @param {any} server */
function serverPanel(server) {
  const titleId = "mcp-server-" + server.name;
  const parts = [
    h("h2", { id: titleId }, visibleCode(server.name), " ", h("span", { class: "muted small", text: server.transport })),
  ];
  if (server.sandbox) {
    parts.push(sandboxLine(server.sandbox));
  }
  if (server.error) {
    parts.push(notice("error", server.error));
  }
  if (server.tools.length > 0) {
    parts.push(
      h(
        "table",
        { class: "table responsive mcp-tools" },
        h("caption", { class: "visually-hidden", text: `Tools of ${server.name} offered to the model` }),
        h(
          "thead",
          {},
          h("tr", {}, h("th", { text: "Model sees" }), h("th", { text: "Tool" }), h("th", { text: "Capability" }), h("th", { text: "Decided by" })),
        ),
        h("tbody", {}, server.tools.map(toolRow)),
      ),
    );
  } else if (!server.error) {
    parts.push(h("p", { class: "muted", text: "No tool of this server is offered to the model." }));
  }
  if (server.unregistered.length > 0) {
    parts.push(
      h("h3", { text: `Not offered (${server.unregistered.length})` }),
      h(
        "ul",
        { class: "mcp-unregistered" },
        server.unregistered.map((/** @type {{name: string, reason: string}} */ tool) =>
          h("li", { dataset: { tool: tool.name } }, visibleCode(tool.name), ": ", h("span", { text: tool.reason })),
        ),
      ),
    );
  }
  return h("section", { class: "panel mcp-server", "aria-labelledby": titleId, dataset: { server: server.name } }, parts);
}

/** @param {HTMLElement} container */
export function renderMcp(container) {
  const body = h("div", { class: "mcp-servers", "aria-busy": "true" }, h("p", { class: "muted", text: "Asking the servers for their tools…" }));
  replace(
    container,
    h("h1", { text: "MCP servers" }),
    h("p", {
      class: "muted",
      text: "Servers from the config file ([[mcp.server]]). A tool whose capability ends in read or list runs at once; every other one waits for your approval, like any write.",
    }),
    body,
  );
  api("/api/mcp/servers").then(
    (report) => {
      body.removeAttribute("aria-busy");
      if (report.servers.length === 0) {
        replace(
          body,
          h("p", { class: "empty", text: "No MCP servers are configured. Add a [[mcp.server]] entry to pocketpilot.toml (see docs/mcp.md) and restart serve." }),
        );
        return;
      }
      replace(body, report.servers.map(serverPanel));
    },
    (error) => {
      body.removeAttribute("aria-busy");
      if (error.status === 401) {
        return;
      }
      replace(body, notice("error", "Cannot list the MCP servers: " + error.message));
    },
  );
  return null;
}
