// The one approval card (inbox, task page, chat): what the agent wants to do, how big
// the change is, the diff or full new content, approve / reject / edit, and then what
// really happened to the call.
//
// Resolving is race-free on the server (compare-and-set): when another tab or the CLI
// got there first the server answers 409 `already_resolved`, and the card says so.
// After an approval the card follows the task's events and re-reads the approval until
// its `outcome` is final ("Written …", "Not run — …", "Failed: …"): approving is not the
// same as the file being written, and the card never claims more than the server knows.

import { api } from "./api.js";
import { append, debounce, formatTime, h, notice, prettyJson, replace } from "./dom.js";
import { diffTexts, renderDiffView, renderNewContent, reverseApply, splitLines } from "./diff.js";
import { effectBlock, labelWords, undoNote, unconfinedBanner } from "./effects.js";
import { subscribe } from "./live.js";
import { canDecide } from "./me.js";
import { escapeInvisible, escapeInvisibleJson, resolvesTo, visibleCode } from "./visible.js";

const RESOLVED_WORDS = {
  approved: "approved",
  rejected: "rejected",
  stale: "not run because the file changed after it was requested (stale)",
  cancelled: "cancelled because its task ended",
};

/** "approved via link by operator at 10:00:01", from a resolved approval view. */
export function describeResolution(view) {
  const parts = [RESOLVED_WORDS[view.state] || view.state];
  if (view.resolved_via) {
    // Where the decision was made: console, api, cli, link or telegram.
    parts.push("via " + view.resolved_via);
  }
  if (view.resolved_by) {
    // Team mode names the user who decided.
    parts.push("by " + view.resolved_by + (view.resolved_by_user ? " " + view.resolved_by_user : ""));
  }
  if (view.resolved_at) {
    parts.push("at " + formatTime(view.resolved_at));
  }
  let text = parts.join(" ");
  if (view.edited_arguments) {
    text += ", with edited arguments";
  }
  if (view.reason) {
    text += ` — reason: “${view.reason}”`;
  }
  return text;
}

/** Validates the raw editor's text: a JSON object, or an error message. */
export function parseEditedArguments(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: "This is not valid JSON: " + error.message };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "The arguments must be a JSON object, like {\"path\": \"notes.txt\"}." };
  }
  return { value };
}

const FINAL = new Set(["done", "not_run", "failed"]);

/**
 * What happened to the call, from the server's `outcome` when it has one, else from
 * the approval state: `{ status, message }`, or null while pending.
 */
export function outcomeOf(view, following = true) {
  if (view.outcome && view.outcome.status) {
    return view.outcome;
  }
  switch (view.state) {
    case "pending":
      return null;
    case "rejected":
      return { status: "not_run", message: "Not run — rejected" + (view.reason ? ` (reason: “${view.reason}”)` : "") };
    case "stale":
      return { status: "not_run", message: "Not run — the file changed since you saw it" };
    case "cancelled":
      return { status: "not_run", message: "Not run — task cancelled" };
    default:
      // An older server without outcomes: "running" only while this card follows it.
      return following ? { status: "running", message: "Approved — running…" } : { status: "approved", message: "Approved" };
  }
}

/**
 * A pending card's precheck (`GET /api/approvals/{id}`), else null: decided cards and
 * tools without a target have none.
 */
export function precheckOf(view) {
  return view && view.state === "pending" && view.precheck && typeof view.precheck === "object" ? view.precheck : null;
}

/**
 * The label, scope and line counts the card shows: the precheck's (the target as it is
 * now) when it has them, else the request's. A decided edited call shows what ran.
 */
export function shownEffect(view) {
  if (view.state !== "pending" && view.edited && view.edited.preview) {
    const preview = view.edited.preview;
    return { ...view, label: preview.label, scope: preview.scope, added: preview.added, removed: preview.removed, target: preview.target, resolved: preview.resolved };
  }
  const pre = precheckOf(view);
  if (!pre) {
    return view;
  }
  const shown = { ...view };
  if (pre.label) {
    shown.label = pre.label;
  }
  if (pre.scope) {
    // The counts belong to the scope: never mix the request's counts with the present.
    shown.scope = pre.scope;
    shown.added = pre.added;
    shown.removed = pre.removed;
  } else if (pre.label && pre.label !== view.label) {
    // The effect is not what the request said (an MCP write over an existing file) and
    // its size is unknown: no request-time "new file +N".
    shown.scope = undefined;
    shown.added = undefined;
    shown.removed = undefined;
  }
  return shown;
}

/** Words of a precheck status, for badges and the inbox. */
export const PRECHECK_WORDS = {
  ready: "ready",
  changed: "file changed since the request",
  will_fail: "will fail",
  no_change: "no change on disk",
  unavailable: "cannot be checked here",
};

/**
 * The size badge: `new file +12`, `edit +3 −1`, `replaces whole file`, or the risk —
 * from the precheck when there is one ("will fail" and "no change" replace the size:
 * a call that cannot apply or changes nothing has no size).
 */
export function riskBadge(view) {
  const pre = precheckOf(view);
  if (pre && pre.status === "will_fail") {
    return h("span", { class: "badge status-badge status-will_fail", text: "will fail" });
  }
  if (pre && pre.status === "no_change") {
    return h("span", { class: "badge status-badge status-no_change", text: "no change" });
  }
  const shown = shownEffect(view);
  const counts = [];
  if (Number.isInteger(shown.added)) {
    counts.push("+" + shown.added);
  }
  if (Number.isInteger(shown.removed) && shown.scope !== "new_file") {
    counts.push("−" + shown.removed);
  }
  const suffix = counts.length ? " " + counts.join(" ") : "";
  switch (shown.scope) {
    case "new_file":
      return h("span", { class: "badge scope scope-new_file", text: "new file" + suffix });
    case "edit":
      return h("span", { class: "badge scope scope-edit", text: "edit" + suffix });
    case "replaces_whole_file":
      return h("span", { class: "badge scope scope-replaces_whole_file", text: "replaces whole file" + suffix });
    default:
      return h("span", { class: "badge risk risk-" + view.risk, text: view.risk + " risk" });
  }
}

// ---- Untrusted text (issue 27): quoted, cut at 200 characters, its origin beside it. ----

/** How many characters of untrusted text a card shows before "Show all". */
export const QUOTE_LIMIT = 200;

/**
 * Untrusted (or long) text as a quote: never a headline or a link's text. Cut at
 * `QUOTE_LIMIT` characters with a "Show all" control; invisible characters escaped.
 * `label` goes above it ("The model wrote:"), `origin` beside it.
 */
export function quotedText(text, { label = null, origin = null, className = "" } = {}) {
  // Line breaks stay line breaks; every other invisible or control character is escaped.
  const full = String(text ?? "")
    .split("\n")
    .map((line) => escapeInvisible(line))
    .join("\n");
  const chars = [...full];
  const long = chars.length > QUOTE_LIMIT;
  const short = long ? chars.slice(0, QUOTE_LIMIT).join("") + "…" : full;
  const body = h("span", { class: "quote-text", text: short });
  const quote = h("blockquote", { class: "untrusted-quote" }, body);
  let toggle = null;
  if (long) {
    toggle = h("button", { type: "button", class: "text-button show-all", "aria-expanded": "false", text: `Show all (${chars.length} characters)` });
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      body.textContent = open ? full : short;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Show less" : `Show all (${chars.length} characters)`;
    });
  }
  return h(
    "div",
    { class: ["quoted", className].filter(Boolean).join(" ") },
    label || origin ? h("p", { class: "quote-label small" }, label ? h("span", { text: label }) : null, origin ? [label ? " " : null, origin] : null) : null,
    quote,
    toggle,
  );
}

