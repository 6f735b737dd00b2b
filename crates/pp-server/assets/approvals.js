// #/approvals: the inbox of approval cards across all tasks, newest first, kept live;
// #/approvals/ID: one card.

import { api, query } from "./api.js";
import { debounce, h, hashLink, hashQuery, notice, replace } from "./dom.js";
import { approvalCard } from "./card.js";
import { KEY_HINT } from "./keys.js";

const APPROVAL_STATES = ["pending", "approved", "rejected", "stale", "cancelled"];

/** Events that can add, remove or settle a card. */
const CARD_EVENTS = new Set([
  "approval_required",
  "approval_resolved",
  "task_cancelled",
  "task_completed",
  "task_failed",
  "task_interrupted",
  "task_retried",
]);

export function renderInbox(container, _id, context) {
  const filter = hashQuery().get("state") || "pending";
  const select = h(
    "select",
    { id: "approval-filter" },
    APPROVAL_STATES.map((state) => h("option", { value: state, selected: state === filter, text: state })),
  );
  select.addEventListener("change", () => {
    location.hash = hashLink("/approvals", { state: select.value === "pending" ? "" : select.value });
  });
  const list = h("div", { class: "cards", "data-card-list": "" }, h("p", { class: "muted placeholder", text: "Loading approvals…" }));
  const summary = h("p", { class: "muted inbox-summary", role: "status" });
  /** Cards on screen by approval id, in display order. */
  const cards = new Map();

  const setSummary = () => {
    const pending = [...cards.values()].filter((card) => card.isPending()).length;
    if (filter === "pending") {
      summary.textContent =
        pending === 0 ? "" : `${pending} call${pending === 1 ? "" : "s"} waiting for your decision.`;
    } else {
      summary.textContent = "";
    }
    const empty = list.querySelector(":scope > .empty");
    if (cards.size === 0 && !empty) {
      replace(
        list,
        h("p", {
          class: "empty placeholder",
          text: filter === "pending" ? "Nothing is waiting for approval. New requests appear here as they come in." : `No ${filter} approvals.`,
        }),
      );
    } else if (cards.size > 0 && empty) {
      empty.remove();
    }
  };

  const load = async () => {
    let data;
    try {
      data = await api("/api/approvals" + query({ state: filter, limit: 200 }));
    } catch (error) {
      const problem = notice("error", "Cannot load the approvals: " + error.message);
      problem.classList.add("placeholder");
      list.querySelector(":scope > .placeholder")?.remove();
      list.prepend(problem);
      return;
    }
    for (const placeholder of list.querySelectorAll(":scope > .placeholder")) {
      placeholder.remove();
    }
    const fresh = new Map(data.approvals.map((view) => [view.id, view]));
    // New cards go on top (the answer is newest first).
    for (const view of [...data.approvals].reverse()) {
      if (!cards.has(view.id)) {
        const card = approvalCard(view, { onResolved: () => { context.refreshCount(); setSummary(); } });
        cards.set(view.id, card);
        list.prepend(card.element);
      }
    }
    // Cards that left the pending list were resolved elsewhere: say by whom.
    if (filter === "pending") {
      for (const [id, card] of cards) {
        if (!fresh.has(id) && card.isPending()) {
          try {
            card.update(await api("/api/approvals/" + encodeURIComponent(id)));
          } catch (error) {
            if (error.status === 404) {
              card.element.remove();
              cards.delete(id);
            }
          }
        }
      }
    }
    setSummary();
  };
  const reload = debounce(load, 150);

  replace(
    container,
    h(
      "div",
      { class: "section-head" },
      h("h1", { text: "Approvals", tabindex: "-1", "data-focus-heading": "" }),
      h("div", { class: "field inline" }, h("label", { for: "approval-filter", text: "Show" }), select),
    ),
    summary,
    h("p", { class: "muted small key-hint", text: KEY_HINT }),
    list,
  );
  load();
  return {
    onEvent(stored) {
      if (CARD_EVENTS.has(stored.type)) {
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

export function renderApproval(container, id, context) {
  const slot = h("div", { class: "cards" }, h("p", { class: "muted", text: "Loading the approval…" }));
  let card = null;

  const load = async () => {
    try {
      const view = await api("/api/approvals/" + encodeURIComponent(id));
      if (!card) {
        card = approvalCard(view, { onResolved: () => context.refreshCount() });
        replace(slot, card.element);
      } else {
        card.update(view);
      }
    } catch (error) {
      if (!card) {
        replace(slot, notice("error", error.status === 404 ? `There is no approval ${id}.` : "Cannot load the approval: " + error.message));
      }
    }
  };
  const reload = debounce(load, 150);

  replace(
    container,
    h("p", { class: "crumbs" }, h("a", { href: "#/approvals", text: "← All approvals" })),
    h("h1", { text: "Approval" }),
    slot,
  );
  load();
  return {
    onEvent(stored) {
      if (CARD_EVENTS.has(stored.type)) {
        reload();
      }
    },
    resync: reload,
    cleanup() {
      reload.cancel();
      card?.dispose();
    },
  };
}
