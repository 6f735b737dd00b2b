// #/approvals: the triage inbox — one compact row per call (origin, tool, target,
// precheck status, age), grouped by task and, inside a task, by changeset; opening a row
// reads that one card (`GET /api/approvals/ID`) and shows it (card.js). The first
// pending row opens by itself, and after a decision here the next one does. Kept live
// from the shell's event stream. #/approvals/ID: one card.

import { api, query } from "./api.js";
import { debounce, h, hashLink, hashQuery, notice, replace } from "./dom.js";
import { approvalCard } from "./card.js";
import { KEY_HINT } from "./keys.js";
import { originTag, quotedPrompt, taskTitle, untrustedPrompt } from "./format.js";
import { visibleCode } from "./visible.js";
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

/** The precheck status as words (never colour alone). */
export const PRECHECK_WORDS = {
  ready: "Ready",
  changed: "Changed since asked",
  will_fail: "Will fail",
  no_change: "No change",
  unavailable: "Cannot check",
};

/** The status label of a row: its precheck while pending, its outcome or state after. */
export function rowStatus(view) {
  if (view.state !== "pending") {
    const status = view.outcome?.status || view.state;
    return { key: "decided-" + status, text: view.outcome?.message || view.state, title: null };
  }
  const precheck = view.precheck;
  if (!precheck) {
    return { key: "none", text: "Not checked (no file target)", title: null };
  }
  return {
    key: precheck.status,
    text: PRECHECK_WORDS[precheck.status] || precheck.status,
    title: precheck.message || null,
  };
}

/** "now", "4 min", "3 h", "2 d" since `stamp`. */
export function ageText(stamp, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - new Date(stamp).getTime()) / 1000));
  if (!Number.isFinite(seconds) || seconds < 60) {
    return "just now";
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return `${minutes} min ago`;
  }
  const hours = Math.floor(minutes / 60);
  if (hours < 48) {
    return `${hours} h ago`;
  }
  return `${Math.floor(hours / 24)} d ago`;
}

let rowCounter = 0;

/**
 * One compact row; `open()` reads the full card and shows it under the row.
 * @param {any} view a row of `GET /api/approvals`
 * @param {{ onResolved: (row: any) => void }} options
 */
function inboxRow(view, { onResolved }) {
  const uid = "inbox-row-" + ++rowCounter;
  const slot = h("div", { class: "inbox-card", id: uid + "-card", hidden: true });
  const toggle = h(
    "button",
    { type: "button", class: "inbox-open", "aria-expanded": "false", "aria-controls": uid + "-card" },
    h("span", { class: "inbox-tool", text: view.tool }),
    view.target ? [" ", visibleCode(view.target, "inbox-target")] : null,
  );
  const status = h("span", { class: "precheck-label" });
  const age = h("time", { class: "inbox-age", datetime: view.created_at, title: view.created_at });
  const element = h(
    "li",
    { class: "inbox-row", dataset: { approvalId: view.id, taskId: view.task_id } },
    h(
      "div",
      { class: "inbox-line" },
      toggle,
      h("span", { class: "inbox-facts" }, status, " ", originTag(view), " ", age),
    ),
    slot,
  );
  let current = view;
  let card = null;
  let loading = null;

  const draw = () => {
    const { key, text, title } = rowStatus(current);
    status.className = "precheck-label precheck-" + key;
    status.dataset.status = key;
    status.textContent = text;
    if (title) {
      status.title = title;
    } else {
      status.removeAttribute("title");
    }
    element.dataset.state = current.state;
    age.textContent = ageText(current.created_at);
  };

  const open = async () => {
    toggle.setAttribute("aria-expanded", "true");
    slot.hidden = false;
    element.classList.add("open");
    if (card) {
      return card;
    }
    if (loading) {
      return loading;
    }
    replace(slot, h("p", { class: "muted small", text: "Loading the card…" }));
    loading = (async () => {
      try {
        const full = await api("/api/approvals/" + encodeURIComponent(view.id));
        card = approvalCard(full, {
          onResolved: () => onResolved(row),
        });
        replace(slot, card.element);
        return card;
      } catch (error) {
        replace(slot, notice("error", error.status === 404 ? "This approval is gone." : "Cannot load the card: " + error.message));
      } finally {
        loading = null;
      }
    })();
    return loading;
  };
  const close = () => {
    toggle.setAttribute("aria-expanded", "false");
    slot.hidden = true;
    element.classList.remove("open");
  };
  toggle.addEventListener("click", () => {
    if (toggle.getAttribute("aria-expanded") === "true") {
      close();
    } else {
      open();
    }
  });

  const row = {
    id: view.id,
    element,
    open,
    isOpen: () => !slot.hidden,
    isPending: () => (card ? card.isPending() : current.state === "pending"),
    get view() {
      return current;
    },
    /** A fresher row (the list) or the card (after it left the pending list). */
    update(fresh) {
      current = { ...current, ...fresh };
      draw();
      if (card && fresh.state !== "pending") {
        card.update(fresh);
      }
    },
    tick: draw,
    dispose() {
      card?.dispose();
    },
  };
  draw();
  return row;
}

