// #/tasks: the "new task" form and the task list with a state filter, kept live.

import { api, query } from "./api.js";
import { STATE_LABELS, debounce, h, hashLink, hashQuery, notice, replace, stateBadge, timeElement } from "./dom.js";

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
  fillWorkspaces(workspace).catch((error) => {
    replace(status, notice("error", "Cannot list workspaces: " + error.message));
  });
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
  return h(
    "tr",
    { dataset: { taskId: task.id, state: task.state } },
    h("td", { "data-label": "State" }, stateBadge(task.state)),
    h(
      "td",
      { "data-label": "Task", class: "prompt-cell" },
      h("a", { href: "#/tasks/" + encodeURIComponent(task.id), text: task.prompt || "(no prompt)" }),
      task.error ? h("div", { class: "muted small", text: task.error }) : null,
    ),
    h("td", { "data-label": "Workspace", text: task.workspace }),
    h("td", { "data-label": "Created" }, timeElement(task.created_at)),
  );
}

/** Renders the page; returns its live-event hook. */
export function renderTaskList(container) {
  const params = hashQuery();
  const filter = params.get("state") || "";
  const select = h(
    "select",
    { id: "state-filter", name: "state" },
    h("option", { value: "", text: "All states" }),
    TASK_STATES.map((state) => h("option", { value: state, selected: state === filter, text: STATE_LABELS[state] })),
  );
  select.addEventListener("change", () => {
    location.hash = hashLink("/tasks", { state: select.value });
  });
  const list = h("div", { class: "task-list", "aria-live": "polite" }, h("p", { class: "muted", text: "Loading tasks…" }));

  const load = async () => {
    try {
      const data = await api("/api/tasks" + query({ state: filter, limit: 200 }));
      if (data.tasks.length === 0) {
        replace(list, h("p", { class: "empty", text: filter ? `No ${STATE_LABELS[filter]} tasks.` : "No tasks yet. Start one above." }));
        return;
      }
      replace(
        list,
        h(
          "table",
          { class: "table responsive" },
          h(
            "thead",
            {},
            h("tr", {}, h("th", { text: "State" }), h("th", { text: "Task" }), h("th", { text: "Workspace" }), h("th", { text: "Created" })),
          ),
          h("tbody", {}, data.tasks.map(taskRow)),
        ),
      );
    } catch (error) {
      replace(list, notice("error", "Cannot load the tasks: " + error.message));
    }
  };
  const reload = debounce(load, 200);

  replace(
    container,
    h("h1", { text: "Tasks" }),
    newTaskForm(),
    h(
      "section",
      { class: "panel", "aria-labelledby": "task-list-title" },
      h(
        "div",
        { class: "section-head" },
        h("h2", { id: "task-list-title", text: "Recent tasks" }),
        h("div", { class: "field inline" }, h("label", { for: "state-filter", text: "Show" }), select),
      ),
      list,
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
    cleanup: () => reload.cancel(),
  };
}
