// @ts-check
// Small formatting helpers shared by several pages (sizes, file names, line counts, the
// readable form of a tool call's arguments). Pages import this module, never each other.

import { block, h, prettyJson } from "./dom.js";
import { escapeInvisible, visibleCode } from "./visible.js";

/**
 * "318 B", "1.2 KB", "14 MB".
 * @param {number | null | undefined} bytes
 * @returns {string}
 */
export function formatSize(bytes) {
  if (bytes === null || bytes === undefined) {
    return "";
  }
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  const units = ["KB", "MB", "GB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/**
 * The last segment of a slash-separated path.
 * @param {string} path
 * @returns {string}
 */
export function baseName(path) {
  const parts = path.split("/");
  return parts[parts.length - 1] || path;
}

/**
 * The number of lines in a text (a trailing newline does not start another line).
 * @param {string} text
 * @returns {number}
 */
export function lineCount(text) {
  if (text === "") {
    return 0;
  }
  return text.replace(/\n$/, "").split("\n").length;
}

/**
 * "12 lines, 318 B" for a text value.
 * @param {string} text
 * @returns {string}
 */
export function describeText(text) {
  const lines = lineCount(text);
  const bytes = new TextEncoder().encode(text).length;
  return `${lines} line${lines === 1 ? "" : "s"}, ${formatSize(bytes)}`;
}

/**
 * A link to the preview page of a workspace file.
 * @param {string} path
 * @param {string} [workspace]
 * @returns {string}
 */
export function previewHref(path, workspace) {
  const params = new URLSearchParams({ path });
  if (workspace) {
    params.set("workspace", workspace);
  }
  return "#/preview?" + params.toString();
}

/**
 * Parses a tool call's arguments (a JSON string in `tool_call` events, an object
 * elsewhere); `null` when they are not a JSON object.
 * @param {unknown} args
 * @returns {Record<string, unknown> | null}
 */
export function parseArguments(args) {
  let value = args;
  if (typeof args === "string") {
    try {
      value = JSON.parse(args);
    } catch {
      return null;
    }
  }
  return value && typeof value === "object" && !Array.isArray(value) ? /** @type {Record<string, unknown>} */ (value) : null;
}

/** A string argument is shown inline when it is short and on one line. */
function isShort(value) {
  return typeof value === "string" && value.length <= 80 && !value.includes("\n");
}

/**
 * One line about a call's arguments: short values as they are, long texts as their size
 * (`path=notes.md · content: 12 lines, 318 B`). Never JSON with `\n`.
 * @param {unknown} args
 * @returns {string}
 */
export function argumentsSummary(args) {
  const value = parseArguments(args);
  if (!value) {
    return typeof args === "string" ? escapeInvisible(args.slice(0, 80)) : "";
  }
  // Short values (a path, a name) first, then the sizes of long texts.
  const entries = Object.entries(value);
  const ordered = [...entries.filter(([, item]) => isShort(item)), ...entries.filter(([, item]) => !isShort(item))];
  return ordered
    .map(([key, item]) => {
      if (isShort(item)) {
        return `${key}=${escapeInvisible(String(item))}`;
      }
      if (typeof item === "string") {
        return `${key}: ${describeText(item)}`;
      }
      if (typeof item === "number" || typeof item === "boolean" || item === null) {
        return `${key}=${String(item)}`;
      }
      return `${key}: ${Array.isArray(item) ? `${item.length} items` : "{…}"}`;
    })
    .join(" · ");
}

/**
 * The arguments as a definition list: short strings as code, long texts as their own
 * (collapsible) block with the line count, other values as pretty JSON.
 * @param {unknown} args
 * @returns {HTMLElement}
 */
export function argumentsList(args) {
  const value = parseArguments(args);
  if (!value) {
    return block(escapeInvisible(prettyJson(args)), "Arguments", "json");
  }
  const list = h("dl", { class: "arguments-list" });
  const entries = Object.entries(value);
  const ordered = [...entries.filter(([, item]) => isShort(item)), ...entries.filter(([, item]) => !isShort(item))];
  for (const [key, item] of ordered) {
    let shown;
    if (isShort(item)) {
      shown = visibleCode(String(item));
    } else if (typeof item === "string") {
      shown = [h("span", { class: "muted small", text: describeText(item) }), block(item, key, "content")];
    } else {
      shown = h("pre", { class: "json", text: prettyJson(item) });
    }
    list.append(h("dt", { text: key }), h("dd", {}, shown));
  }
  return list;
}

/** Bigger texts are not decoded for display or comparison. */
const MAX_BYTES = 1024 * 1024;

/**
 * The UTF-8 text in `buffer`, or null when it is binary (not UTF-8, or has NUL bytes) or
 * larger than 1 MiB.
 * @param {ArrayBuffer} buffer
 * @returns {string | null}
 */
export function readText(buffer) {
  if (buffer.byteLength > MAX_BYTES) {
    return null;
  }
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(buffer);
    return text.includes("\u0000") ? null : text;
  } catch {
    return null;
  }
}

/** The longest untrusted prompt shown before "Show all". */
export const QUOTE_LIMIT = 200;

/** Who can start a task without a person, in the words the pages use beside a quote. */
export const ORIGIN_WORDS = {
  operator: "You",
  scheduler: "Schedule",
  webhook: "Webhook",
  mcp_client: "MCP client",
};

/**
 * Whether a task's prompt came from somewhere other than the person (a webhook, a
 * schedule, an MCP client): such text is shown quoted, never as a headline or link text.
 * @param {{created_by?: string | null}} task
 * @returns {boolean}
 */
export function untrustedPrompt(task) {
  return Boolean(task.created_by) && task.created_by !== "operator";
}

/**
 * "Webhook", "Schedule", "MCP client" or "You" for `created_by`, and the origin's name.
 * @param {{created_by?: string | null, origin?: string | null}} task
 * @returns {HTMLElement}
 */
export function originTag(task) {
  const who = ORIGIN_WORDS[task.created_by || "operator"] || String(task.created_by);
  return h(
    "span",
    { class: "origin-tag", dataset: { createdBy: task.created_by || "operator" } },
    h("span", { class: "origin-kind", text: who }),
    task.origin ? [" ", visibleCode(task.origin, "origin")] : null,
  );
}

/**
 * The first `limit` characters of `text` (whole code points), and whether it was cut.
 * @param {string} text
 * @param {number} [limit]
 * @returns {{ head: string, cut: boolean, length: number }}
 */
export function cutText(text, limit = QUOTE_LIMIT) {
  const chars = Array.from(text);
  return { head: chars.slice(0, limit).join(""), cut: chars.length > limit, length: chars.length };
}

/**
 * An untrusted prompt as a quotation: its origin beside it ("From webhook `ci`"), the
 * text (invisible characters made visible) cut at {@link QUOTE_LIMIT} characters with a
 * "Show all N characters" button. Built with DOM APIs only.
 * @param {{prompt?: string, created_by?: string | null, origin?: string | null}} task
 * @param {{ limit?: number }} [options]
 * @returns {HTMLElement}
 */
export function quotedPrompt(task, { limit = QUOTE_LIMIT } = {}) {
  const text = escapeInvisible(task.prompt || "");
  const { head, cut, length } = cutText(text, limit);
  const quote = h("q", { class: "untrusted-text", text: cut ? head + "…" : head });
  const parts = [h("span", { class: "quoted-from" }, "From ", originTag(task), ": "), quote];
  if (cut) {
    const toggle = h("button", {
      type: "button",
      class: "text-button quote-toggle",
      "aria-expanded": "false",
      text: `Show all ${length} characters`,
    });
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      quote.textContent = open ? text : head + "…";
      toggle.textContent = open ? "Show less" : `Show all ${length} characters`;
    });
    parts.push(" ", toggle);
  }
  return h("p", { class: "quoted-prompt", dataset: { createdBy: task.created_by || "" } }, parts);
}

/**
 * The words that stand for a task where its prompt may not (headline, link text):
 * "Task from webhook ci" for an untrusted prompt, the prompt itself for the person's.
 * @param {{prompt?: string, created_by?: string | null, origin?: string | null}} task
 * @returns {string}
 */
export function taskTitle(task) {
  if (!untrustedPrompt(task)) {
    return task.prompt || "(no prompt)";
  }
  const who = (ORIGIN_WORDS[task.created_by || ""] || String(task.created_by)).toLowerCase().replace(/^mcp/, "MCP");
  // Channel and schedule names are the operator's; an MCP client names itself.
  const named = task.origin && (task.created_by === "webhook" || task.created_by === "scheduler");
  return `Task from ${who}${named ? " " + escapeInvisible(String(task.origin)) : ""}`;
}
