// #/tasks/ID: one task, decision first. From the top: the task's header (state, model,
// token usage and cost, cancel, retry), "Needs your decision" (decide's panel), the compact timeline (one line
// per tool call, the inline approval card in the row of a pending call) and the Changes
// on disk panel (what the approved calls really did, with Revert).
//
// The timeline follows `GET /api/tasks/ID/events` over SSE. A dropped connection is
// resumed by the browser with `Last-Event-ID` (or by us with `?after=`); every event is
// keyed by its global sequence number, so nothing is ever shown twice.

import { api, followEvents } from "./api.js";
import { approvalCard } from "./card.js";
import { renderDecisions } from "./decisions.js";
import { STARTED_BY, debounce, h, notice, replace, stateBadge, timeElement } from "./dom.js";
import { compactTimeline } from "./timeline.js";
import { changesPanel } from "./changes.js";
import { modelName } from "./health.js";
import { visibleCode } from "./visible.js";
import { quotedPrompt, taskTitle, untrustedPrompt } from "./format.js";
import { checkClaims, claimsPanel } from "./results.js";

const ACTIVE = new Set(["queued", "running", "waiting_approval"]);
const RETRYABLE = new Set(["interrupted"]);

/** `1234567` → "1,234,567". */
const count = (value) => Number(value || 0).toLocaleString("en");

/** An estimate: two decimals, four under a cent. */
const amount = (value) => (value < 0.01 ? value.toFixed(4) : value.toFixed(2));

/**
 * The task's token usage (`usage` of `GET /api/tasks/ID`): total, the cached and
 * reasoning parts, the model calls and the cost estimate. Nothing before the first call.
 * Short pieces that wrap, so a narrow screen never scrolls sideways.
 */
function usageLine(usage) {
  if (!usage || !usage.model_calls) {
    return null;
  }
  const calls = usage.model_calls === 1 ? "1 model call" : `${count(usage.model_calls)} model calls`;
  const piece = (text) => h("span", { class: "usage-piece", text });
  return h(
    "p",
    { class: "task-usage small", "aria-label": "Token usage" },
    h("strong", { text: `${count(usage.total_tokens)} tokens` }),
    piece(` · prompt ${count(usage.prompt_tokens)}`),
    usage.cached_tokens ? piece(` (${count(usage.cached_tokens)} cached)`) : null,
    piece(` · completion ${count(usage.completion_tokens)}`),
    usage.reasoning_tokens ? piece(` (${count(usage.reasoning_tokens)} reasoning)`) : null,
    piece(` · ${calls}`),
    usage.cost
      ? piece(` · about ${amount(usage.cost.amount)} ${usage.cost.currency}`)
      : h("span", { class: "muted usage-piece", text: " · cost unknown" }),
  );
}

