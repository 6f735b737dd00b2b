// @ts-check
// What an approval card shows for a call that does more than write a file: a move or
// rename (from → to, and the file it replaces), a delete (its size; the first lines go
// in the card's preview), a new folder, and a command (its exact argv, one argument per
// box with control characters escaped, the working directory, the sandbox and its
// limits, "runs a shell script", and a "NOT confined" banner when the shell runs
// without its sandbox). card.js is the one card component; this module only builds its
// parts from the approval's preview fields (`label`, `destination`,
// `destination_resolved`, `replaces`, `size`, `command`, `mcp`). A call to an MCP
// server's tool (`mcp`) names the server, the tool on it and the resolved action; the
// card then always shows its arguments.

import { h } from "./dom.js";
import { formatSize } from "./format.js";
import { visibleCode } from "./visible.js";

/**
 * @typedef {{ timeout_secs: number, cpu_secs: number, memory_mb: number, processes: number,
 *   file_size_mb: number, output_bytes: number, network: boolean }} CommandLimits
 * @typedef {{ argv: string[], cwd: string, shell: boolean, confined: boolean,
 *   limits: CommandLimits, stdin_bytes?: number, containment?: string,
 *   uncovered?: {files: number, bytes: number} }} CommandPreview
 * @typedef {{ label?: string, target?: string, resolved?: string, destination?: string,
 *   destination_resolved?: string, replaces?: string, size?: number,
 *   command?: CommandPreview, revertible?: boolean, notice?: string,
 *   mcp?: McpCallPreview }} EffectView
 * @typedef {{ confined: boolean, workspace: string, read: string[], write: string[], network: boolean }} McpSandbox
 * @typedef {{ server: string, tool: string, action: string, sandbox?: McpSandbox }} McpCallPreview
 */

/**
 * The folder a workspace path is in (`""` for the workspace's root).
 * @param {string} path
 * @returns {string}
 */
export function parentOf(path) {
  const trimmed = String(path).replace(/\/+$/, "");
  const at = trimmed.lastIndexOf("/");
  return at < 0 ? "" : trimmed.slice(0, at);
}

/**
 * The words of a card's label: "rename" for a move within one folder, "move",
 * "delete", "create folder", "run command", else the label itself ("create",
 * "overwrite").
 * @param {EffectView} view
 * @returns {string}
 */
export function labelWords(view) {
  if (view.mcp) {
    return "MCP " + view.mcp.action;
  }
  switch (view.label) {
    case "move": {
      const from = view.resolved || view.target || "";
      const to = view.destination_resolved || view.destination || "";
      return parentOf(from) === parentOf(to) ? "rename" : "move";
    }
    case "create_folder":
      return "create folder";
    case "run":
      return "run command";
    default:
      return String(view.label || "");
  }
}

/**
 * The "NOT confined" banner for a command that runs without its sandbox, else null.
 * @param {EffectView} view
 * @returns {HTMLElement | null}
 */
export function unconfinedBanner(view) {
  if (view.mcp?.sandbox?.confined === false) {
    const reach = ["every file your user can reach", "the network", "PocketPilot's data directory"].join(", ");
    return h(
      "div",
      { class: "unconfined-banner", role: "note" },
      h("strong", { class: "unconfined-title", text: "NOT confined" }),
      h("span", { text: ` This MCP server's process runs with all of your user's rights: ${reach}. Approve only what you would let it do yourself.` }),
    );
  }
  if (!view.command || view.command.confined !== false) {
    return null;
  }
  const reach = ["every file your user can reach", view.command.limits?.network ? "the network" : null, "PocketPilot's data directory"].filter(Boolean).join(", ");
  return h(
    "div",
    { class: "unconfined-banner", role: "note" },
    h("strong", { class: "unconfined-title", text: "NOT confined" }),
    h("span", { text: ` This command runs with all of your user's rights: ${reach}. Approve only what you would run yourself.` }),
  );
}

/**
 * The effect block under the card's heading (null for plain writes).
 * @param {EffectView} view
 * @returns {HTMLElement | null}
 */
export function effectBlock(view) {
  const block = effectOf(view);
  if (block && view.notice) {
    block.append(h("p", { class: "muted small effect-notice", text: view.notice }));
  }
  return block;
}

/**
 * @param {EffectView} view
 * @returns {HTMLElement | null}
 */
