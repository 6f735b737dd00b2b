// #/tasks?q=&state=&workspace=&created_by=: the "new task" form and the task list,
// searchable by prompt and filtered by state, workspace and who started the task (kept
// in the hash query, so a reload keeps them), paged with `next_before`, with each task's changes on disk, kept live.

import { api, query } from "./api.js";
import { STARTED_BY, STATE_LABELS, debounce, h, hashLink, hashQuery, notice, replace, stateBadge, timeElement } from "./dom.js";
import { countsText } from "./changes.js";
import { quotedPrompt, taskTitle, untrustedPrompt } from "./format.js";

const TASK_STATES = [
  "queued",
  "running",
  "waiting_approval",
  "completed",
  "failed",
  "cancelled",
  "timed_out",
  "interrupted",
];

/** Fills a workspace `<select>` from `/api/workspaces`, the default selected. */
export async function fillWorkspaces(select) {
  const data = await api("/api/workspaces");
  select.replaceChildren();
  for (const workspace of data.workspaces) {
    select.append(
      h("option", {
        value: workspace.name,
        selected: workspace.default,
        text: `${workspace.name} — ${workspace.path}`,
      }),
    );
  }
  return data.workspaces;
}

function newTaskForm() {
  const prompt = h("textarea", {
    id: "task-prompt",
    name: "prompt",
    rows: 3,
    required: true,
    placeholder: "What should PocketPilot do? For example: summarise the invoices in this folder into totals.csv",
  });
  const workspace = h("select", { id: "task-workspace", name: "workspace" });
  const status = h("div", { class: "form-status" });
  const submit = h("button", { type: "submit", class: "button primary", text: "Start task" });
  // After a server restart the list comes back by itself: try again until it works,
  // then clear the message.
  let delay = 1000;
  const tryWorkspaces = () => {
    fillWorkspaces(workspace).then(
      () => {
        if (status.querySelector(".workspaces-error")) {
          replace(status);
        }
      },
      (error) => {
        if (error.status === 401) {
          return;
        }
        const problem = notice("error", "Cannot list workspaces: " + error.message + " Trying again…");
        problem.classList.add("workspaces-error");
        replace(status, problem);
        setTimeout(() => {
          if (workspace.isConnected) {
            tryWorkspaces();
          }
        }, delay);
        delay = Math.min(delay * 2, 10000);
      },
    );
  };
  tryWorkspaces();
  const form = h(
    "form",
    { class: "panel new-task", "aria-labelledby": "new-task-title" },
    h("h2", { id: "new-task-title", text: "New task" }),
    h("label", { for: "task-prompt" }, "Prompt ", h("span", { class: "muted small", text: "(Ctrl+Enter starts it)" })),
    prompt,
    h(
      "div",
      { class: "form-row" },
      h("div", { class: "field" }, h("label", { for: "task-workspace", text: "Workspace" }), workspace),
      submit,
    ),
    status,
  );
  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) {
      replace(status, notice("error", "Write a prompt first."));
      prompt.focus();
      return;
    }
    submit.disabled = true;
    replace(status, notice("info", "Creating the task…"));
    try {
      const task = await api("/api/tasks", {
        method: "POST",
        body: { prompt: text, workspace: workspace.value || undefined },
      });
      location.hash = "#/tasks/" + encodeURIComponent(task.id);
    } catch (error) {
      replace(status, notice("error", "The task was not created: " + error.message));
      submit.disabled = false;
    }
  });
  return form;
}

function taskRow(task) {
  const counts = countsText(task.changes);
  return h(
    "tr",
    { dataset: { taskId: task.id, state: task.state } },
    h("td", { "data-label": "State" }, stateBadge(task.state)),
    h(
      "td",
      { "data-label": "Task", class: "prompt-cell" },
      // A prompt from a webhook, a schedule or an MCP client is never link text: the
      // link names where the task came from, the text follows quoted (cut, expandable).
      h("a", { href: "#/tasks/" + encodeURIComponent(task.id), class: untrustedPrompt(task) ? "task-link untrusted" : "task-link", text: taskTitle(task) }),
      untrustedPrompt(task) ? quotedPrompt(task) : null,
      task.error ? h("div", { class: "muted small", text: task.error }) : null,
    ),
    h("td", { "data-label": "Changes", class: "changes-cell" }, counts ? h("span", { class: "change-counts", text: counts }) : h("span", { class: "muted", text: task.changes ? "none" : "" })),
    h("td", { "data-label": "Workspace", text: task.workspace }),
    h("td", { "data-label": "Created" }, timeElement(task.created_at)),
  );
}

const PAGE = 50;

