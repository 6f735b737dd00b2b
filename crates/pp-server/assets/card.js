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

/** "approved by operator at 10:00:01", from a resolved approval view. */
export function describeResolution(view) {
  const parts = [RESOLVED_WORDS[view.state] || view.state];
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

/** The size badge: `new file +12`, `edit +3 −1`, `replaces whole file`, or the risk. */
export function riskBadge(view) {
  const counts = [];
  if (Number.isInteger(view.added)) {
    counts.push("+" + view.added);
  }
  if (Number.isInteger(view.removed) && view.scope !== "new_file") {
    counts.push("−" + view.removed);
  }
  const suffix = counts.length ? " " + counts.join(" ") : "";
  switch (view.scope) {
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

/** Cards on the page by element, for the keyboard (keys.js). */
const CARDS = new WeakMap();

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

/**
 * Builds a card for `view`. Returns `{ element, update(view), id, isPending(),
 * approve(), openReject(), openEditor(), closePanels(), dispose() }`. `update` is
 * called with a fresh view when the host notices the approval changed elsewhere;
 * `onResolved()` runs after this card resolved it (focus then moves to the next
 * pending card unless `focusNext` is false).
 */
export function approvalCard(view, { onResolved = () => {}, linkToTask = true, focusNext = true } = {}) {
  const uid = "card-" + ++cardCounter;
  const id = view.id;
  let resolvedHere = false;
  let current = view;
  let follower = null;
  /** The whole file the call would replace (when the preview lets us rebuild it). */
  let baseText = view.scope === "new_file" ? "" : null;

  const status = h("div", { class: "card-status", role: "status", "aria-live": "polite" });
  const outcomeLine = h("div", { class: "card-outcome" });
  const actions = h("div", { class: "card-actions" });
  const currentSlot = h("div", { class: "card-current" });
  const previewSlot = h("div", { class: "card-preview" });

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
  const editPanel = h(
    "div",
    { class: "subpanel edit-panel", hidden: true },
    editBody,
    structured ? h("h3", { text: "What the edited call changes" }) : null,
    structured ? rediff : null,
    h("p", {
      class: "muted small",
      text: "Edited arguments are checked again by the server (the tool's schema and the workspace rules) before anything runs.",
    }),
    editError,
    h(
      "div",
      { class: "button-row" },
      h("button", { type: "button", class: "button primary approve-edited", onclick: () => approveEdited(), text: "Approve edited call" }),
      h("button", { type: "button", class: "button ghost", onclick: () => closePanels(), text: "Back" }),
    ),
  );

  const editedArguments = () => {
    const value = {};
    for (const [key, input] of fields) {
      value[key] = input.value;
    }
    return value;
  };

  /** The argument holding a whole file's content (write tools): the one equal to `content`. */
  const contentKey = () => {
    const args = view.arguments || {};
    if (typeof view.content === "string") {
      const key = Object.keys(args).find((name) => args[name] === view.content);
      if (key) {
        return key;
      }
    }
    return "content" in args ? "content" : null;
  };

  /** Old/new text arguments of an edit (named so in the schema, else the first two texts). */
  const editKeys = () => {
    const names = Object.keys(view.arguments || {}).filter((name) => name !== "path");
    const oldKey = names.find((name) => /old|find|search/.test(name)) || names[0];
    const newKey = names.find((name) => name !== oldKey && /new|replace/.test(name)) || names.find((name) => name !== oldKey);
    return { oldKey, newKey };
  };

  const drawRediff = () => {
    const edited = editedArguments();
    const parts = [];
    if ("path" in edited && edited.path !== view.arguments.path) {
      parts.push(h("p", { class: "notice notice-info" }, "Writes to ", visibleCode(edited.path || "(empty path)", "target"), " instead of ", visibleCode(view.arguments.path, "target"), "."));
    }
    if (view.scope === "edit") {
      const { oldKey, newKey } = editKeys();
      if (oldKey && newKey) {
        const { lines, added, removed } = diffTexts(edited[oldKey], edited[newKey]);
        parts.push(h("p", { class: "muted small rediff-summary", text: `The edited call replaces this text: +${added} −${removed} lines.` }));
        parts.push(renderDiffView({ lines }, { label: "diff of the edited call", toggle: false }));
      }
    } else {
      const key = contentKey();
      if (key) {
        const base = baseText ?? view.arguments[key];
        const against = baseText === null ? "the agent’s version" : view.scope === "new_file" ? "an empty (new) file" : "the current file";
        const { lines, added, removed } = diffTexts(base, edited[key]);
        parts.push(h("p", { class: "muted small rediff-summary", text: `Against ${against}: +${added} −${removed} lines.` }));
        parts.push(added + removed ? renderDiffView({ lines }, { label: "diff of the edited call", toggle: false }) : h("p", { class: "muted", text: "No change against " + against + "." }));
      }
    }
    replace(rediff, parts);
  };
  const redraw = debounce(drawRediff, 120);
  editPanel.addEventListener("input", () => {
    // A refusal was about the old text: it goes away once the text changes.
    replace(editError);
    if (structured) {
      redraw();
    }
  });

  const approveButton = h("button", { type: "button", class: "button primary approve", "aria-keyshortcuts": "a", onclick: () => approve(), text: "Approve" });
  const rejectButton = h("button", { type: "button", class: "button danger reject", "aria-keyshortcuts": "r", onclick: () => openReject(), text: "Reject…" });
  const editButton = h("button", { type: "button", class: "button edit", "aria-keyshortcuts": "e", onclick: () => openEditor(), text: structured ? "Edit…" : "Edit arguments…" });
  // A role that cannot decide (team mode: member, viewer) gets no decision buttons.
  if (canDecide()) {
    actions.append(approveButton, rejectButton, editButton);
  }

  const strong = view.scope === "replaces_whole_file" || (!view.scope && view.risk === "high");
  const unconfined = Boolean(view.command && view.command.confined === false);
  const element = h("article", {
    class: "card" + (strong ? " risk-high" : "") + (view.scope ? " scope-" + view.scope : "") + (view.label ? " effect-" + view.label : "") + (unconfined ? " unconfined" : ""),
    tabindex: "-1",
    "aria-labelledby": uid + "-title",
    dataset: { approvalId: id, taskId: view.task_id, state: view.state },
  });

  function closePanels() {
    const wasOpen = !rejectPanel.hidden || !editPanel.hidden;
    rejectPanel.hidden = true;
    editPanel.hidden = true;
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
    openPanel(rejectPanel, reasonInput);
  }

  function openEditor() {
    if (structured) {
      drawRediff();
    } else if (!rawEditor.value) {
      rawEditor.value = prettyJson(current.arguments);
    }
    replace(editError);
    openPanel(editPanel, structured ? fields.get(contentKey() || editKeys().newKey) || fields.values().next().value : rawEditor);
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
    const previous = outcomeLine.dataset.text;
    outcomeLine.dataset.text = text;
    replace(
      outcomeLine,
      h("p", { class: `notice notice-${kind} outcome outcome-${outcome.status}` }, h("span", { class: "outcome-text" }, withCode(text))),
      h("p", { class: "muted small resolution", text: describeResolution(fresh).replace(/^./, (c) => c.toUpperCase()) + "." }),
    );
    if (previous !== text && resolvedHere) {
      announce(text.replaceAll("`", ""));
    }
  }

  function finish(fresh, extra, following = true) {
    rejectPanel.hidden = true;
    editPanel.hidden = true;
    actions.hidden = true;
    actions.replaceChildren();
    element.classList.add("resolved");
    element.dataset.state = fresh.state;
    replace(
      status,
      extra ? notice("warn", extra) : null,
      linkToTask ? h("a", { href: "#/tasks/" + encodeURIComponent(fresh.task_id), text: "Follow the task’s timeline →" }) : null,
    );
    if (following && !FINAL.has(outcomeOf(fresh)?.status)) {
      follow();
    }
    showOutcome(fresh);
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

  async function resolve(body) {
    setBusy(true);
    replace(status, notice("info", "Sending your decision…"));
    try {
      await api(`/api/approvals/${encodeURIComponent(id)}/resolve`, { method: "POST", body });
      resolvedHere = true;
      const approved = body.decision === "approve";
      current = {
        ...current,
        state: approved ? "approved" : "rejected",
        reason: body.reason,
        edited_arguments: body.edited_arguments,
        resolved_at: new Date().toISOString(),
      };
      finish(current);
      announce(approved ? "Approved — running…" : "Rejected. The agent was told.");
      resolvedNow();
    } catch (error) {
      setBusy(false);
      if (error.status === 409 && error.code === "already_resolved") {
        await showAlreadyResolved();
        resolvedNow();
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
    if (isPending()) {
      resolve({ decision: "approve" });
    }
  }

  function reject() {
    const reason = reasonInput.value.trim();
    const body = { decision: "reject" };
    if (reason) {
      body.reason = reason;
    }
    resolve(body);
  }

  function approveEdited() {
    let value;
    if (structured) {
      value = editedArguments();
      if ("path" in value && !value.path.trim()) {
        replace(editError, notice("error", "The path must not be empty."));
        fields.get("path").focus();
        return;
      }
    } else {
      const parsed = parseEditedArguments(rawEditor.value);
      if (parsed.error) {
        replace(editError, notice("error", parsed.error));
        rawEditor.focus();
        return;
      }
      value = parsed.value;
    }
    replace(editError);
    resolve({ decision: "approve", edited_arguments: value });
  }

  /** The preview: the diff (against the current file when it changed) or the new content. */
  function drawPreview(fresh) {
    const changed = Boolean(fresh.current && fresh.current.changed);
    const diffText = changed && typeof fresh.current.diff === "string" ? fresh.current.diff : fresh.diff;
    const content = fresh.content ?? (typeof fresh.arguments?.content === "string" ? fresh.arguments.content : null);
    replace(
      currentSlot,
      changed
        ? h("p", {
            class: "notice notice-warn current-warning",
            role: "status",
            text: ["move", "delete", "create_folder"].includes(fresh.label)
              ? "The target changed since the request: approving will not run this call (it is stale)."
              : "This file changed since the request — diff against the current file shown.",
          })
        : null,
    );
    const parts = [];
    if (fresh.label === "delete" && typeof fresh.content === "string") {
      // The first lines of the file the call deletes, as removed lines.
      const count = splitLines(fresh.content).length;
      parts.push(h("h3", { text: `First lines of the file (${count} line${count === 1 ? "" : "s"} shown)` }), renderDiffView({ lines: diffTexts(fresh.content, "").lines }, { label: "first lines of the deleted file", toggle: false }));
    } else if (fresh.scope === "new_file" && typeof content === "string" && !changed) {
      baseText = "";
      const count = splitLines(content).length;
      parts.push(h("h3", { text: `New file content (${count} line${count === 1 ? "" : "s"})` }), renderNewContent(content));
    } else if (diffText) {
      const full = typeof content === "string" ? reverseApply(content, diffText) : null;
      if (full !== null && fresh.scope !== "edit") {
        baseText = full;
        parts.push(h("h3", { text: changed ? "What changes against the file as it is now" : "What changes on disk" }), renderDiffView({ lines: diffTexts(full, content).lines }));
      } else {
        parts.push(h("h3", { text: changed ? "What changes against the file as it is now" : "What changes on disk" }), renderDiffView({ text: diffText }));
      }
    } else if (diffText === "") {
      parts.push(notice("info", "No change on disk: the file already has exactly this content."));
    } else if (typeof content === "string") {
      const count = splitLines(content).length;
      const lines = `${count} line${count === 1 ? "" : "s"}`;
      const heading =
        fresh.label === "overwrite"
          ? `New content, ${lines} (replaces the whole file; the current file is binary or too large to compare)`
          : `New file content (${lines})`;
      parts.push(h("h3", { text: heading }), renderNewContent(content));
    }
    replace(previewSlot, parts);
  }

  // The card's fixed content.
  const title = [view.tool, view.target].filter(Boolean).join(" ");
  const badges = h(
    "div",
    { class: "card-badges" },
    view.label && !view.scope ? h("span", { class: "badge label-" + view.label, text: labelWords(view) }) : null,
    unconfined ? h("span", { class: "badge unconfined-badge", text: "NOT confined" }) : null,
    riskBadge(view),
    undoNote(view) ? h("span", { class: "badge irreversible", text: "cannot be undone" }) : null,
    h("code", { class: "capability", title: "capability", text: view.capability }),
  );
  const args = prettyJson(view.arguments);
  const effect = effectBlock(view);
  const undo = undoNote(view);
  append(element, [
    unconfinedBanner(view),
    h(
      "header",
      { class: "card-head" },
      h("h2", { id: uid + "-title", class: "card-title" }, h("span", { class: "tool", text: view.tool }), view.target ? visibleCode(view.target, "target") : null),
      badges,
    ),
    effect || resolvesTo(view.target, view.resolved),
    undo ? h("p", { class: "notice notice-warn irreversible-note", text: undo }) : null,
    h(
      "p",
      { class: "card-task" },
      h("span", { class: "muted", text: "Task: " }),
      linkToTask
        ? h("a", { href: "#/tasks/" + encodeURIComponent(view.task_id), text: view.prompt })
        : h("span", { text: view.prompt }),
    ),
    originLine(view),
    h("p", { class: "muted small", text: `Requested ${formatTime(view.created_at)} · ${view.id}` }),
    currentSlot,
    previewSlot,
    h("details", { class: "arguments", open: Boolean(view.mcp) || (!view.scope && !effect && args.length < 300) }, h("summary", { text: "Arguments (JSON)" }), h("pre", { class: "json", text: escapeInvisibleJson(args) })),
    outcomeLine,
    status,
    actions,
    rejectPanel,
    editPanel,
  ]);
  element.setAttribute("title", escapeInvisible(title));
  drawPreview(view);

  function isPending() {
    return !resolvedHere && current.state === "pending";
  }

  function update(fresh) {
    if (fresh.state === "pending") {
      current = fresh;
      if (fresh.current) {
        drawPreview(fresh);
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
    approve,
    openReject,
    openEditor,
    closePanels,
    dispose() {
      follower?.stop();
    },
  };
  CARDS.set(element, api_);

  if (view.state !== "pending") {
    // Shown already decided (the inbox's other filters, chat history): follow only a
    // call the server says is still running.
    finish(view, null, view.outcome?.status === "running");
    resolvedHere = true;
  } else if (view.current === undefined && view.scope) {
    // The list has no `current`: check the target again now that the card is shown.
    api("/api/approvals/" + encodeURIComponent(id))
      .then((fresh) => update(fresh))
      .catch(() => {});
  }

  return api_;
}

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