function effectOf(view) {
  if (view.mcp) {
    return mcpBlock(view, view.mcp);
  }
  switch (view.label) {
    case "move":
      return moveBlock(view);
    case "delete":
      return h(
        "div",
        { class: "effect effect-delete" },
        h(
          "p",
          { class: "effect-line" },
          h("span", { class: "effect-verb", text: "Delete " }),
          visibleCode(view.target || "", "target"),
          resolvedNote(view.target, view.resolved),
          Number.isInteger(view.size) ? h("span", { class: "effect-size", text: ` (${formatSize(view.size)})` }) : null,
        ),
      );
    case "create_folder":
      return h(
        "div",
        { class: "effect effect-create_folder" },
        h("p", { class: "effect-line" }, h("span", { class: "effect-verb", text: "Create folder " }), visibleCode(view.target || "", "target"), resolvedNote(view.target, view.resolved)),
      );
    case "run":
      return view.command ? commandBlock(view.command) : null;
    default:
      return null;
  }
}

/**
 * A call to an MCP server's tool: the server, the tool on it, the resolved action, the
 * path argument as written (and where it resolves), and what the jail does not cover.
 * @param {EffectView} view
 * @param {McpCallPreview} mcp
 * @returns {HTMLElement}
 */
function mcpBlock(view, mcp) {
  return h(
    "div",
    { class: "effect effect-mcp" },
    h(
      "p",
      { class: "effect-line" },
      h("span", { class: "effect-verb", text: "Calls " }),
      visibleCode(mcp.tool, "MCP tool"),
      h("span", { text: " on MCP server " }),
      visibleCode(mcp.server, "MCP server"),
      h("span", { text: " — resolved action " }),
      h("strong", { class: "mcp-action", text: mcp.action }),
    ),
    view.target
      ? h("p", { class: "effect-line" }, h("span", { class: "effect-verb", text: "Path " }), visibleCode(view.target, "target"), resolvedNote(view.target, view.resolved))
      : null,
    mcp.sandbox ? mcpSandboxLine(mcp.sandbox) : null,
    h("p", {
      class: "muted small mcp-limit",
      text: mcp.sandbox?.confined === false
        ? "The server runs as its own process, NOT confined: path arguments are checked against the workspace, but the server can touch anything its process can."
        : "The server runs as its own process in its sandbox: path arguments are checked against the workspace; the process reaches only the system folders, what it needs to start and what its sandbox lists.",
    }),
  );
}

/**
 * What the server's sandbox allows when it is wider than the default (the card gets
 * `sandbox` only then): the workspace access, the network, the extra paths.
 * @param {McpSandbox} sandbox
 * @returns {HTMLElement}
 */
function mcpSandboxLine(sandbox) {
  const parts = [];
  if (sandbox.confined === false) {
    parts.push(h("strong", { class: "unconfined-inline", text: "NOT confined" }));
  } else {
    parts.push(h("span", { text: `workspace ${sandbox.workspace}` }));
    if (sandbox.network) {
      parts.push(h("span", { text: ", " }), h("strong", { class: "mcp-network", text: "network" }));
    }
    for (const [word, paths] of [["reads", sandbox.read], ["writes", sandbox.write]]) {
      for (const path of paths || []) {
        parts.push(h("span", { text: `, ${word} ` }), visibleCode(path, "sandbox path"));
      }
    }
  }
  return h("p", { class: "effect-line mcp-sandbox" }, h("span", { class: "effect-verb", text: "Sandbox " }), ...parts);
}

/**
 * " (resolves to x)" when the path the model wrote designates another workspace path.
 * @param {string | undefined} written
 * @param {string | undefined} resolved
 */
function resolvedNote(written, resolved) {
  if (!resolved || !written || resolved === written) {
    return null;
  }
  return h("span", { class: "resolved-note" }, h("span", { class: "muted", text: " (resolves to " }), visibleCode(resolved, "resolved"), h("span", { class: "muted", text: ")" }));
}

/**
 * Rename / move: from → to, the resolved paths when they differ, the file replaced.
 * @param {EffectView} view
 */
function moveBlock(view) {
  const verb = labelWords(view) === "rename" ? "Rename " : "Move ";
  return h(
    "div",
    { class: "effect effect-move" },
    h(
      "p",
      { class: "effect-line move-paths" },
      h("span", { class: "effect-verb", text: verb }),
      h("span", { class: "move-from" }, visibleCode(view.target || "", "target"), resolvedNote(view.target, view.resolved)),
      h("span", { class: "move-arrow", "aria-label": "to", text: " → " }),
      h("span", { class: "move-to" }, visibleCode(view.destination || "", "destination"), resolvedNote(view.destination, view.destination_resolved)),
    ),
    view.replaces
      ? h(
          "p",
          { class: "notice notice-error effect-replaces" },
          h("strong", { text: "Replaces " }),
          visibleCode(view.replaces, "replaces"),
          Number.isInteger(view.size) ? ` (${formatSize(view.size)})` : "",
          ": the file there now is overwritten by the moved one.",
        )
      : null,
  );
}

