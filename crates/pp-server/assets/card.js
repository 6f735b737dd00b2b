// One approval card: what the agent wants to do, and approve / reject / edit.
//
// Resolving is race-free on the server (compare-and-set): when another tab or the CLI
// got there first the server answers 409 `already_resolved`, and the card says so and
// shows who resolved it instead of showing an error.

import { api } from "./api.js";
import { append, block, formatTime, h, notice, prettyJson, renderDiff, replace } from "./dom.js";
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
    parts.push("by " + view.resolved_by);
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

/** Validates the editor's text: a JSON object, or an error message. */
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

let cardCounter = 0;

/**
 * Builds a card for `view`. Returns `{ element, update(view) }`; `update` is called
 * with a fresh view when the inbox notices the approval changed elsewhere.
 * `onResolved()` runs after this card resolved it.
 */
export function approvalCard(view, { onResolved = () => {}, linkToTask = true } = {}) {
  const uid = "card-" + ++cardCounter;
  const id = view.id;
  let resolvedHere = false;
  let current = view;

  const status = h("div", { class: "card-status", role: "status", "aria-live": "polite" });
  const actions = h("div", { class: "card-actions" });

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

  // Edit the arguments (JSON), then approve the edited call.
  const editor = h("textarea", {
    id: uid + "-editor",
    class: "json-editor",
    rows: 8,
    spellcheck: "false",
    autocapitalize: "off",
    autocomplete: "off",
  });
  const editError = h("div", { class: "edit-error" });
  const editPanel = h(
    "div",
    { class: "subpanel edit-panel", hidden: true },
    h("label", { for: uid + "-editor", text: "Arguments (JSON)" }),
    editor,
    h("p", {
      class: "muted small",
      text: "The preview above shows the call as the agent asked for it. Edited arguments are checked again by the server (the tool's schema and the workspace rules) before anything runs.",
    }),
    editError,
    h(
      "div",
      { class: "button-row" },
      h("button", { type: "button", class: "button primary approve-edited", onclick: () => approveEdited(), text: "Approve edited call" }),
      h("button", { type: "button", class: "button ghost", onclick: () => closePanels(), text: "Back" }),
    ),
  );

  const approveButton = h("button", { type: "button", class: "button primary approve", onclick: () => approve(), text: "Approve" });
  const rejectButton = h("button", { type: "button", class: "button danger reject", onclick: () => openPanel(rejectPanel, reasonInput), text: "Reject…" });
  const editButton = h("button", { type: "button", class: "button edit", onclick: () => openEditor(), text: "Edit arguments…" });
  actions.append(approveButton, rejectButton, editButton);

  const element = h("article", {
    class: "card" + (view.risk === "high" ? " risk-high" : ""),
    "aria-labelledby": uid + "-title",
    dataset: { approvalId: id, taskId: view.task_id, state: view.state },
  });

  function closePanels() {
    rejectPanel.hidden = true;
    editPanel.hidden = true;
    actions.hidden = false;
    approveButton.focus();
  }

  function openPanel(panel, focus) {
    rejectPanel.hidden = panel !== rejectPanel;
    editPanel.hidden = panel !== editPanel;
    actions.hidden = true;
    replace(status);
    focus.focus();
  }

  function openEditor() {
    if (!editor.value) {
      editor.value = prettyJson(current.arguments);
    }
    replace(editError);
    openPanel(editPanel, editor);
  }

  function setBusy(busy) {
    for (const button of element.querySelectorAll(".card-actions button, .subpanel button")) {
      button.disabled = busy;
    }
    element.classList.toggle("busy", busy);
  }

  function finish(text, kind) {
    rejectPanel.hidden = true;
    editPanel.hidden = true;
    actions.hidden = true;
    actions.replaceChildren();
    element.classList.add("resolved");
    replace(
      status,
      notice(kind, text),
      h("a", { href: "#/tasks/" + encodeURIComponent(current.task_id), text: "Follow the task’s timeline →" }),
    );
  }

  async function showAlreadyResolved() {
    resolvedHere = true;
    element.dataset.state = "resolved";
    let detail = "";
    try {
      const fresh = await api("/api/approvals/" + encodeURIComponent(id));
      current = fresh;
      element.dataset.state = fresh.state;
      detail = " It was " + describeResolution(fresh) + ".";
    } catch {
      // The short message is enough.
    }
    finish("Already resolved: someone else decided first (another tab or the command line)." + detail, "warn");
    element.classList.add("conflict");
  }

  async function resolve(body, doneText) {
    setBusy(true);
    replace(status, notice("info", "Sending your decision…"));
    try {
      await api(`/api/approvals/${encodeURIComponent(id)}/resolve`, { method: "POST", body });
      resolvedHere = true;
      element.dataset.state = body.decision === "approve" ? "approved" : "rejected";
      finish(doneText, "ok");
      onResolved();
    } catch (error) {
      setBusy(false);
      if (error.status === 409 && error.code === "already_resolved") {
        await showAlreadyResolved();
        onResolved();
      } else if (error.status === 409 && error.code === "invalid_state") {
        // The task ended first (a cancel won the race): the call will never run.
        resolvedHere = true;
        element.dataset.state = "cancelled";
        finish("Not run: the task ended before your decision was recorded (" + error.message + ").", "warn");
        onResolved();
      } else if (error.status === 422 && body.edited_arguments !== undefined) {
        replace(status);
        replace(editError, notice("error", "The server refused the edited arguments: " + error.message));
        editor.focus();
      } else {
        replace(status, notice("error", "The decision was not recorded: " + error.message));
      }
    }
  }

  function approve() {
    resolve({ decision: "approve" }, "You approved this call. The task continues.");
  }

  function reject() {
    const reason = reasonInput.value.trim();
    const body = { decision: "reject" };
    if (reason) {
      body.reason = reason;
    }
    resolve(body, reason ? `You rejected this call (reason: “${reason}”). The agent was told.` : "You rejected this call. The agent was told.");
  }

  function approveEdited() {
    const parsed = parseEditedArguments(editor.value);
    if (parsed.error) {
      replace(editError, notice("error", parsed.error));
      editor.focus();
      return;
    }
    replace(editError);
    resolve({ decision: "approve", edited_arguments: parsed.value }, "You approved the edited call. The task continues.");
  }

  // The card's fixed content.
  const title = [view.tool, view.target].filter(Boolean).join(" ");
  const badges = h(
    "div",
    { class: "card-badges" },
    view.label ? h("span", { class: "badge label-" + view.label, text: view.label }) : null,
    h("span", { class: "badge risk risk-" + view.risk, text: view.risk + " risk" }),
    h("code", { class: "capability", title: "capability", text: view.capability }),
  );
  const preview = [];
  if (view.diff) {
    preview.push(h("h3", { text: "What changes on disk" }), renderDiff(view.diff));
  } else if (view.diff === "") {
    preview.push(notice("info", "No change on disk: the file already has exactly this content."));
  } else if (typeof view.content === "string") {
    const heading =
      view.label === "overwrite"
        ? "New content (replaces the whole file; the current file is binary or too large to compare)"
        : "New file content";
    preview.push(h("h3", { text: heading }), block(view.content, "Content", "content"));
  }
  const args = prettyJson(view.arguments);
  append(element, [
    h(
      "header",
      { class: "card-head" },
      h("h2", { id: uid + "-title", class: "card-title" }, h("span", { class: "tool", text: view.tool }), view.target ? visibleCode(view.target, "target") : null),
      badges,
    ),
    resolvesTo(view.target, view.resolved),
    h(
      "p",
      { class: "card-task" },
      h("span", { class: "muted", text: "Task: " }),
      linkToTask
        ? h("a", { href: "#/tasks/" + encodeURIComponent(view.task_id), text: view.prompt })
        : h("span", { text: view.prompt }),
    ),
    h("p", { class: "muted small", text: `Requested ${formatTime(view.created_at)} · ${view.id}` }),
    preview,
    h("details", { class: "arguments", open: args.length < 300 }, h("summary", { text: "Arguments" }), h("pre", { class: "json", text: escapeInvisibleJson(args) })),
    status,
    actions,
    rejectPanel,
    editPanel,
  ]);
  element.setAttribute("title", escapeInvisible(title));

  function update(fresh) {
    current = fresh;
    if (resolvedHere || fresh.state === "pending") {
      return;
    }
    resolvedHere = true;
    element.dataset.state = fresh.state;
    finish("Resolved elsewhere: " + describeResolution(fresh) + ".", "warn");
  }

  if (view.state !== "pending") {
    resolvedHere = true;
    element.dataset.state = view.state;
    finish(describeResolution(view).replace(/^./, (c) => c.toUpperCase()) + ".", view.state === "approved" ? "ok" : "warn");
  }

  return { element, update, id, isPending: () => !resolvedHere };
}
