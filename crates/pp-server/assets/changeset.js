// One model turn's approval-needing calls as one review (#/changesets/ID), like a pull
// request: every file and diff on its own card (approve or reject each), and an
// "Approve all N" button that names N and sends N decisions, each with the fingerprint
// of the target its card showed (POST /api/changesets/{id}/resolve). Nothing runs until
// every card is decided; then the turn's calls run in the model's order.

import { api } from "./api.js";
import { debounce, h, hashLink, notice, replace } from "./dom.js";
import { announce, approvalCard } from "./card.js";

/** Events after which a review may have changed. */
const REVIEW_EVENTS = new Set(["approval_required", "approval_resolved", "tool_result", "tool_error", "task_completed", "task_failed", "task_cancelled"]);

/** What each result status of a changeset resolve means, for the person. */
const RESULT_TEXT = {
  accepted: "decided",
  already_resolved: "already decided elsewhere",
  changed_since_seen: "the file changed while you looked — nothing ran; look again",
  invalid_arguments: "refused: the arguments are not valid",
  invalid_state: "the task is not waiting any more",
};

/** How the "Approve all" button and the line above it read for the pending `views`. */
export function approveAllWording(views) {
  const pending = views.filter((view) => view.state === "pending");
  const failing = pending.filter((view) => view.precheck?.status === "will_fail").length;
  const nothing = pending.filter((view) => view.precheck?.status === "no_change").length;
  const changed = pending.filter((view) => view.precheck?.status === "changed").length;
  const n = pending.length;
  const warnings = [];
  if (failing) {
    warnings.push(`${failing} of them will fail as things are now`);
  }
  if (nothing) {
    warnings.push(`${nothing} would change nothing`);
  }
  if (changed) {
    warnings.push(`${changed} ${changed === 1 ? "targets a file that" : "target files that"} changed since the request — approving applies to the files as they are now`);
  }
  const label = n === 1 ? "Approve the 1 pending call" : `Approve all ${n}`;
  return { n, label: warnings.length && failing ? `${label} anyway` : label, warning: warnings.join("; ") };
}

export function renderChangeset(container, id, context) {
  const summary = h("div", { class: "changeset-summary" });
  const slot = h("div", { class: "cards" }, h("p", { class: "muted", text: "Loading the changeset…" }));
  const result = h("div", { class: "changeset-result", role: "status", "aria-live": "polite" });
  const warning = h("p", { class: "notice notice-warn changeset-warning", hidden: true });
  const approveAll = h("button", { type: "button", class: "button primary approve-all", hidden: true, onclick: () => sendAll() });
  const bar = h("div", { class: "button-row changeset-actions" }, approveAll);
  const cards = new Map();
  let latest = null;
  let sending = false;

  const draw = (review) => {
    latest = review;
    const { n, label, warning: text } = approveAllWording(review.approvals);
    replace(
      summary,
      h(
        "p",
        { class: "muted" },
        `${review.size} ${review.size === 1 ? "call" : "calls"} asked for together by one step of `,
        h("a", { href: hashLink("/tasks/" + encodeURIComponent(review.task_id)), text: "task " + review.task_id }),
        `; ${review.pending} still ${review.pending === 1 ? "waits" : "wait"} for a decision. Nothing runs until every card is decided; then they run in the order shown.`,
      ),
    );
    approveAll.hidden = n === 0;
    approveAll.disabled = sending;
    approveAll.textContent = label;
    warning.hidden = !text || n === 0;
    warning.textContent = text ? "Before you approve all: " + text + "." : "";
    const seen = new Set();
    for (const view of review.approvals) {
      seen.add(view.id);
      const card = cards.get(view.id);
      if (card) {
        card.update(view);
      } else {
        const made = approvalCard(view, { linkToTask: false, focusNext: false, onResolved: () => { context.refreshCount(); reload(); } });
        cards.set(view.id, made);
      }
    }
    replace(slot, ...review.approvals.map((view) => cards.get(view.id).element));
    for (const [key, card] of cards) {
      if (!seen.has(key)) {
        card.dispose();
        cards.delete(key);
      }
    }
  };

  const load = async () => {
    try {
      draw(await api("/api/changesets/" + encodeURIComponent(id)));
    } catch (error) {
      if (!latest) {
        replace(slot, notice("error", error.status === 404 ? `There is no changeset ${id}.` : "Cannot load the changeset: " + error.message));
      }
    }
  };
  const reload = debounce(load, 150);

  const sendAll = async () => {
    if (!latest || sending) {
      return;
    }
    const pending = latest.approvals.filter((view) => view.state === "pending");
    const decisions = pending.map((view) => {
      const decision = { approval_id: view.id, decision: "approve" };
      if (view.precheck?.fingerprint) {
        decision.seen_fingerprint = view.precheck.fingerprint;
      }
      return decision;
    });
    sending = true;
    approveAll.disabled = true;
    try {
      const answer = await api(`/api/changesets/${encodeURIComponent(id)}/resolve`, { method: "POST", body: { decisions } });
      const lines = answer.results.map((item) => {
        const view = pending.find((candidate) => candidate.id === item.approval_id);
        const what = view?.target || view?.tool || item.approval_id;
        return `${what}: ${RESULT_TEXT[item.status] || item.status}`;
      });
      const accepted = answer.results.filter((item) => item.status === "accepted").length;
      replace(result, h("p", { text: `${accepted} of ${decisions.length} approved.` }), h("ul", {}, ...lines.map((line) => h("li", { text: line }))));
      announce(`${accepted} of ${decisions.length} approved`);
      context.refreshCount();
    } catch (error) {
      replace(result, notice("error", "Nothing was decided: " + error.message));
    } finally {
      sending = false;
      await load();
    }
  };

  replace(
    container,
    h("p", { class: "crumbs" }, h("a", { href: "#/approvals", text: "← All approvals" })),
    h("h1", { text: "Review the changes together" }),
    summary,
    warning,
    bar,
    result,
    slot,
  );
  load();
  return {
    onEvent(stored) {
      if (REVIEW_EVENTS.has(stored.type) && (!latest || stored.task_id === latest.task_id)) {
        reload();
      }
    },
    resync: reload,
    cleanup() {
      reload.cancel();
      for (const card of cards.values()) {
        card.dispose();
      }
    },
  };
}
