// Timeline rows: `eventRow(stored)` (one row per stored event, also used by the chat
// page) and `compactTimeline()` (the task page's timeline: one line per tool call).
// Every row is keyed by the event's global sequence number (`data-seq`).

import { block, h, notice, prettyJson, timeElement } from "./dom.js";
import { resultBody } from "./results.js";
import { resolvesTo, visibleCode } from "./visible.js";
import { argumentsList, argumentsSummary } from "./format.js";
import { api } from "./api.js";
import { labelWords } from "./effects.js";
import { renderDiffView, renderNewContent } from "./diff.js";
import { quotedText } from "./card.js";

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

/**
 * What ran, for an approval approved with edited arguments (issue 27): the
 * `approval_resolved` event carries `arguments` (what ran), `preview` (its effect) and
 * `edited_by`. The call's first line still shows the model's request; this is the call
 * that ran. Null for an unedited decision.
 */
function ranPart(stored) {
  if (stored.decision !== "approved" || !(stored.edited || stored.arguments)) {
    return null;
  }
  const preview = stored.preview || {};
  const by = stored.edited_by || "the approver";
  return h(
    "div",
    { class: "ran-edited" },
    h("p", { class: "edited-mark" }, `What ran — edited by ${by} before approving`, preview.target ? [": ", visibleCode(preview.target, "target")] : null),
    stored.arguments ? argumentsList(stored.arguments) : null,
    typeof preview.diff === "string" && preview.diff
      ? renderDiffView({ text: preview.diff }, { label: "diff of the call that ran", toggle: false })
      : typeof preview.content === "string"
        ? renderNewContent(preview.content, "content of the call that ran")
        : null,
  );
}

function describeArguments(args) {
  return argumentsList(args);
}