/** What each provenance input is, in words. */
const INPUT_WORDS = {
  prompt: "your prompt",
  message: "a person’s message",
  webhook: "webhook",
  schedule: "schedule",
  mcp_client: "MCP client",
  mcp_output: "MCP output",
  document: "document",
  file_read: "file read",
  skill: "skill",
};

/**
 * "Follows untrusted input (webhook / MCP output)" for a call whose task took in text
 * that did not come from a person, else null.
 */
export function untrustedMark(provenance) {
  if (!provenance || !provenance.untrusted_input) {
    return null;
  }
  const kinds = [...new Set((provenance.inputs || []).filter((input) => input.untrusted).map((input) => INPUT_WORDS[input.kind] || input.kind))];
  const list = kinds.length ? kinds.join(" / ") : "older input";
  return h(
    "p",
    { class: "untrusted-mark", role: "note" },
    h("strong", { text: `Follows untrusted input (${list})` }),
    h("span", { text: ": text that did not come from you reached the model before it asked for this call. Check it is what you want." }),
  );
}

/** Words of a target's state before a cut call and now (`may_have_run.targets[]`). */
const PATH_WORDS = { absent: "nothing", file: "a file", folder: "an empty folder", unknown: "not known here" };

function sizeWords(bytes) {
  return typeof bytes === "number" ? ` (${bytes} B)` : "";
}

/**
 * Issue 29: the card of an approval that asks again, after a retry, a call the process
 * stopped between its start and its recorded result: "this call may already have run",
 * and each target before that call (from the change log) against the target now. Null
 * on every other card. Paths are model-chosen: shown through `visibleCode`.
 */
export function mayHaveRunBlock(view) {
  const notice = view && view.may_have_run;
  if (!notice || typeof notice !== "object") {
    return null;
  }
  const targets = Array.isArray(notice.targets) ? notice.targets : [];
  return h(
    "div",
    { class: "may-have-run notice notice-warn", role: "note" },
    h("strong", { text: "This call may already have run" }),
    h("p", { class: "may-have-run-message", text: notice.message || "" }),
    targets.map((target) =>
      h(
        "div",
        { class: "may-have-run-target", dataset: { changed: String(target.changed) } },
        h(
          "p",
          {},
          visibleCode(target.path || "", "target"),
          h("span", {
            text:
              `: before the call ${PATH_WORDS[target.before] || target.before}${sizeWords(target.before_size)}` +
              `, now ${PATH_WORDS[target.now] || target.now}${sizeWords(target.now_size)} — ` +
              (target.changed === true ? "changed since the call started" : target.changed === false ? "unchanged since the call started" : "cannot tell whether it changed"),
          }),
        ),
        typeof target.diff === "string" ? renderDiffView({ text: target.diff }, { label: "the target before the call against now", toggle: false }) : null,
      ),
    ),
  );
}

/** "Why this call": the model's own text, quoted, and what the task took in, newest first. */
export function provenanceBlock(provenance) {
  if (!provenance) {
    return null;
  }
  const inputs = Array.isArray(provenance.inputs) ? provenance.inputs : [];
  // Only the person's own prompt or message, and no text of the model's: nothing to add.
  const onlyOwn = inputs.every((input) => !input.untrusted) && inputs.length <= 1 && !provenance.more;
  if (!provenance.model_text && onlyOwn) {
    return null;
  }
  return h(
    "div",
    { class: "provenance" },
    h("h3", { text: "Why this call" }),
    provenance.model_text ? quotedText(provenance.model_text, { label: "The model wrote:", className: "model-text" }) : null,
    inputs.length
      ? h(
          "div",
          { class: "inputs-box" },
          h("p", { class: "muted small", text: "What the task took in since your last message, newest first:" }),
          h(
            "ol",
            { class: "inputs" },
            inputs.map((input) =>
              h(
                "li",
                { class: "input" + (input.untrusted ? " input-untrusted" : ""), dataset: { kind: input.kind } },
                h("span", { class: "input-kind", text: INPUT_WORDS[input.kind] || input.kind }),
                input.source ? [" ", visibleCode(input.source, "input-source")] : null,
                input.untrusted ? h("span", { class: "badge untrusted-badge", text: "untrusted" }) : null,
              ),
            ),
          ),
        )
      : null,
    provenance.more ? h("p", { class: "muted small provenance-more", text: `…and ${provenance.more} older input${provenance.more === 1 ? "" : "s"} not listed.` }) : null,
  );
}

// ---- Keyboard safety (issue 27): decision keys wait 700 ms after a card appears or changes. ----

/** Decision keys are ignored this long after a card appears or its content changes. */
export const KEY_GUARD_MS = 700;

/** Cards on the page by element, for the keyboard (keys.js). */
const CARDS = new WeakMap();

/**
 * Every card on the page by approval id: a card that learns the target's new state (a
 * 409 redraw, a fresh read) passes it to the other copies of the same approval (the task
 * page shows a card in its panel and inline in the timeline), so no copy shows an old diff.
 */
const COPIES = new Map();

/** The card API of an `article.card` element (undefined for anything else). */
export function cardFor(element) {
  return CARDS.get(element);
}