/** Renders the page; returns its live-event hook. */
export function renderTaskList(container) {
  const params = hashQuery();
  const filters = {
    q: params.get("q") || "",
    state: params.get("state") || "",
    workspace: params.get("workspace") || "",
    created_by: params.get("created_by") || "",
  };
  // `#/tasks?limit=N` changes the page size (kept in the address like the filters).
  const pageSize = Math.min(1000, Math.max(1, Number(params.get("limit")) || PAGE));
  const search = h("input", { id: "task-search", name: "q", type: "search", value: filters.q, placeholder: "Words in the prompt", autocomplete: "off" });
  const select = h(
    "select",
    { id: "state-filter", name: "state" },
    h("option", { value: "", text: "All states" }),
    TASK_STATES.map((state) => h("option", { value: state, selected: state === filters.state, text: STATE_LABELS[state] })),
  );
  const actorFilter = h(
    "select",
    { id: "created-by-filter", name: "created_by" },
    h("option", { value: "", text: "Anyone" }),
    Object.entries(STARTED_BY).map(([actor, label]) => h("option", { value: actor, selected: actor === filters.created_by, text: label })),
  );
  const workspaceFilter = h("select", { id: "workspace-filter", name: "workspace" }, h("option", { value: "", text: "All workspaces" }));
  if (filters.workspace) {
    workspaceFilter.append(h("option", { value: filters.workspace, selected: true, text: filters.workspace }));
  }
  api("/api/workspaces").then(
    (data) => {
      replace(
        workspaceFilter,
        h("option", { value: "", text: "All workspaces" }),
        data.workspaces.map((workspace) => h("option", { value: workspace.name, selected: workspace.name === filters.workspace, text: workspace.name })),
      );
      workspaceFilter.closest(".field").hidden = data.workspaces.length < 2 && !filters.workspace;
    },
    () => {
      // The list still works without the names; the new-task form reports the problem.
    },
  );
  const list = h("div", { class: "task-list", "aria-live": "polite" }, h("p", { class: "muted", text: "Loading tasks…" }));
  const more = h("button", { type: "button", class: "button", hidden: true, text: "Older tasks" });
  const summary = h("p", { class: "muted small task-summary", role: "status" });
  const body = h("tbody");
  let nextBefore = null;
  let retryTimer = null;

  const describe = () =>
    [filters.q ? `matching “${filters.q}”` : "", filters.state ? STATE_LABELS[filters.state] : "", filters.workspace ? `in ${filters.workspace}` : "", filters.created_by ? `started by ${(STARTED_BY[filters.created_by] || filters.created_by).toLowerCase()}` : ""]
      .filter(Boolean)
      .join(", ");

  const load = async (before) => {
    clearTimeout(retryTimer);
    let data;
    try {
      data = await api("/api/tasks" + query({ ...filters, before, limit: pageSize }));
    } catch (error) {
      if (error.status === 400) {
        replace(list, notice("error", "The search was refused: " + error.message));
        return;
      }
      replace(list, notice("error", "Cannot load the tasks: " + error.message + " Trying again…"));
      retryTimer = setTimeout(() => load(), 3000);
      return;
    }
    if (!before) {
      body.replaceChildren();
    }
    body.append(...data.tasks.map(taskRow));
    nextBefore = data.next_before || null;
    more.hidden = !nextBefore;
    const filtered = describe();
    summary.textContent = filtered ? `${body.children.length}${nextBefore ? "+" : ""} task(s) ${filtered}.` : "";
    if (body.children.length === 0) {
      replace(list, h("p", { class: "empty", text: filtered ? `No tasks ${filtered}.` : "No tasks yet. Start one above." }));
      return;
    }
    if (!list.querySelector("table")) {
      replace(
        list,
        h(
          "table",
          { class: "table responsive tasks" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { text: "State" }),
              h("th", { text: "Task" }),
              h("th", { text: "Changes on disk" }),
              h("th", { text: "Workspace" }),
              h("th", { text: "Created" }),
            ),
          ),
          body,
        ),
      );
    }
  };
  // Live updates reload the first page only (older pages stay as they were loaded).
  const reload = debounce(() => load(), 200);
  more.addEventListener("click", () => load(nextBefore));

  /** Applies the form to the list and the address (no page change, focus stays). */
  const apply = () => {
    filters.q = search.value.trim();
    filters.state = select.value;
    filters.workspace = workspaceFilter.value;
    filters.created_by = actorFilter.value;
    history.replaceState(null, "", hashLink("/tasks", { ...filters, limit: pageSize === PAGE ? "" : String(pageSize) }));
    load();
  };
  const applySoon = debounce(apply, 300);
  const form = h(
    "form",
    { class: "filters task-filters", role: "search", "aria-label": "Search tasks" },
    h("div", { class: "field grow" }, h("label", { for: "task-search", text: "Search" }), search),
    h("div", { class: "field" }, h("label", { for: "state-filter", text: "State" }), select),
    h("div", { class: "field" }, h("label", { for: "workspace-filter", text: "Workspace" }), workspaceFilter),
    h("div", { class: "field" }, h("label", { for: "created-by-filter", text: "Started by" }), actorFilter),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    applySoon.cancel();
    apply();
  });
  search.addEventListener("input", applySoon);
  select.addEventListener("change", apply);
  workspaceFilter.addEventListener("change", apply);
  actorFilter.addEventListener("change", apply);

  replace(
    container,
    h("h1", { text: "Tasks" }),
    newTaskForm(),
    h(
      "section",
      { class: "panel", "aria-labelledby": "task-list-title" },
      h("h2", { id: "task-list-title", text: "Recent tasks" }),
      form,
      summary,
      list,
      more,
    ),
  );
  load();
  return {
    onEvent(stored) {
      if (stored.type !== "model_request" && stored.type !== "context_trimmed") {
        reload();
      }
    },
    resync: reload,
    cleanup: () => {
      reload.cancel();
      applySoon.cancel();
      clearTimeout(retryTimer);
    },
  };
}