/** The timeline row for one stored event. */
export function eventRow(stored) {
  switch (stored.type) {
    case "task_started":
      // Quoted and cut like every prompt (it may have come from a webhook).
      return row(stored, "start", "Task started", quotedText(stored.prompt, { className: "quote" }));
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
      const facts = [preview.label ? labelWords(preview) : null, stored.risk ? stored.risk + " risk" : null, stored.capability].filter(Boolean);
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
        ranPart(stored),
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

// ---------------------------------------------------------------------------------------
// The compact timeline of the task page: one expandable line per tool call, with its
// approval, result, error or denial folded into it (paired by `call_id`); the model's
// own bookkeeping rows (requests, trimmed context) hidden unless asked for. Every event
// element keeps `data-seq` and `data-type`, so each stored event is on the page once.

/** Events that only say what the loop asked the model: hidden behind the toggle. */
const MODEL_ROWS = new Set(["model_request", "context_trimmed", "session_summarised"]);

/** Words and badge class for a call line's status. */
const CALL_STATUS = {
  running: ["running", "state-running"],
  waiting: ["waiting for your decision", "state-waiting_approval"],
  approved: ["approved", "state-approved"],
  done: ["done", "state-completed"],
  failed: ["failed", "state-failed"],
  denied: ["denied", "state-failed"],
  rejected: ["rejected", "state-rejected"],
  stale: ["not run — file changed", "state-stale"],
};

/**
 * Builds the compact timeline. `options.approvalCard(view, opts)` builds the inline card
 * for a pending call (card.js); `options.onChange()` runs after a call finishes (the
 * Changes panel refreshes).
 * @param {{ approvalCard: Function, onChange?: () => void, onResolved?: () => void }} options
 */
export function compactTimeline({ approvalCard, onChange = () => {}, onResolved = () => {} }) {
  const list = h("ol", { class: "timeline compact", "aria-label": "Event timeline" });
  const showModel = h("input", { type: "checkbox", id: "show-model-rows" });
  showModel.addEventListener("change", () => list.classList.toggle("show-model", showModel.checked));
  const modelCount = h("span", { class: "muted small model-count" });
  const toggle = h(
    "div",
    { class: "timeline-options" },
    h("label", { for: "show-model-rows", class: "check" }, showModel, " Show model requests ", modelCount),
  );
  const box = h("div", { class: "timeline-scroll", tabindex: "0", role: "region", "aria-label": "Timeline (newest at the bottom)" }, list);
  const jump = h("button", { type: "button", class: "button small jump-newest", hidden: true, text: "↓ Newest events" });
  /** Whether the box follows the newest event (the person has not scrolled up). */
  let following = true;
  box.addEventListener("scroll", () => {
    following = box.scrollTop + box.clientHeight >= box.scrollHeight - 40;
    if (following) {
      jump.hidden = true;
    }
  });
  jump.addEventListener("click", () => {
    following = true;
    jump.hidden = true;
    box.scrollTop = box.scrollHeight;
  });

  /** Call lines by call id. */
  const calls = new Map();
  let models = 0;
  /** The last model message with text (folded when the final answer repeats it). */
  let lastAssistant = null;

  const follow = () => {
    if (following) {
      box.scrollTop = box.scrollHeight;
    } else {
      jump.hidden = false;
    }
  };

  const part = (stored, kind, ...children) =>
    h("div", { class: "call-part part-" + kind, dataset: { seq: String(stored.seq), type: stored.type } }, children);

  const setStatus = (line, status) => {
    const [words, className] = CALL_STATUS[status] || [status, ""];
    line.element.dataset.status = status;
    line.badge.className = "badge call-status " + className;
    line.badge.textContent = words;
  };

  const callLine = (stored) => {
    const existing = calls.get(stored.call_id);
    if (existing) {
      return existing;
    }
    const badge = h("span", { class: "badge call-status" });
    const summaryText = h("span", { class: "call-args" });
    const body = h("div", { class: "call-body" });
    const details = h(
      "details",
      { class: "call-details" },
      h(
        "summary",
        {},
        h("span", { class: "call-name", text: stored.name || "tool" }),
        " ",
        summaryText,
        " ",
        badge,
        h("span", { class: "event-meta" }, ` step ${stored.step + 1} · `, timeElement(stored.at, true)),
      ),
      body,
    );
    const element = h("li", { class: "event call-line", dataset: { callId: stored.call_id, name: stored.name || "" } }, details);
    const line = { element, details, body, badge, summaryText, card: null, approvalId: null, resolved: false };
    calls.set(stored.call_id, line);
    list.append(element);
    return line;
  };

  const mountCard = async (line) => {
    if (line.resolved || !line.approvalId || line.card) {
      return;
    }
    try {
      const view = await api("/api/approvals/" + encodeURIComponent(line.approvalId));
      if (view.state !== "pending" || line.card) {
        return;
      }
      // The one approval card component (decide's card.js), inline in the call's row.
      line.card = approvalCard(view, { linkToTask: false, onResolved, focusNext: false });
      line.slot.replaceChildren(line.card.element);
      line.details.open = true;
      follow();
    } catch (error) {
      line.slot.replaceChildren(notice("error", "Cannot show the approval card: " + error.message));
    }
  };

  const add = (stored) => {
    if (MODEL_ROWS.has(stored.type) || (stored.type === "assistant_message" && !stored.content)) {
      models += 1;
      modelCount.textContent = `(${models})`;
      const item = eventRow(stored);
      item.classList.add("model-row");
      list.append(item);
      return;
    }
    switch (stored.type) {
      case "tool_call": {
        const line = callLine(stored);
        line.element.dataset.seq = String(stored.seq);
        line.element.dataset.type = "tool_call";
        line.summaryText.textContent = argumentsSummary(stored.arguments);
        // The line itself carries this event's seq; the arguments are its first part.
        line.body.prepend(h("div", { class: "call-part part-arguments" }, argumentsList(stored.arguments)));
        setStatus(line, "running");
        break;
      }
      case "approval_required": {
        const line = callLine(stored);
        const preview = stored.preview || {};
        const facts = [preview.label ? labelWords(preview) : null, stored.risk ? stored.risk + " risk" : null, stored.capability].filter(Boolean);
        line.slot = h("div", { class: "card-slot" });
        line.approvalId = stored.approval_id || null;
        line.body.append(
          part(
            stored,
            "approval",
            h(
              "p",
              { class: "small approval-line" },
              "Needs your approval: ",
              h("span", { class: "tool", text: stored.name }),
              preview.target ? [" ", visibleCode(preview.target, "target")] : null,
              h("span", { class: "muted", text: " · " + facts.join(" · ") }),
            ),
            resolvesTo(preview.target, preview.resolved),
            line.slot,
            stored.approval_id
              ? h("p", {}, h("a", { class: "small", href: "#/approvals/" + encodeURIComponent(stored.approval_id), text: "Open the approval card" }))
              : null,
          ),
        );
        line.element.classList.add("needs-approval");
        line.details.open = true;
        setStatus(line, "waiting");
        // Events replayed from history arrive in a burst: mount the card only if no
        // resolution follows right away.
        setTimeout(() => mountCard(line), 60);
        break;
      }
      case "approval_resolved": {
        const line = callLine(stored);
        line.resolved = true;
        line.element.classList.remove("needs-approval");
        // Decided: the line folds back to one row (its card keeps the outcome inside).
        line.details.open = false;
        const words = {
          approved: stored.edited ? "Approved with edited arguments" : "Approved",
          rejected: "Rejected by the operator",
          stale: "Not run: the file changed after the approval was requested",
        };
        line.body.append(
          part(
            stored,
            "resolved",
            h("p", { class: "resolution resolved-" + stored.decision, text: words[stored.decision] || `Resolved: ${stored.decision}` }),
            stored.reason ? h("p", {}, "Reason: ", h("q", { text: stored.reason })) : null,
            ranPart(stored),
          ),
        );
        setStatus(line, stored.decision === "approved" ? "approved" : stored.decision);
        if (line.card && line.card.isPending() && line.approvalId) {
          // Decided elsewhere (the panel above, another tab): the inline card says so.
          api("/api/approvals/" + encodeURIComponent(line.approvalId)).then(line.card.update, (error) => {
            line.slot.append(notice("warn", "Decided elsewhere; cannot load the result: " + error.message));
          });
        }
        break;
      }
      case "approval_edit_rejected": {
        const line = callLine(stored);
        line.body.append(part(stored, "error", h("p", { class: "notice notice-error", text: "Edited arguments refused: " + stored.message })));
        break;
      }
      case "tool_result": {
        const line = callLine(stored);
        line.body.append(part(stored, "result", h("p", { class: "part-title", text: "Result" }), resultBody(stored.content)));
        setStatus(line, "done");
        onChange();
        break;
      }
      case "tool_error": {
        const line = callLine(stored);
        line.body.append(part(stored, "error", h("p", { class: "part-title", text: "Error" }), block(stored.message, "Error", "output")));
        if (line.element.dataset.status !== "rejected" && line.element.dataset.status !== "stale") {
          setStatus(line, "failed");
        }
        onChange();
        break;
      }
      case "tool_denied": {
        const line = callLine(stored);
        line.body.append(
          part(
            stored,
            "denied",
            h("p", {}, h("span", { class: "badge rule", text: stored.rule }), " ", h("span", { text: stored.message })),
            h("p", { class: "muted small", text: `Denials in this task so far: ${stored.denials}` }),
          ),
        );
        line.element.classList.add("denied");
        setStatus(line, "denied");
        break;
      }
      case "assistant_message": {
        const item = eventRow(stored);
        lastAssistant = { item, content: stored.content };
        list.append(item);
        break;
      }
      case "task_completed":
        // The model's last message is the final answer: keep it once, as the answer
        // (the message row joins the hidden model rows).
        if (lastAssistant && lastAssistant.content === stored.final && lastAssistant.item === list.lastElementChild) {
          lastAssistant.item.classList.add("model-row");
          models += 1;
          modelCount.textContent = `(${models})`;
        }
        list.append(eventRow(stored));
        break;
      default:
        list.append(eventRow(stored));
    }
    follow();
  };

  return {
    element: h("div", { class: "timeline-wrap" }, toggle, box, jump),
    list,
    add,
    /** Stops the inline cards' own timers and listeners (page left). */
    dispose() {
      for (const line of calls.values()) {
        if (line.card && line.card.dispose) {
          line.card.dispose();
        }
      }
    },
  };
}
