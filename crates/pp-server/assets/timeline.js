// #/tasks/ID: the task's header (state, cancel, retry) and its live event timeline.
//
// The timeline follows `GET /api/tasks/ID/events` over SSE. A dropped connection is
// resumed by the browser with `Last-Event-ID` (or by us with `?after=`); every row is
// keyed by the event's global sequence number, so nothing is ever shown twice.

import { api, followEvents } from "./api.js";
import { block, debounce, h, notice, prettyJson, replace, stateBadge, timeElement } from "./dom.js";
import { resultBody } from "./results.js";
import { escapeInvisibleJson, resolvesTo, visibleCode } from "./visible.js";

const ACTIVE = new Set(["queued", "running", "waiting_approval"]);
const RETRYABLE = new Set(["interrupted"]);

function row(stored, kind, title, ...body) {
  return h(
    "li",
    {
      class: "event event-" + kind,
      dataset: { seq: String(stored.seq), type: stored.type },
    },
    h(
      "div",
      { class: "event-head" },
      h("span", { class: "event-title" }, title),
      h("span", { class: "event-meta" }, `step ${stored.step + 1} · `, timeElement(stored.at, true)),
    ),
    body.length ? h("div", { class: "event-body" }, body) : null,
  );
}

function describeArguments(args) {
  return block(escapeInvisibleJson(prettyJson(args)), "Arguments", "json");
}

/** The timeline row for one stored event. */
export function eventRow(stored) {
  switch (stored.type) {
    case "task_started":
      return row(stored, "start", "Task started", h("p", { class: "quote", text: stored.prompt }));
    case "model_request":
      return row(
        stored,
        "quiet",
        `Asked the model (${stored.message_count} messages, ${stored.tool_count} tools offered)`,
      );
    case "context_trimmed":
      return row(
        stored,
        "quiet",
        `Left ${stored.dropped_messages} older messages out to fit the model's window (${stored.kept_tokens} of ${stored.window} tokens)`,
      );
    case "assistant_message": {
      const calls = stored.tool_calls || [];
      const names = calls.map((call) => call.name).join(", ");
      if (!stored.content) {
        return row(stored, "quiet", `The model asks to use ${names || "no tool"}`);
      }
      return row(
        stored,
        "assistant",
        "Model",
        h("p", { class: "message-text", text: stored.content }),
        calls.length ? h("p", { class: "muted", text: "Asks to use: " + names }) : null,
      );
    }
    case "tool_call":
      return row(stored, "call", `Tool call: ${stored.name}`, describeArguments(stored.arguments));
    case "tool_result":
      return row(stored, "result", `Result of ${stored.name}`, resultBody(stored.content));
    case "tool_error":
      return row(stored, "error", `${stored.name} failed`, block(stored.message, "Error", "output"));
    case "tool_denied":
      return row(
        stored,
        "denied",
        `Denied: ${stored.name}`,
        h(
          "p",
          {},
          h("span", { class: "badge rule", text: stored.rule }),
          " ",
          h("span", { text: stored.message }),
        ),
        h("p", { class: "muted small", text: `Denials in this task so far: ${stored.denials}` }),
      );
    case "approval_required": {
      const preview = stored.preview || {};
      const target = preview.target ? [" ", visibleCode(preview.target, "target")] : [];
      const facts = [preview.label, stored.risk ? stored.risk + " risk" : null, stored.capability].filter(Boolean);
      return row(
        stored,
        "approval",
        ["Waiting for approval: ", stored.name, target],
        resolvesTo(preview.target, preview.resolved),
        h("p", { class: "muted", text: facts.join(" · ") }),
        stored.approval_id
          ? h("p", {}, h("a", {
              class: "button small",
              href: "#/approvals/" + encodeURIComponent(stored.approval_id),
              text: "Open the approval card",
            }))
          : null,
      );
    }
    case "approval_resolved": {
      const decision = stored.decision;
      const words = {
        approved: stored.edited ? "Approved with edited arguments" : "Approved",
        rejected: "Rejected by the operator",
        stale: "Not run: the file changed after the approval was requested",
      };
      return row(
        stored,
        "resolved-" + decision,
        words[decision] || `Resolved: ${decision}`,
        stored.reason ? h("p", {}, "Reason: ", h("q", { text: stored.reason })) : null,
      );
    }
    case "approval_edit_rejected":
      return row(stored, "error", "Edited arguments refused", h("p", { text: stored.message }));
    case "task_completed":
      return row(stored, "final", "Final answer", h("div", { class: "final-text", text: stored.final }));
    case "task_cancelled":
      return row(stored, "ended", "Cancelled", h("p", { text: stored.message }));
    case "task_interrupted":
      return row(stored, "ended", "Interrupted", h("p", { text: stored.message }));
    case "task_retried":
      return row(stored, "start", "Retried", h("p", { text: stored.message }));
    case "session_summarised":
      return row(
        stored,
        "quiet",
        `Summarised ${stored.turns} earlier turn(s) of the conversation (turns 1 to ${stored.through_turn}; about ${stored.tokens_before} → ${stored.tokens_after} tokens)`,
      );
    case "task_failed":
      return row(
        stored,
        "failed",
        `Failed (${String(stored.reason).replace(/_/g, " ")})`,
        h("p", { text: stored.message }),
      );
    default:
      return row(stored, "quiet", stored.type, block(prettyJson(stored), "Event", "json"));
  }
}