/** Writes `text` into the page's polite live region (screen readers hear outcomes). */
export function announce(text) {
  let region = document.getElementById("decide-live");
  if (!region) {
    region = h("div", { id: "decide-live", class: "visually-hidden", role: "status", "aria-live": "polite" });
    document.body.append(region);
  }
  region.textContent = "";
  // A separate task, so the same text twice is still announced.
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

/** Focuses the next pending card after `element` in its list (or the list's heading). */
export function focusNextPending(element) {
  const list = element.closest("[data-card-list]") || element.parentElement;
  if (!list) {
    return;
  }
  const pending = [...list.querySelectorAll('article.card[data-state="pending"]')];
  const after = pending.find((card) => element.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING);
  const target = after || pending[0] || list.closest("section, .page")?.querySelector("[data-focus-heading]") || element;
  // The person has not seen the card the focus lands on: its keys wait (type-ahead).
  cardFor(target)?.guardKeys();
  target.focus();
}

/** Text with `code` spans (the server's outcome messages quote paths so) as nodes. */
function withCode(text) {
  return text.split("`").map((part, index) => (index % 2 === 1 ? visibleCode(part, "target") : part));
}

/** A string argument edited in its own field. */
function isStringArgs(args) {
  return args && typeof args === "object" && !Array.isArray(args) && Object.values(args).every((value) => typeof value === "string");
}

let cardCounter = 0;

/** A precheck's identity: a redraw happens only when the state shown would differ. */
function precheckKey(pre) {
  return pre ? JSON.stringify([pre.status, pre.fingerprint, pre.diff, pre.content, pre.message, pre.label, pre.scope]) : "none";
}

/** Multi-line outcome messages ("Failed: exit code 1 …\nstdout: …"): the first line, and the rest. */
function splitOutcome(text) {
  const at = text.indexOf("\n");
  return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
}

/**
 * Builds a card for `view`. Returns `{ element, update(view), id, isPending(),
 * approve(), openReject(), openEditor(), closePanels(), keysReady(), guardKeys(),
 * dispose() }`. `update` is called with a fresh view when the host notices the approval
 * changed elsewhere; `onResolved()` runs after this card resolved it (focus then moves to
 * the next pending card unless `focusNext` is false).
 *
 * Issue 27: the badge, size and words come from `precheck` (the target as it is now);
 * an approve always sends the `seen_fingerprint` of the state drawn (an edited call's
 * from `POST /api/approvals/{id}/precheck`), and a 409 `changed_since_seen` redraws the
 * card as things are now; a decided edited call shows what ran; untrusted text is quoted;
 * decided cards fold to their outcome line.
 *
 * `remote` (the approval-link page, `/d/{token}`): the card decides through the link,
 * not as a logged-in person — `remote.resolve(body)` sends `{decision, reason?}` to
 * `POST /api/links/{token}/resolve`; there is no edit, the Approve button only when
 * `remote.approvable`, no following of the task's events (the page has no session),
 * and a `409`/`410`/`403` ends the card's decisions and goes to `remote.ended(error)`.
 */
export function approvalCard(view, { onResolved = () => {}, linkToTask = true, focusNext = true, remote = null } = {}) {
  const uid = "card-" + ++cardCounter;
  const id = view.id;
  let resolvedHere = false;
  let current = view;
  let follower = null;
  /** The fingerprint of the target state the card shows (sent as `seen_fingerprint`). */
  let seenFingerprint = null;
  /** The precheck drawn, to redraw only on a real change. */
  let drawnKey = null;
  /** Keys wait until this time (performance.now()). */
  let keysReadyAt = 0;
  /** The last precheck of the edited call: `{ key, precheck }` or `{ key, error }`. */
  let editCheck = { key: null };
  let editSeq = 0;
  let commandShown = false;

  const guardKeys = () => {
    keysReadyAt = performance.now() + KEY_GUARD_MS;
  };
  guardKeys();

  const status = h("div", { class: "card-status", role: "status", "aria-live": "polite" });
  const outcomeLine = h("div", { class: "card-outcome" });
  const actions = h("div", { class: "card-actions" });
  const currentSlot = h("div", { class: "card-current" });
  const previewSlot = h("div", { class: "card-preview" });
  const ranSlot = h("div", { class: "card-ran" });
  const badges = h("div", { class: "card-badges" });
  const titleTarget = h("span", { class: "title-target" });
  const bodyId = uid + "-body";
  const body = h("div", { class: "card-body", id: bodyId });
  const expander = h("button", { type: "button", class: "text-button card-expand", "aria-expanded": "true", "aria-controls": bodyId, hidden: true, text: "Hide details" });
  expander.addEventListener("click", () => setCollapsed(expander.getAttribute("aria-expanded") === "true"));

  // Reject with an optional reason.
  const reasonInput = h("input", {
    id: uid + "-reason",
    type: "text",
    class: "reject-reason",
    maxlength: 2000,
    placeholder: "Optional: tell the agent why",
  });
  const rejectPanel = h(
    "div",
    { class: "subpanel reject-panel", hidden: true },
    h("label", { for: uid + "-reason", text: "Reason for rejecting (optional)" }),
    reasonInput,
    h(
      "div",
      { class: "button-row" },
      h("button", { type: "button", class: "button danger confirm-reject", onclick: () => reject(), text: "Reject call" }),
      h("button", { type: "button", class: "button ghost", onclick: () => closePanels(), text: "Back" }),
    ),
  );
  reasonInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      reject();
    }
  });

  // Edit: structured fields for file tools, raw JSON for the rest.
  const structured = Boolean(view.scope) && isStringArgs(view.arguments);
  // A call with a target (file tools, memory, MCP paths): its edit is re-diffed by the server.
  const hasTarget = view.precheck !== null && view.precheck !== undefined && !view.command && view.label !== "run";
  const fields = new Map();
  const editError = h("div", { class: "edit-error", role: "alert" });
  const rediff = h("div", { class: "rediff", "aria-live": "off" });
  const rawEditor = h("textarea", {
    id: uid + "-editor",
    class: "json-editor",
    rows: 8,
    spellcheck: "false",
    autocapitalize: "off",
    autocomplete: "off",
  });
  const editBody = h("div", { class: "edit-fields" });
  if (structured) {
    // The path first (the keys arrive sorted by name), then the texts.
    const entries = Object.entries(view.arguments).sort(([a], [b]) => (b === "path") - (a === "path"));
    for (const [key, value] of entries) {
      const fieldId = `${uid}-arg-${key}`;
      const multiline = key !== "path" && (value.includes("\n") || value.length > 80 || key === "content" || /text|content|body/.test(key));
      const input = multiline
        ? h("textarea", { id: fieldId, class: "arg-text", rows: Math.min(16, Math.max(3, splitLines(value).length + 1)), spellcheck: "false", autocapitalize: "off", autocomplete: "off", dataset: { arg: key } })
        : h("input", { id: fieldId, type: "text", class: "arg-line", spellcheck: "false", autocapitalize: "off", autocomplete: "off", dataset: { arg: key } });
      input.value = value;
      fields.set(key, input);
      editBody.append(h("div", { class: "field" }, h("label", { for: fieldId, text: key === "path" ? "Path (in the workspace)" : key.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase()) }), input));
    }
  } else {
    editBody.append(h("label", { for: uid + "-editor", text: "Arguments (JSON)" }), rawEditor);
  }
  const approveEditedButton = h("button", { type: "button", class: "button primary approve-edited", onclick: () => approveEdited(), text: "Approve edited call" });
  const editPanel = h(
    "div",
    { class: "subpanel edit-panel", hidden: true },
    editBody,
    hasTarget ? h("h3", { text: "What the edited call changes" }) : null,
    hasTarget ? rediff : null,
    h("p", {
      class: "muted small",
      text: "Edited arguments are checked again by the server (the tool's schema and the workspace rules) before anything runs.",
    }),
    editError,
    h("div", { class: "button-row" }, approveEditedButton, h("button", { type: "button", class: "button ghost", onclick: () => closePanels(), text: "Back" })),
  );

  const editedArguments = () => {
    const value = {};
    for (const [key, input] of fields) {
      value[key] = input.value;
    }
    return value;
  };

  /** The edited arguments as typed: `{ value }` or `{ error }`. */
  const typedArguments = () => (structured ? { value: editedArguments() } : parseEditedArguments(rawEditor.value));

  /**
   * The edited call as the server sees it now (`POST …/precheck`): its diff against the
   * target it names (a new path: a new file; a memory append: the memory as it is), and
   * the fingerprint an approve of it sends.
   */
  async function checkEdit() {
    const typed = typedArguments();
    if (typed.error) {
      editCheck = { key: null };
      replace(rediff, h("p", { class: "muted small", text: "Fix the JSON to see what the edited call changes." }));
      return;
    }
    const key = JSON.stringify(typed.value);
    const seq = ++editSeq;
    let pre;
    try {
      pre = await api(`/api/approvals/${encodeURIComponent(id)}/precheck`, { method: "POST", body: { edited_arguments: typed.value } });
    } catch (error) {
      if (seq !== editSeq) {
        return;
      }
      editCheck = { key, error };
      replace(rediff);
      if (error.status === 409 && error.code === "already_resolved") {
        await showAlreadyResolved();
        resolvedNow();
      } else if (error.status === 422) {
        replace(editError, notice("error", "The server refused the edited arguments: " + error.message));
      } else {
        replace(rediff, notice("warn", "Cannot check the edited call now: " + error.message));
      }
      return;
    }
    if (seq !== editSeq) {
      return;
    }
    editCheck = { key, precheck: pre };
    drawEditCheck(typed.value, pre);
  }
  const recheck = debounce(checkEdit, 250);

  function drawEditCheck(edited, pre) {
    const parts = [];
    if (structured && "path" in edited && edited.path !== view.arguments.path) {
      parts.push(h("p", { class: "notice notice-info" }, "Writes to ", visibleCode(edited.path || "(empty path)", "target"), " instead of ", visibleCode(view.arguments.path, "target"), "."));
    }
    if (!pre) {
      parts.push(h("p", { class: "muted small rediff-summary", text: "This call names no file: nothing to compare." }));
    } else if (pre.status === "will_fail") {
      parts.push(h("p", { class: "notice notice-error rediff-summary", text: "The edited call will fail: " + (pre.message || "it cannot apply as things are now") }));
    } else if (pre.status === "no_change") {
      parts.push(h("p", { class: "notice notice-info rediff-summary", text: "No change on disk — the edited call leaves the file as it is." }));
    } else if (pre.status === "unavailable") {
      parts.push(h("p", { class: "notice notice-info rediff-summary", text: "Cannot be checked here: " + (pre.message || "the target is not readable by this server") }));
    } else if (typeof pre.diff === "string" && pre.diff) {
      const counts = Number.isInteger(pre.added) ? `: +${pre.added} −${pre.removed ?? 0} lines` : "";
      parts.push(h("p", { class: "muted small rediff-summary", text: `Against the file as it is now${counts}.` }));
      parts.push(renderDiffView({ text: pre.diff }, { label: "diff of the edited call", toggle: false }));
    } else if (typeof pre.content === "string") {
      const count = splitLines(pre.content).length;
      parts.push(h("p", { class: "muted small rediff-summary", text: `Creates a new file: +${count} line${count === 1 ? "" : "s"}.` }));
      parts.push(renderNewContent(pre.content, "content of the edited call"));
    } else {
      parts.push(h("p", { class: "muted small rediff-summary", text: "The edited call applies to the target as it is now." }));
    }
    replace(rediff, parts);
  }

  editPanel.addEventListener("input", () => {
    // A refusal was about the old text: it goes away once the text changes.
    replace(editError);
    editCheck = { key: null };
    if (hasTarget) {
      recheck();
    }
  });

  const approveButton = h("button", { type: "button", class: "button primary approve", "aria-keyshortcuts": "a", onclick: () => approve(), text: "Approve" });
  const rejectButton = h("button", { type: "button", class: "button danger reject", "aria-keyshortcuts": "r", onclick: () => openReject(), text: "Reject…" });
  const editButton = h("button", { type: "button", class: "button edit", "aria-keyshortcuts": "e", onclick: () => openEditor(), text: structured ? "Edit…" : "Edit arguments…" });

  /** The buttons' words and order follow the precheck ("will fail": Reject is first and primary). */
  function drawActions(fresh) {
    if (remote) {
      drawRemoteActions(fresh);
      return;
    }
    if (!canDecide()) {
      // A role that cannot decide (team mode: member, viewer) gets no decision buttons.
      return;
    }
    const state = precheckOf(fresh)?.status;
    approveButton.textContent =
      state === "will_fail"
        ? "Approve anyway — it will fail"
        : state === "changed"
          ? "Approve against the file as it is now"
          : "Approve";
    rejectButton.textContent = state === "changed" ? "Reject — ask the agent to redo it" : state === "will_fail" ? "Reject — tell the agent it fails…" : "Reject…";
    approveButton.className = "button approve " + (state === "will_fail" ? "ghost approve-anyway" : "primary");
    rejectButton.className = "button reject " + (state === "will_fail" ? "danger-primary" : "danger");
    if (state === "will_fail") {
      actions.replaceChildren(rejectButton, approveButton, editButton);
    } else {
      actions.replaceChildren(approveButton, rejectButton, editButton);
    }
  }

  /** A link's buttons: Approve (when the link may approve this call) and Reject…, no edit. */
  function drawRemoteActions(fresh) {
    const state = precheckOf(fresh)?.status;
    approveButton.textContent = state === "will_fail" ? "Approve anyway — it will fail" : "Approve";
    approveButton.className = "button approve " + (state === "will_fail" ? "ghost approve-anyway" : "primary");
    rejectButton.textContent = "Reject…";
    rejectButton.className = "button reject danger";
    actions.replaceChildren(...(remote.approvable ? [approveButton] : []), rejectButton);
  }

  const unconfined = Boolean(view.command && view.command.confined === false);
  const element = h("article", {
    class: "card" + (unconfined ? " unconfined" : ""),
    tabindex: "-1",
    "aria-labelledby": uid + "-title",
    dataset: { approvalId: id, taskId: view.task_id, state: view.state },
  });

  /** The card's classes and badges for `fresh` (the precheck decides the size). */
  function drawHead(fresh) {
    const shown = shownEffect(fresh);
    const pre = precheckOf(fresh);
    const strong = !pre?.status?.match(/will_fail|no_change/) && (shown.scope === "replaces_whole_file" || (!shown.scope && fresh.risk === "high"));
    for (const name of [...element.classList]) {
      if (/^(scope-|effect-|precheck-)/.test(name) || name === "risk-high") {
        element.classList.remove(name);
      }
    }
    if (strong) {
      element.classList.add("risk-high");
    }
    if (shown.scope) {
      element.classList.add("scope-" + shown.scope);
    }
    if (shown.label) {
      element.classList.add("effect-" + shown.label);
    }
    if (pre) {
      element.classList.add("precheck-" + pre.status);
      element.dataset.precheck = pre.status;
    } else {
      delete element.dataset.precheck;
    }
    replace(
      badges,
      shown.label && !shown.scope ? h("span", { class: "badge label-" + shown.label, text: labelWords(shown) }) : null,
      unconfined ? h("span", { class: "badge unconfined-badge", text: "NOT confined" }) : null,
      riskBadge(fresh),
      pre && pre.status === "changed" ? h("span", { class: "badge status-badge status-changed", text: "changed since the request" }) : null,
      pre && pre.status === "unavailable" ? h("span", { class: "badge status-badge status-unavailable", text: "not checked" }) : null,
      undoNote(shown) ? h("span", { class: "badge irreversible", text: "cannot be undone" }) : null,
      h("code", { class: "capability", title: "capability", text: fresh.capability }),
    );
    replace(titleTarget, shown.target ? visibleCode(shown.target, "target") : null);
  }

  function setCollapsed(collapsed) {
    body.hidden = collapsed;
    badges.hidden = collapsed;
    element.classList.toggle("collapsed", collapsed);
    expander.setAttribute("aria-expanded", String(!collapsed));
    expander.textContent = collapsed ? "Show details" : "Hide details";
  }

  function closePanels() {
    const wasOpen = !rejectPanel.hidden || !editPanel.hidden;
    rejectPanel.hidden = true;
    editPanel.hidden = true;
    recheck.cancel();
    if (isPending()) {
      actions.hidden = false;
      if (wasOpen) {
        approveButton.focus();
      }
    }
  }

  function openPanel(panel, focus) {
    if (!isPending()) {
      return;
    }
    rejectPanel.hidden = panel !== rejectPanel;
    editPanel.hidden = panel !== editPanel;
    actions.hidden = true;
    replace(status);
    focus.focus();
  }

  function openReject() {
    if (precheckOf(current)?.status === "changed" && !reasonInput.value) {
      reasonInput.value = "The file changed since you asked: read it again and redo the change against it as it is now.";
    }
    openPanel(rejectPanel, reasonInput);
  }

  function openEditor() {
    if (!structured && !rawEditor.value) {
      rawEditor.value = prettyJson(current.arguments);
    }
    replace(editError);
    if (hasTarget) {
      replace(rediff, h("p", { class: "muted small", text: "Checking the edited call against the file as it is now…" }));
      checkEdit();
    }
    openPanel(editPanel, structured ? fields.get(contentKey() || editKeys().newKey) || fields.values().next().value : rawEditor);
  }

  /** The argument holding a whole file's content (write tools): the one equal to `content`. */
  function contentKey() {
    const args = view.arguments || {};
    if (typeof view.content === "string") {
      const key = Object.keys(args).find((name) => args[name] === view.content);
      if (key) {
        return key;
      }
    }
    return "content" in args ? "content" : null;
  }

  /** Old/new text arguments of an edit (named so in the schema, else the first two texts). */
  function editKeys() {
    const names = Object.keys(view.arguments || {}).filter((name) => name !== "path");
    const oldKey = names.find((name) => /old|find|search/.test(name)) || names[0];
    const newKey = names.find((name) => name !== oldKey && /new|replace/.test(name)) || names.find((name) => name !== oldKey);
    return { oldKey, newKey };
  }

  function setBusy(busy) {
    for (const button of element.querySelectorAll(".card-actions button, .subpanel button")) {
      button.disabled = busy;
    }
    element.classList.toggle("busy", busy);
  }

  function showOutcome(fresh) {
    const outcome = outcomeOf(fresh, Boolean(follower) || resolvedHere);
    if (!outcome) {
      replace(outcomeLine);
      return;
    }
    element.dataset.outcome = outcome.status;
    const kind = { done: "ok", approved: "ok", not_run: "warn", failed: "error", running: "info" }[outcome.status] || "info";
    const text = outcome.status === "running" ? "Approved — running…" : outcome.message;
    const [headline, rest] = splitOutcome(text);
    const previous = outcomeLine.dataset.text;
    outcomeLine.dataset.text = text;
    const edited = fresh.edited;
    replace(
      outcomeLine,
      h("p", { class: `notice notice-${kind} outcome outcome-${outcome.status}` }, h("span", { class: "outcome-text" }, withCode(headline))),
      rest ? h("details", { class: "outcome-output" }, h("summary", { text: "Output" }), h("pre", { class: "output", text: rest })) : null,
      h("p", { class: "muted small resolution", text: describeResolution(fresh).replace(/^./, (c) => c.toUpperCase()) + "." }),
      edited ? h("p", { class: "edited-mark", text: `Edited by ${edited.by || "the person who approved it"} before approving: what ran is below, not the agent’s request.` }) : null,
    );
    if (previous !== text && resolvedHere) {
      announce(headline.replaceAll("`", ""));
    }
    if (FINAL.has(outcome.status)) {
      showCommandResult(fresh);
    }
  }

  /**
   * A command's exit code and (folded) output, from the call's result in the task's
   * events: the outcome line says only "Ran …".
   */
  async function showCommandResult(fresh) {
    if (commandShown || fresh.label !== "run" || fresh.state !== "approved" || /exit code/.test(outcomeLine.dataset.text || "")) {
      return;
    }
    commandShown = true;
    let events;
    try {
      events = (await api(`/api/tasks/${encodeURIComponent(fresh.task_id)}/events?limit=5000`)).events;
    } catch {
      commandShown = false;
      return;
    }
    const asked = events.find((stored) => stored.type === "approval_required" && stored.approval_id === id);
    const result = asked && events.find((stored) => stored.call_id === asked.call_id && (stored.type === "tool_result" || stored.type === "tool_error"));
    if (!result) {
      commandShown = false;
      return;
    }
    const text = result.type === "tool_result" ? (typeof result.content === "string" ? result.content : prettyJson(result.content)) : String(result.message || "");
    // The result may start with a note ("[the person edited this call …]"): the headline
    // is the line that says how the command ended.
    const lines = text.replace(/^Failed: /, "").split("\n");
    const at = Math.max(0, lines.findIndex((line) => /^(exit code|killed)/.test(line)));
    const headline = lines[at];
    const rest = lines.slice(at + 1).join("\n");
    const exit = /exit code (-?\d+)/.exec(headline);
    outcomeLine.append(
      h(
        "div",
        { class: "command-result" },
        h("p", { class: "command-exit" + (exit && exit[1] !== "0" ? " exit-nonzero" : "") }, h("strong", { text: exit ? `Exit code ${exit[1]}` : "Result" }), h("span", { class: "muted", text: exit ? headline.slice(exit.index + exit[0].length) : ": " + headline })),
        rest && !outcomeLine.querySelector(".outcome-output") ? h("details", { class: "outcome-output" }, h("summary", { text: "Output" }), h("pre", { class: "output", text: rest })) : null,
      ),
    );
  }

  /** A decided edited call: the arguments that ran and their effect, marked as edited. */
  function drawRan(fresh) {
    const edited = fresh.state !== "pending" ? fresh.edited : null;
    if (!edited) {
      replace(ranSlot);
      previewSlot.hidden = false;
      return;
    }
    const preview = edited.preview || {};
    const parts = [h("h3", { text: `What ran — edited by ${edited.by || "the approver"} before approving` })];
    if (typeof preview.diff === "string" && preview.diff) {
      parts.push(renderDiffView({ text: preview.diff }, { label: "diff of the call that ran" }));
    } else if (typeof preview.content === "string") {
      const count = splitLines(preview.content).length;
      parts.push(h("p", { class: "muted small", text: `New file content (${count} line${count === 1 ? "" : "s"})` }), renderNewContent(preview.content, "content of the call that ran"));
    }
    parts.push(h("details", { class: "arguments ran-arguments", open: true }, h("summary", { text: "Arguments that ran (JSON)" }), h("pre", { class: "json", text: escapeInvisibleJson(prettyJson(edited.arguments)) })));
    replace(ranSlot, parts);
    // The agent's request stays readable, folded and named as what it was.
    previewSlot.hidden = true;
    argsSummary.textContent = "The agent’s original arguments (not what ran)";
    argsDetails.open = false;
    drawHead(fresh);
  }

  function finish(fresh, extra, following = true) {
    rejectPanel.hidden = true;
    editPanel.hidden = true;
    actions.hidden = true;
    actions.replaceChildren();
    recheck.cancel();
    element.classList.add("resolved");
    element.dataset.state = fresh.state;
    replace(currentSlot);
    replace(
      status,
      extra ? notice("warn", extra) : null,
      linkToTask ? h("a", { href: "#/tasks/" + encodeURIComponent(fresh.task_id), text: "Follow the task’s timeline →" }) : null,
    );
    if (following && !FINAL.has(outcomeOf(fresh)?.status)) {
      follow();
    }
    drawHead(fresh);
    drawRan(fresh);
    showOutcome(fresh);
    // Decided: the card folds to its outcome line (a control unfolds it).
    expander.hidden = false;
    setCollapsed(true);
  }

  /**
   * Follows the task's events until the call's outcome is final. Without an `outcome`
   * from the server (older servers) the call's tool_result / tool_error decide.
   */
  function follow() {
    if (follower) {
      return;
    }
    const taskId = current.task_id;
    let callId = null;
    let fallback = null;
    let scanned = false;
    const note = (stored) => {
      if (stored.type === "approval_required" && stored.approval_id === id) {
        callId = stored.call_id;
      } else if (callId && stored.call_id === callId && stored.type === "tool_result") {
        fallback = { status: "done", message: `Done — ${stored.name} ran` };
      } else if (callId && stored.call_id === callId && stored.type === "tool_error") {
        fallback = { status: "failed", message: "Failed: " + stored.message };
      } else if (!fallback && ["task_cancelled", "task_failed", "task_interrupted"].includes(stored.type)) {
        fallback = { status: "not_run", message: stored.type === "task_cancelled" ? "Not run — task cancelled" : "Not run — the task ended" };
      }
    };
    const refetch = debounce(async () => {
      let fresh;
      try {
        fresh = await api("/api/approvals/" + encodeURIComponent(id));
      } catch {
        return;
      }
      if (!fresh.outcome && !scanned) {
        // An older server: find the call in the task's events so far.
        scanned = true;
        try {
          const page = await api(`/api/tasks/${encodeURIComponent(taskId)}/events?limit=5000`);
          page.events.forEach(note);
        } catch {
          // The live events still tell.
        }
      }
      current = fresh;
      element.dataset.state = fresh.state;
      if (!fresh.outcome && fallback && fresh.state === "approved") {
        fresh = { ...fresh, outcome: fallback };
      }
      if (fresh.edited && !ranSlot.firstChild) {
        drawRan(fresh);
      }
      showOutcome(fresh);
      if (FINAL.has(outcomeOf(fresh).status)) {
        follower.stop();
      }
    }, 150);
    const unsubscribe = subscribe(
      (stored) => {
        if (stored.type === "resync" || stored.task_id === taskId) {
          if (scanned) {
            note(stored);
          }
          refetch();
        }
      },
      () => element.isConnected,
    );
    follower = {
      stop() {
        unsubscribe();
        refetch.cancel();
      },
    };
    refetch();
  }

  async function showAlreadyResolved() {
    resolvedHere = true;
    let fresh = { ...current, state: "resolved" };
    let detail = "";
    try {
      fresh = await api("/api/approvals/" + encodeURIComponent(id));
      current = fresh;
      detail = " It was " + describeResolution(fresh) + ".";
    } catch {
      // The short message is enough.
    }
    finish(fresh, "Already resolved: someone else decided first (another tab or the command line)." + detail);
    element.classList.add("conflict");
  }

  function resolvedNow() {
    onResolved();
    if (focusNext && element.isConnected) {
      focusNextPending(element);
    }
  }

  /**
   * 409 `changed_since_seen`: nothing ran and the approval is still pending. The card is
   * drawn again as the target is now, and the person decides again.
   */
  async function changedWhileLooking() {
    let fresh = null;
    try {
      fresh = await api("/api/approvals/" + encodeURIComponent(id));
    } catch {
      // Said below; the next decision is checked again anyway.
    }
    if (fresh && fresh.state !== "pending") {
      update(fresh);
      return;
    }
    if (fresh) {
      drawnKey = null;
      update(fresh);
    }
    const words = "The file changed while you were looking — here is how it is now. Nothing ran; decide again.";
    replace(status, h("p", { class: "notice notice-warn changed-while-looking", text: words }));
    announce("The file changed while you were looking — here is how it is now");
    if (!editPanel.hidden) {
      checkEdit();
    }
  }

  async function resolve(body) {
    setBusy(true);
    replace(status, notice("info", "Sending your decision…"));
    try {
      if (remote) {
        await remote.resolve({ decision: body.decision, ...(body.reason ? { reason: body.reason } : {}) });
      } else {
        await api(`/api/approvals/${encodeURIComponent(id)}/resolve`, { method: "POST", body });
      }
      resolvedHere = true;
      const approved = body.decision === "approve";
      current = {
        ...current,
        state: approved ? "approved" : "rejected",
        reason: body.reason,
        edited_arguments: body.edited_arguments,
        resolved_at: new Date().toISOString(),
        ...(remote ? { resolved_via: "link" } : {}),
      };
      finish(current, null, !remote);
      announce(approved ? "Approved — running…" : "Rejected. The agent was told.");
      resolvedNow();
    } catch (error) {
      setBusy(false);
      if (remote && (error.status === 410 || error.status === 403 || (error.status === 409 && error.code === "changed_since_seen"))) {
        // The link no longer decides this (or may not approve it): the page says why.
        if (error.code !== "not_remotely_approvable") {
          rejectPanel.hidden = true;
          actions.hidden = true;
          actions.replaceChildren();
        }
        replace(status);
        remote.ended(error);
        return;
      }
      if (error.status === 409 && error.code === "already_resolved") {
        await showAlreadyResolved();
        resolvedNow();
      } else if (error.status === 409 && error.code === "changed_since_seen") {
        await changedWhileLooking();
      } else if (error.status === 409 && error.code === "invalid_state") {
        // The task ended first (a cancel won the race): the call will never run.
        resolvedHere = true;
        finish({ ...current, state: "cancelled", outcome: { status: "not_run", message: "Not run — task cancelled" } }, "The task ended before your decision was recorded (" + error.message + ").");
        resolvedNow();
      } else if (error.status === 422 && body.edited_arguments !== undefined) {
        replace(status);
        replace(editError, notice("error", "The server refused the edited arguments: " + error.message));
        (structured ? fields.values().next().value : rawEditor).focus();
      } else {
        replace(status, notice("error", "The decision was not recorded: " + error.message));
      }
    }
  }

  function approve() {
    if (!isPending()) {
      return;
    }
    const body = { decision: "approve" };
    // Approving what the person saw: the state the card shows.
    if (seenFingerprint) {
      body.seen_fingerprint = seenFingerprint;
    }
    resolve(body);
  }

  function reject() {
    const reason = reasonInput.value.trim();
    const body = { decision: "reject" };
    if (reason) {
      body.reason = reason;
    }
    resolve(body);
  }

  async function approveEdited() {
    const typed = typedArguments();
    if (typed.error) {
      replace(editError, notice("error", typed.error));
      rawEditor.focus();
      return;
    }
    const value = typed.value;
    if (structured && "path" in value && !value.path.trim()) {
      replace(editError, notice("error", "The path must not be empty."));
      fields.get("path").focus();
      return;
    }
    replace(editError);
    const body = { decision: "approve", edited_arguments: value };
    if (hasTarget) {
      const key = JSON.stringify(value);
      if (editCheck.key !== key) {
        // Not checked yet (typed just now): check it first. A call that will fail is
        // shown, not sent; otherwise it goes with the fingerprint of that check (a change
        // after it still answers 409 and the card is drawn again).
        recheck.cancel();
        setBusy(true);
        await checkEdit();
        setBusy(false);
        if (editCheck.key !== key || !isPending()) {
          return;
        }
        if (editCheck.precheck && editCheck.precheck.status === "will_fail") {
          replace(editError, notice("error", "Not approved: the edited call will fail (see above). Change it, or go back."));
          approveEditedButton.focus();
          return;
        }
      }
      if (editCheck.error) {
        if (editCheck.error.status === 422) {
          replace(editError, notice("error", "The server refused the edited arguments: " + editCheck.error.message));
          return;
        }
      } else if (editCheck.precheck && editCheck.precheck.fingerprint) {
        body.seen_fingerprint = editCheck.precheck.fingerprint;
      }
    }
    resolve(body);
  }

  /** The preview: what the call does to the target as it is now (the precheck), or as requested. */
  function drawPreview(fresh) {
    const pre = precheckOf(fresh);
    const shown = shownEffect(fresh);
    seenFingerprint = pre && pre.status !== "unavailable" ? pre.fingerprint || null : null;
    const content = fresh.content ?? (typeof fresh.arguments?.content === "string" ? fresh.arguments.content : null);

    // What the precheck says, above everything else: before anyone decides.
    let warning = null;
    if (pre && pre.status === "will_fail") {
      warning = h(
        "div",
        { class: "precheck-note precheck-will_fail", role: "note" },
        h("p", { class: "precheck-title", text: "This call will fail if you approve it" }),
        h("p", { class: "precheck-message" }, withCode(pre.message || "It cannot apply to the target as it is now.")),
        h("p", { class: "small", text: "Reject it so the agent can try again with the file as it is now." }),
      );
    } else if (pre && pre.status === "no_change") {
      warning = h(
        "div",
        { class: "notice notice-info precheck-note precheck-no_change", role: "note" },
        h("p", { class: "precheck-title", text: "No change on disk — applying it leaves the file as it is" }),
        pre.message ? h("p", { class: "small precheck-message" }, withCode(pre.message)) : null,
      );
    } else if (pre && pre.status === "changed") {
      warning = h(
        "div",
        { class: "notice notice-warn precheck-note precheck-changed current-warning", role: "note" },
        h("p", { class: "precheck-title", text: "The file changed since the agent asked" }),
        h("p", {
          class: "small",
          text: ["move", "delete", "create_folder"].includes(shown.label)
            ? "What the call does to the target as it is now is shown below. Approving applies it to the target as it is now."
            : "Below is what changes against the file as it is now. Approving applies the call to the file as it is now; reject it to have the agent redo it.",
        }),
      );
    } else if (pre && pre.status === "unavailable") {
      warning = notice("info", "Cannot check the target from this server: " + (pre.message || "it is not readable here") + ". The check right before the call runs still applies.");
      warning.classList.add("precheck-note", "precheck-unavailable");
    }
    replace(currentSlot, warning);

    const parts = [];
    if (pre && pre.status === "no_change") {
      // The note says it all: no diff, no size.
    } else if (pre && pre.status === "will_fail") {
      const asked = requestedPreview(fresh, fresh, content, false);
      if (asked.length) {
        parts.push(h("details", { class: "asked-preview" }, h("summary", { text: "What the agent asked for (it cannot apply)" }), asked));
      }
    } else if (pre && pre.status === "changed") {
      // Never the request's diff: the target is not as it was.
      if (typeof pre.diff === "string" && pre.diff) {
        const full = typeof pre.content === "string" ? reverseApply(pre.content, pre.diff) : null;
        parts.push(h("h3", { text: "What changes against the file as it is now" }));
        parts.push(full !== null && shown.scope !== "edit" ? renderDiffView({ lines: diffTexts(full, pre.content).lines }) : renderDiffView({ text: pre.diff }));
      } else if (typeof pre.content === "string") {
        const count = splitLines(pre.content).length;
        parts.push(h("h3", { text: `The file is not there now: new file content (${count} line${count === 1 ? "" : "s"})` }), renderNewContent(pre.content));
      } else if (pre.diff === undefined || (pre.diff === null && !("content" in pre) && !("current" in fresh))) {
        parts.push(h("p", { class: "muted", text: "Reading the file as it is now…" }));
      }
    } else {
      // ready (or no precheck): the precheck's diff when it has one (an MCP write whose
      // request looked like a new file, over a file that exists), else the request's.
      const now = pre && typeof pre.diff === "string" && pre.diff ? { ...fresh, diff: pre.diff } : fresh;
      parts.push(...requestedPreview(now, shown, content, true));
    }
    replace(previewSlot, parts);
    guardKeys();
  }

  /** The request's own preview (diff, new content, first lines of a deleted file). */
  function requestedPreview(fresh, shown, content, headings) {
    const parts = [];
    const diffText = fresh.diff;
    if (shown.label === "delete" && typeof fresh.content === "string") {
      // The first lines of the file the call deletes, as removed lines.
      const count = splitLines(fresh.content).length;
      parts.push(h("h3", { text: `First lines of the file (${count} line${count === 1 ? "" : "s"} shown)` }), renderDiffView({ lines: diffTexts(fresh.content, "").lines }, { label: "first lines of the deleted file", toggle: false }));
    } else if (shown.scope === "new_file" && typeof content === "string" && shown.label !== "overwrite") {
      const count = splitLines(content).length;
      parts.push(h("h3", { text: `New file content (${count} line${count === 1 ? "" : "s"})` }), renderNewContent(content));
    } else if (diffText) {
      const full = typeof content === "string" ? reverseApply(content, diffText) : null;
      parts.push(h("h3", { text: headings ? "What changes on disk" : "The change as requested" }));
      parts.push(full !== null && shown.scope !== "edit" ? renderDiffView({ lines: diffTexts(full, content).lines }) : renderDiffView({ text: diffText }));
    } else if (diffText === "") {
      parts.push(notice("info", "No change on disk: the file already has exactly this content."));
    } else if (typeof content === "string") {
      const count = splitLines(content).length;
      const lines = `${count} line${count === 1 ? "" : "s"}`;
      const replacing = shown.label === "overwrite" || shown.scope === "replaces_whole_file";
      const heading = replacing
        ? fresh.mcp
          ? `New content, ${lines} — replaces the existing file (the MCP server writes it; PocketPilot cannot compare)`
          : `New content, ${lines} (replaces the whole file; the current file is binary or too large to compare)`
        : `New file content (${lines})`;
      parts.push(h("h3", { text: heading }), renderNewContent(content));
    }
    return parts;
  }

  // The card's fixed content.
  const title = [view.tool, view.target].filter(Boolean).join(" ");
  const args = prettyJson(view.arguments);
  const effect = effectBlock(view);
  const undo = undoNote(view);
  const argsSummary = h("summary", { text: "Arguments (JSON)" });
  const argsDetails = h("details", { class: "arguments", open: Boolean(view.mcp) || (!view.scope && !effect && args.length < 300) }, argsSummary, h("pre", { class: "json", text: escapeInvisibleJson(args) }));
  const unattended = view.created_by && view.created_by !== "operator" && UNATTENDED_BY[view.created_by];
  append(body, [
    effect || resolvesTo(view.target, view.resolved),
    undo ? h("p", { class: "notice notice-warn irreversible-note", text: undo }) : null,
    h(
      "div",
      { class: "card-task" },
      h(
        "p",
        { class: "card-task-head" },
        h("span", { class: "muted", text: "Task: " }),
        // Neutral link text: the prompt may be a stranger's words (a webhook's).
        linkToTask ? h("a", { href: "#/tasks/" + encodeURIComponent(view.task_id), text: "Open task " + view.task_id }) : h("span", { text: view.task_id }),
      ),
      view.prompt
        ? quotedText(view.prompt, {
            label: unattended ? "Untrusted prompt —" : "Prompt:",
            origin: unattended ? originWords(view) : null,
            className: "task-prompt-quote" + (unattended ? " untrusted" : ""),
          })
        : null,
    ),
    unattended ? null : originLine(view),
    provenanceBlock(view.provenance),
    h("p", { class: "muted small", text: `Requested ${formatTime(view.created_at)} · ${view.id}` }),
    previewSlot,
    ranSlot,
    argsDetails,
  ]);
  append(element, [
    unconfinedBanner(view),
    h(
      "header",
      { class: "card-head" },
      h("h2", { id: uid + "-title", class: "card-title" }, h("span", { class: "tool", text: view.tool }), titleTarget),
      badges,
    ),
    outcomeLine,
    expander,
    currentSlot,
    mayHaveRunBlock(view),
    untrustedMark(view.provenance),
    body,
    status,
    actions,
    rejectPanel,
    editPanel,
  ]);
  element.setAttribute("title", escapeInvisible(title));
  drawHead(view);
  drawActions(view);
  drawPreview(view);
  drawnKey = precheckKey(precheckOf(view)) + ("current" in view ? "+full" : "");
  if ("current" in view) {
    element.dataset.read = "full";
  }

  function isPending() {
    return !resolvedHere && current.state === "pending";
  }

  function update(fresh) {
    if (fresh.state === "pending") {
      current = fresh;
      if ("current" in fresh) {
        // Drawn from the card itself (not a list row): the precheck has its diff.
        element.dataset.read = "full";
      }
      const key = precheckKey(precheckOf(fresh)) + ("current" in fresh ? "+full" : "");
      if (key !== drawnKey) {
        drawnKey = key;
        drawHead(fresh);
        drawActions(fresh);
        drawPreview(fresh);
        for (const copy of COPIES.get(id) || []) {
          if (copy !== api_ && copy.element.isConnected && copy.isPending()) {
            copy.update(fresh);
          }
        }
      }
      return;
    }
    if (resolvedHere) {
      return;
    }
    current = fresh;
    resolvedHere = true;
    finish(fresh, "Resolved elsewhere: " + describeResolution(fresh) + ".");
  }

  const api_ = {
    element,
    update,
    id,
    isPending,
    panelOpen: () => !rejectPanel.hidden || !editPanel.hidden,
    /** Whether decision keys act now (not within 700 ms of the card appearing or changing). */
    keysReady: () => performance.now() >= keysReadyAt,
    guardKeys,
    approve,
    openReject,
    openEditor,
    closePanels,
    dispose() {
      follower?.stop();
      recheck.cancel();
      COPIES.get(id)?.delete(api_);
    },
  };
  CARDS.set(element, api_);
  if (!COPIES.has(id)) {
    COPIES.set(id, new Set());
  }
  const copies = COPIES.get(id);
  for (const copy of [...copies]) {
    if (!copy.element.isConnected) {
      // A card of a page left without dispose: forget it.
      copies.delete(copy);
    }
  }
  copies.add(api_);

  if (view.state !== "pending") {
    // Shown already decided (the inbox's other filters, chat history): follow only a
    // call the server says is still running.
    finish(view, null, view.outcome?.status === "running");
    resolvedHere = true;
  } else {
    if (view.precheck && !("current" in view)) {
      // A list row (its precheck has no diff): read the card itself now that it is shown.
      api("/api/approvals/" + encodeURIComponent(id))
        .then((fresh) => update(fresh))
        .catch(() => {});
    }
    // Every page with cards: the first pending card takes the focus when nothing else has it.
    requestAnimationFrame(() => claimFocus(element));
  }

  return api_;
}