/** Renders the task page; returns its live hooks. */
export function renderTask(container, id, context) {
  const header = h("div", { class: "task-head" }, h("p", { class: "muted", text: "Loading the task…" }));
  const actions = h("div", { class: "task-actions" });
  const status = h("div", { class: "form-status" });
  const streamState = h("p", { class: "muted small stream-state", role: "status" });
  const decisionsSlot = h("div", { class: "decisions-slot" });
  const changesSlot = h("div", { class: "changes-slot" });
  const seen = new Set();
  let task = null;
  let model = "";
  let gone = false;

  const changes = changesPanel(changesSlot, id);
  const timeline = compactTimeline({
    approvalCard,
    onChange: () => changes.refresh(),
    onResolved: () => context.refreshCount(),
  });

  // "Needs your decision" (decide's panel; it follows the task's events itself).
  const decisions = renderDecisions(decisionsSlot, id, context) || {};

  // Built once: a live redraw of the header keeps the person's "Show all" as it was.
  let quotedElement = null;
  const renderHeader = () => {
    if (untrustedPrompt(task) && !quotedElement) {
      quotedElement = quotedPrompt(task);
    }
    replace(
      header,
      h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "← Tasks" })),
      // The person's own prompt is the headline; a webhook's, schedule's or MCP
      // client's is not: the headline names the origin and the text follows, quoted.
      untrustedPrompt(task)
        ? [h("h1", { class: "task-title untrusted", tabindex: "-1", text: taskTitle(task) }), quotedElement]
        : h("h1", { class: "task-prompt", tabindex: "-1", text: task.prompt }),
      h(
        "p",
        { class: "task-facts" },
        stateBadge(task.state),
        h("span", { text: " in workspace " }),
        h("code", { text: task.workspace }),
        h("span", { text: " · created " }),
        timeElement(task.created_at),
        task.created_by && task.created_by !== "operator"
          ? h(
              "span",
              { class: "started-by" },
              ` by ${(STARTED_BY[task.created_by] || task.created_by).toLowerCase()}`,
              task.origin ? [" ", visibleCode(task.origin, "origin")] : null,
            )
          : null,
        model ? h("span", { class: "model-name" }, " · model ", h("code", { text: model })) : null,
        h("span", { class: "muted task-id", text: ` · ${task.id}` }),
      ),
      usageLine(task.usage),
      task.waiting_for ? notice("warn", `Waiting: ${task.waiting_for}.`) : null,
      task.error ? notice(task.state === "failed" ? "error" : "warn", task.error) : null,
    );
    replace(actions);
    if (ACTIVE.has(task.state)) {
      actions.append(h("button", { type: "button", class: "button danger", onclick: cancel, text: "Cancel task" }));
    }
    if (RETRYABLE.has(task.state)) {
      actions.append(h("button", { type: "button", class: "button primary", onclick: retry, text: "Retry task" }));
    }
  };

  const showMissing = () => {
    if (gone) {
      return;
    }
    gone = true;
    stream.close();
    replace(
      container,
      h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "← Tasks" })),
      h("h1", { tabindex: "-1", text: "No such task" }),
      h("p", {}, "There is no task ", h("code", { text: id }), " on this server. ", h("a", { href: "#/tasks", text: "Go back to the tasks" }), "."),
    );
  };

  const loadTask = async () => {
    if (gone) {
      return;
    }
    try {
      task = await api("/api/tasks/" + encodeURIComponent(id));
      renderHeader();
    } catch (error) {
      if (error.status === 404) {
        showMissing();
        return;
      }
      // The server may be restarting: the header says so until the next try works.
      replace(
        header,
        h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "← Tasks" })),
        h("h1", { tabindex: "-1", text: "Task" }),
        notice("warn", "Cannot load the task right now (" + error.message + "). Trying again…"),
      );
      reloadTask();
    }
  };
  const reloadTask = debounce(loadTask, 1500);
  const refreshTask = debounce(loadTask, 150);

  modelName().then((name) => {
    model = name;
    if (task) {
      renderHeader();
    }
  });

  const act = async (verb, label) => {
    for (const button of actions.querySelectorAll("button")) {
      button.disabled = true;
    }
    replace(status);
    try {
      task = await api(`/api/tasks/${encodeURIComponent(id)}/${verb}`, { method: "POST" });
      renderHeader();
      replace(status, notice("ok", label));
    } catch (error) {
      replace(status, notice("error", error.code === "invalid_state" ? error.message : `Cannot ${verb}: ${error.message}`));
      loadTask();
    }
  };
  const cancel = () => act("cancel", "The task was cancelled.");
  const retry = () => act("retry", "The task continues.");

  /**
   * Puts the answer check under the final answer of `stored` (a `task_completed`
   * event): the files the answer says it wrote, each against the task's change log.
   */
  const checkAnswer = async (stored) => {
    let changesLog = [];
    try {
      changesLog = (await api(`/api/tasks/${encodeURIComponent(id)}/changes`)).changes || [];
    } catch {
      return;
    }
    const row = timeline.element.querySelector(`[data-seq="${stored.seq}"]`);
    if (!row || row.querySelector(".claims-check")) {
      return;
    }
    const panel = claimsPanel(checkClaims(stored.final || "", changesLog));
    (row.querySelector(".event-body") || row).append(panel);
  };

  const stream = followEvents(`/api/tasks/${encodeURIComponent(id)}/events`, {
    onEvent(stored) {
      if (seen.has(stored.seq)) {
        return;
      }
      seen.add(stored.seq);
      timeline.add(stored);
      if (stored.type === "task_completed") {
        checkAnswer(stored);
      }
      if (stored.type !== "model_request") {
        refreshTask();
      }
      if (stored.type.startsWith("task_") || stored.type === "approval_resolved") {
        changes.refresh();
      }
    },
    onStatus(state) {
      if (gone) {
        return;
      }
      if (state === "live") {
        streamState.textContent = "";
        if (!task) {
          loadTask();
        }
      } else {
        streamState.textContent = "Connection lost — reconnecting; events resume where they stopped.";
        // An unknown task's stream is refused: find out which it is.
        refreshTask();
      }
    },
  });

  replace(
    container,
    header,
    decisionsSlot,
    h("div", { class: "toolbar" }, actions, status),
    h(
      "section",
      { class: "panel", "aria-labelledby": "timeline-title" },
      h("div", { class: "section-head" }, h("h2", { id: "timeline-title", text: "Timeline" })),
      streamState,
      timeline.element,
    ),
    changesSlot,
  );
  loadTask();
  return {
    resync() {
      loadTask();
      changes.refresh();
    },
    cleanup() {
      stream.close();
      reloadTask.cancel();
      refreshTask.cancel();
      changes.cleanup();
      timeline.dispose();
      if (decisions.cleanup) {
        decisions.cleanup();
      }
    },
  };
}