/** Renders the task page; returns its cleanup. */
export function renderTask(container, id) {
  const header = h("div", { class: "task-head" }, h("p", { class: "muted", text: "Loading the task…" }));
  const actions = h("div", { class: "task-actions" });
  const status = h("div", { class: "form-status" });
  const timeline = h("ol", { class: "timeline", "aria-label": "Event timeline", "aria-live": "polite" });
  const streamState = h("p", { class: "muted small stream-state", role: "status" });
  const seen = new Set();
  let task = null;

  const renderHeader = () => {
    replace(
      header,
      h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "← Tasks" })),
      h("h1", { class: "task-prompt", text: task.prompt }),
      h(
        "p",
        { class: "task-facts" },
        stateBadge(task.state),
        h("span", { text: " in workspace " }),
        h("code", { text: task.workspace }),
        h("span", { text: " · created " }),
        timeElement(task.created_at),
        h("span", { class: "muted", text: ` · ${task.id}` }),
      ),
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

  const loadTask = async () => {
    try {
      task = await api("/api/tasks/" + encodeURIComponent(id));
      renderHeader();
    } catch (error) {
      replace(
        header,
        h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "← Tasks" })),
        notice("error", error.status === 404 ? `There is no task ${id}.` : "Cannot load the task: " + error.message),
      );
    }
  };
  const reloadTask = debounce(loadTask, 150);

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

  /** Approval ids by call id, to show what an edited approval ran with. */
  const approvals = new Map();

  const showEditedArguments = async (item, callId) => {
    const approvalId = approvals.get(callId);
    if (!approvalId) {
      return;
    }
    try {
      const view = await api("/api/approvals/" + encodeURIComponent(approvalId));
      if (view.edited_arguments) {
        const body = item.querySelector(".event-body") || item.appendChild(h("div", { class: "event-body" }));
        body.append(h("p", { class: "muted small", text: "It ran with these arguments:" }), block(prettyJson(view.edited_arguments), "Edited arguments", "json"));
      }
    } catch {
      // The row already says the arguments were edited.
    }
  };

  /** The model's last message repeats the final answer: keep it short. */
  const foldRepeatedAnswer = (stored) => {
    const last = timeline.lastElementChild;
    const text = last && last.dataset.type === "assistant_message" ? last.querySelector(".message-text") : null;
    if (text && text.textContent === stored.final) {
      last.classList.replace("event-assistant", "event-quiet");
      last.querySelector(".event-title").textContent = "The model answered (below)";
      last.querySelector(".event-body").remove();
    }
  };

  const stream = followEvents(`/api/tasks/${encodeURIComponent(id)}/events`, {
    onEvent(stored) {
      if (seen.has(stored.seq)) {
        return;
      }
      seen.add(stored.seq);
      if (stored.type === "approval_required" && stored.approval_id) {
        approvals.set(stored.call_id, stored.approval_id);
      }
      if (stored.type === "task_completed") {
        foldRepeatedAnswer(stored);
      }
      const item = eventRow(stored);
      timeline.append(item);
      if (stored.type === "approval_resolved" && stored.edited) {
        showEditedArguments(item, stored.call_id);
      }
      if (stored.type !== "model_request") {
        reloadTask();
      }
    },
    onStatus(state) {
      streamState.textContent = state === "live" ? "" : "Connection lost — reconnecting; events resume where they stopped.";
    },
  });

  replace(
    container,
    header,
    h("div", { class: "toolbar" }, actions, status),
    h("section", { class: "panel", "aria-labelledby": "timeline-title" }, h("h2", { id: "timeline-title", text: "Timeline" }), streamState, timeline),
  );
  loadTask();
  return {
    cleanup() {
      stream.close();
      reloadTask.cancel();
    },
  };
}