/**
 * A page focuses its heading once it is on screen (app.js), which may be after its cards
 * appeared: then the first pending card takes the focus back.
 */
let headingWatch = false;
function watchHeadingFocus() {
  if (headingWatch) {
    return;
  }
  headingWatch = true;
  document.addEventListener("focusin", (event) => {
    const target = event.target;
    if (target instanceof HTMLElement && target.matches("#view h1[tabindex='-1']")) {
      const first = document.querySelector('main article.card[data-state="pending"]');
      if (first) {
        requestAnimationFrame(() => claimFocus(first));
      }
    }
  });
}

/**
 * Moves the focus to the first pending card of the page when the focus is nowhere in
 * particular (the page, its main region, or the page heading a navigation focused).
 */
function claimFocus(element) {
  watchHeadingFocus();
  if (!element.isConnected) {
    return;
  }
  const active = document.activeElement;
  if (active && active.matches("[data-focus-heading]")) {
    // A decision just moved the focus to a card list's heading: that list gives it to
    // its next card itself (decisions.js), not to an inline copy elsewhere on the page.
    return;
  }
  const idle =
    !active ||
    active === document.body ||
    active.id === "view" ||
    (active.matches("h1[tabindex='-1']") && !active.closest("article.card")) ||
    // An inline copy this code focused because the card list's card was not drawn
    // yet: the list's card takes it over once it is (nobody moved the focus since).
    (active === autoFocused && !active.closest("[data-card-list]"));
  if (!idle) {
    return;
  }
  // A card list (the decisions panel, the inbox) before an inline copy in a timeline.
  const visible = (selector) => [...document.querySelectorAll(selector)].find((card) => card.offsetParent !== null);
  const first = visible('main [data-card-list] article.card[data-state="pending"]') || visible('main article.card[data-state="pending"]');
  if (first && first !== active) {
    cardFor(first)?.guardKeys();
    first.focus({ preventScroll: true });
    first.scrollIntoView({ block: "nearest" });
    autoFocused = first;
  }
}

