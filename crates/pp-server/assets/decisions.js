// "Needs your decision": the pending approvals of one task as cards at the top of its
// page, kept live from the events (one shared connection, live.js). The task page (timeline.js) mounts it:
// `renderDecisions(container, taskId, context)` fills `container` and returns
// `{ cleanup() }`. The panel hides itself while the task has nothing to decide and no
// card decided on this page.

import { api } from "./api.js";
import { debounce, h, replace } from "./dom.js";
import { approvalCard } from "./card.js";
import { KEY_HINT } from "./keys.js";
import { subscribe } from "./live.js";

/** Task events after which the set of pending approvals may differ. */
const REFRESH_EVENTS = new Set([
  "approval_required",
  "approval_resolved",
  "task_cancelled",
  "task_completed",
  "task_failed",
  "task_interrupted",
  "task_retried",
]);

export function renderDecisions(container, taskId, context = {}) {
  const headingId = "decisions-title-" + taskId;
  const heading = h("h2", { id: headingId, tabindex: "-1", "data-focus-heading": "", text: "Needs your decision" });
  const summary = h("p", { class: "muted decisions-summary" });
  const list = h("div", { class: "cards", "data-card-list": "" });
  const section = h(
    "section",
    { id: "decisions", class: "panel decisions", "aria-labelledby": headingId, hidden: true },
    heading,
    summary,
    h("p", { class: "muted small key-hint", text: KEY_HINT }),
    list,
  );
  replace(container, section);
  /** Cards on screen by approval id. */
  const cards = new Map();

  const setSummary = () => {
    const pending = [...cards.values()].filter((card) => card.isPending()).length;
    summary.textContent =
      pending === 0 ? "Nothing else is waiting for you on this task." : `${pending} call${pending === 1 ? "" : "s"} waiting for your decision.`;
    section.hidden = cards.size === 0;
  };

  const load = async () => {
    let data;
    try {
      data = await api("/api/approvals?state=pending&limit=1000");
    } catch {
      return;
    }
    const mine = data.approvals.filter((row) => row.task_id === taskId).reverse();
    const ids = new Set(mine.map((row) => row.id));
    for (const row of mine) {
      if (!cards.has(row.id)) {
        // The list's rows are for triage; a card is drawn from the full card.
        let view;
        try {
          view = await api("/api/approvals/" + encodeURIComponent(row.id));
        } catch {
          continue; // Decided or gone meanwhile: the next event tries again.
        }
        if (cards.has(view.id)) {
          continue;
        }
        const card = approvalCard(view, {
          linkToTask: false,
          onResolved: () => {
            context.refreshCount?.();
            setSummary();
          },
        });
        cards.set(view.id, card);
        list.append(card.element);
        // The person just decided (focus on the heading): the next call takes it.
        if (document.activeElement === heading) {
          card.element.focus();
        }
      }
    }
    for (const [id, card] of cards) {
      if (!ids.has(id) && card.isPending()) {
        try {
          card.update(await api("/api/approvals/" + encodeURIComponent(id)));
        } catch {
          // The next event tries again.
        }
      }
    }
    setSummary();
  };
  const reload = debounce(load, 150);

  const unsubscribe = subscribe(
    (stored) => {
      if (stored.type === "resync" || (stored.task_id === taskId && REFRESH_EVENTS.has(stored.type))) {
        reload();
      }
    },
    () => section.isConnected,
  );
  load();
  return {
    element: section,
    cleanup() {
      unsubscribe();
      reload.cancel();
      for (const card of cards.values()) {
        card.dispose();
      }
    },
  };
}