/** The key a task's rows are grouped under, and the task-ish fields of a row. */
const taskOf = (view) => ({ id: view.task_id, prompt: view.prompt, created_by: view.created_by, origin: view.origin });

/** The heading of a task's group: origin, then the task (quoted when untrusted). */
function groupHead(task, headingId) {
  const link = h("a", { href: "#/tasks/" + encodeURIComponent(task.id), text: taskTitle(task) });
  return h(
    "div",
    { class: "inbox-group-head" },
    h("h2", { id: headingId, class: "inbox-task" + (untrustedPrompt(task) ? " untrusted" : "") }, link),
    untrustedPrompt(task) ? quotedPrompt(task) : null,
  );
}

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
  const list = h("div", { class: "inbox", "data-inbox": "", "data-card-list": "" }, h("p", { class: "muted placeholder", text: "Loading approvals…" }));
  const summary = h("p", { class: "muted inbox-summary", role: "status" });
  /** Rows on screen by approval id. */
  const rows = new Map();
  /** Whether the person opened or closed a row (then nothing opens by itself on load). */
  let touched = false;
  /** The layout on screen (task, changeset and approval ids in order). */
  let laidOut = "";

  const pendingRows = () => [...rows.values()].filter((row) => row.isPending());

  /**
   * Opens the first pending row when no pending card is open (the triage flow); with
   * `focus`, its card takes the focus unless the person has moved it somewhere else.
   */
  const openNext = async (focus = false) => {
    if (filter !== "pending") {
      return;
    }
    const open = [...rows.values()].some((row) => row.isOpen() && row.isPending());
    if (open) {
      return;
    }
    const ordered = [...list.querySelectorAll(".inbox-row")].map((element) => rows.get(element.dataset.approvalId));
    const next = ordered.find((row) => row && row.isPending() && !row.isOpen());
    if (!next) {
      return;
    }
    const card = await next.open();
    const active = document.activeElement;
    const idle = !active || active === document.body || active.matches("[data-focus-heading], article.card:not([data-state='pending'])");
    if (focus && card && idle && card.element.isConnected) {
      card.element.focus();
    }
  };

  const setSummary = () => {
    const pending = pendingRows();
    const tasks = new Set(pending.map((row) => row.view.task_id)).size;
    summary.textContent =
      filter === "pending" && pending.length
        ? `${pending.length} call${pending.length === 1 ? "" : "s"} waiting for your decision` +
          (tasks > 1 ? `, in ${tasks} tasks.` : ".")
        : "";
  };

  /** Lays the rows out: task groups (newest request first), changesets inside. */
  const layout = (views) => {
    const groups = new Map();
    for (const view of views) {
      if (!groups.has(view.task_id)) {
        groups.set(view.task_id, { task: taskOf(view), views: [] });
      }
      groups.get(view.task_id).views.push(view);
    }
    const sections = [];
    for (const { task, views: inTask } of groups.values()) {
      // The model's order inside a task: oldest request first.
      const ordered = [...inTask].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)) || String(a.id).localeCompare(String(b.id)));
      const items = [];
      const changesets = new Map();
      for (const view of ordered) {
        const row = rows.get(view.id);
        if (view.changeset_id) {
          let set = changesets.get(view.changeset_id);
          if (!set) {
            set = h("ul", { class: "inbox-rows" });
            changesets.set(view.changeset_id, set);
            items.push({ changeset: view.changeset_id, list: set });
          }
          set.append(row.element);
        } else {
          items.push({ element: row.element });
        }
      }
      const headingId = "inbox-task-" + task.id.replace(/[^A-Za-z0-9_-]/g, "");
      const body = h("ul", { class: "inbox-rows" });
      for (const item of items) {
        if (item.element) {
          body.append(item.element);
        } else if (item.list.children.length === 1) {
          // A lone call of its turn is an ordinary row.
          body.append(item.list.firstElementChild);
        } else {
          const count = item.list.children.length;
          body.append(
            h(
              "li",
              { class: "inbox-changeset", dataset: { changesetId: item.changeset } },
              h(
                "p",
                { class: "inbox-changeset-head small" },
                `${count} calls from one model turn · `,
                h("a", { href: "#/changesets/" + encodeURIComponent(item.changeset), text: `Review all ${count} together` }),
              ),
              item.list,
            ),
          );
        }
      }
      sections.push(
        h(
          "section",
          { class: "inbox-group", "aria-labelledby": headingId, dataset: { taskId: task.id, createdBy: task.created_by || "operator" } },
          groupHead(task, headingId),
          body,
        ),
      );
    }
    return sections;
  };

  const loadOnce = async () => {
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
    const fresh = new Map(data.approvals.map((view) => [view.id, view]));
    for (const view of data.approvals) {
      const row = rows.get(view.id);
      if (row) {
        row.update(view);
      } else {
        rows.set(
          view.id,
          inboxRow(view, {
            onResolved: () => {
              context.refreshCount();
              setSummary();
              openNext(true);
            },
          }),
        );
      }
    }
    // Rows that left the list were decided elsewhere (or here): an open one keeps its
    // card (which says what happened); a closed one goes.
    const shown = [...data.approvals];
    for (const [id, row] of rows) {
      if (fresh.has(id)) {
        continue;
      }
      if (row.isOpen()) {
        // Read once after it left the list: the row's label then says what happened.
        if (row.view.state === "pending") {
          try {
            row.update(await api("/api/approvals/" + encodeURIComponent(id)));
          } catch (error) {
            if (error.status === 404) {
              row.dispose();
              rows.delete(id);
              continue;
            }
          }
        }
        shown.push(row.view);
      } else {
        row.dispose();
        rows.delete(id);
      }
    }
    // Groups ordered by their newest request, newest first (the list's own order).
    shown.sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
    if (shown.length === 0) {
      laidOut = "";
      replace(
        list,
        h("p", {
          class: "empty placeholder",
          text: filter === "pending" ? "Nothing is waiting for approval. New requests appear here as they come in." : `No ${filter} approvals.`,
        }),
      );
    } else {
      // Lay the rows out again only when the layout changed: moving an element out of the
      // page and back takes its focus (a half-typed reason, a focused card).
      const signature = shown.map((view) => `${view.task_id}/${view.changeset_id || ""}/${view.id}`).join(",");
      if (signature !== laidOut || !list.querySelector(".inbox-group")) {
        laidOut = signature;
        const active = document.activeElement;
        const inside = active instanceof HTMLElement && list.contains(active) ? active : null;
        replace(list, layout(shown));
        if (inside && inside.isConnected && document.activeElement !== inside) {
          inside.focus({ preventScroll: true });
        }
      }
    }
    setSummary();
    if (!touched) {
      openNext(true);
    }
  };
  /** One read at a time: a read asked for meanwhile runs once the current one is done. */
  let busy = false;
  let again = false;
  const load = async () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      await loadOnce();
    } finally {
      busy = false;
      if (again) {
        again = false;
        load();
      }
    }
  };
  const reload = debounce(load, 150);
  list.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest(".inbox-open")) {
      touched = true;
    }
  });
  const ticker = setInterval(() => {
    for (const row of rows.values()) {
      row.tick();
    }
  }, 30000);

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
      clearInterval(ticker);
      for (const row of rows.values()) {
        row.dispose();
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