/** The card `claimFocus` last gave the focus to (not a person's choice). */
let autoFocused = null;

// ---- Origin (issue 13): who started the task, when a person did not. ----

/** Who can start a task without a person at the screen, as the card names them. */
const UNATTENDED_BY = {
  scheduler: "schedule",
  webhook: "webhook channel",
  mcp_client: "MCP client",
};

/**
 * "From schedule weekly-invoices" for a task a schedule, webhook or MCP client started;
 * null for a person's own task.
 * @param {{created_by?: string, origin?: string}} view
 */
function originLine(view) {
  if (!view.created_by || view.created_by === "operator") {
    return null;
  }
  const who = UNATTENDED_BY[view.created_by] || view.created_by;
  return h(
    "p",
    { class: "card-origin", dataset: { createdBy: view.created_by } },
    h("span", { class: "muted", text: "From: " }),
    h("span", { text: who }),
    view.origin ? [" ", visibleCode(view.origin, "origin")] : null,
  );
}

/**
 * "from webhook channel `alerts`": the origin beside an unattended task's quoted prompt.
 * @param {{created_by?: string, origin?: string}} view
 */
function originWords(view) {
  const who = UNATTENDED_BY[view.created_by] || view.created_by;
  return h(
    "span",
    { class: "card-origin", dataset: { createdBy: view.created_by } },
    h("span", { class: "muted", text: "From: " }),
    h("span", { text: who }),
    view.origin ? [" ", visibleCode(view.origin, "origin")] : null,
  );
}