/**
 * The script a shell is given (`sh -c SCRIPT …`): the argument after `-c`.
 * @param {string[]} argv
 * @returns {string | null}
 */
export function shellScript(argv) {
  const at = argv.indexOf("-c");
  return at >= 0 && at + 1 < argv.length ? argv[at + 1] : null;
}

/**
 * "timeout 60 s", "CPU 60 s", … for the limits list.
 * @param {CommandLimits} limits
 * @returns {string[]}
 */
export function limitsList(limits) {
  return [
    `wall-clock timeout ${limits.timeout_secs} s`,
    `CPU time ${limits.cpu_secs} s`,
    `memory ${limits.memory_mb} MiB`,
    `${limits.processes} processes`,
    `files up to ${limits.file_size_mb} MiB`,
    `output up to ${formatSize(limits.output_bytes)} per stream`,
    limits.network ? "network allowed" : "no network",
  ];
}

/**
 * The command: every argument in its own box (an empty one says so), the script of a
 * shell line by line, then the working directory, the sandbox, the limits and stdin.
 * @param {CommandPreview} command
 */
function commandBlock(command) {
  const argv = Array.isArray(command.argv) ? command.argv : [];
  const script = command.shell ? shellScript(argv) : null;
  const fact = (/** @type {string} */ term, /** @type {any} */ ...detail) => [h("dt", { text: term }), h("dd", {}, ...detail)];
  return h(
    "div",
    { class: "effect effect-run" + (command.confined === false ? " unconfined" : "") },
    h("h3", { text: `Command: ${argv.length} argument${argv.length === 1 ? "" : "s"}, exactly as passed to the program` }),
    h(
      "ol",
      { class: "argv", "aria-label": "command arguments" },
      argv.map((argument, index) =>
        h(
          "li",
          { class: "arg" + (argument === "" ? " arg-empty" : "") },
          h("span", { class: "arg-index", "aria-hidden": "true", text: String(index) }),
          argument === "" ? h("span", { class: "arg-value muted", text: "(empty argument)" }) : visibleCode(argument, "arg-value"),
        ),
      ),
    ),
    command.shell
      ? h(
          "p",
          { class: "notice notice-warn shell-note" },
          h("strong", { text: "Runs a shell script" }),
          ` (${argv[0] || "shell"} -c): the shell interprets the script below — pipes, redirections, globs and every command in it.`,
        )
      : null,
    script !== null
      ? h(
          "ol",
          { class: "script-lines", "aria-label": "shell script" },
          script.split("\n").map((line) => h("li", {}, visibleCode(line, "script-line"))),
        )
      : null,
    h(
      "dl",
      { class: "command-facts" },
      fact("Working directory", command.cwd ? visibleCode(command.cwd, "cwd") : h("span", { text: "the workspace's root" })),
      fact(
        "Sandbox",
        command.confined === false
          ? h("strong", { class: "unconfined-inline", text: "NOT confined" })
          : "confined (Landlock): reads and writes only in the workspace, no network",
      ),
      command.containment ? fact("Processes", command.containment) : null,
      fact("Limits", h("ul", { class: "limits" }, limitsList(command.limits || /** @type {CommandLimits} */ ({})).map((item) => h("li", { text: item })))),
      Number.isInteger(command.stdin_bytes) ? fact("Standard input", formatSize(command.stdin_bytes)) : null,
      command.uncovered ? fact("Revert", uncoveredText(command.uncovered)) : null,
    ),
  );
}

/**
 * What a command's card says of how much of the workspace a revert could not cover
 * (its preview's `uncovered`).
 * @param {{files: number, bytes: number}} uncovered
 * @returns {string}
 */
export function uncoveredText(uncovered) {
  if (!uncovered.files) {
    return "a revert covers the whole workspace";
  }
  const noun = uncovered.files === 1 ? "file" : "files";
  return `a revert could not cover ${uncovered.files} ${noun} (${formatSize(uncovered.bytes)}): too large, beyond the snapshot budget, or ignored`;
}

/**
 * Why the call cannot be undone, when it cannot (the card's note), else null.
 * @param {EffectView} view
 * @returns {string | null}
 */
export function undoNote(view) {
  if (view.mcp) {
    return "This call cannot be undone: PocketPilot does not see what an MCP server changes.";
  }
  if (view.label === "run") {
    // What it changes is recorded after it runs; the card's "Revert" fact says how much
    // of the workspace a revert could not cover.
    return null;
  }
  if (view.revertible !== false) {
    return null;
  }
  switch (view.label) {
    case "delete":
      return "This call cannot be undone: the file it deletes is too large to keep a copy of.";
    case "move":
      return "This call cannot be undone: the file it replaces is too large to keep a copy of.";
    default:
      return "This call cannot be undone: the file it replaces is too large to keep a copy of.";
  }
}
