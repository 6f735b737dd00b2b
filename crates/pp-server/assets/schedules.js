// @ts-check
// #/schedules: prompts the server runs at cron times. Each fire creates an ordinary
// task started by the scheduler (its origin the schedule's name); its writes wait in
// Approvals like anyone's: nothing here approves anything. The list shows each next
// fire time in the schedule's zone and in this browser's; the form shows the server's
// refusals (invalid_cron names the field and token) next to the field at fault.

import { api } from "./api.js";
import { h, notice, replace, stateBadge, timeElement } from "./dom.js";
import { visibleCode } from "./visible.js";

/**
 * A time in `zone` (an IANA name), or "" when the browser does not know the zone.
 * @param {string} stamp @param {string} zone
 */
function inZone(stamp, zone) {
  try {
    return new Date(stamp).toLocaleString(undefined, {
      timeZone: zone,
      weekday: "short",
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      timeZoneName: "short",
    });
  } catch {
    return "";
  }
}

/** The browser's own zone. */
function browserZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  } catch {
    return "local time";
  }
}

/** @param {any} schedule */
function nextFire(schedule) {
  if (!schedule.next_fire_at) {
    return h("span", { class: "muted", text: schedule.enabled ? "no future occurrence" : "not planned (disabled)" });
  }
  const there = inZone(schedule.next_fire_at, schedule.time_zone);
  const here = inZone(schedule.next_fire_at, browserZone());
  return h(
    "span",
    { class: "next-fire" },
    h("time", { datetime: schedule.next_fire_at, class: "next-fire-zone", text: there || schedule.next_fire_at }),
    here && here !== there ? h("span", { class: "muted small next-fire-local" }, " · here: ", here) : null,
  );
}

/** @param {any} schedule */
function stateOf(schedule) {
  if (schedule.paused_reason) {
    return h("span", { class: "badge state-failed", text: "paused" });
  }
  return h("span", {
    class: "badge " + (schedule.enabled ? "state-completed" : "state-cancelled"),
    text: schedule.enabled ? "enabled" : "disabled",
  });
}

/**
 * A labelled input with room for an inline error.
 * @param {string} id @param {string} label @param {HTMLElement} input @param {string} [help]
 */
function field(id, label, input, help) {
  input.id = id;
  const error = h("p", { id: id + "-error", class: "field-error", role: "alert" });
  input.setAttribute("aria-describedby", [help ? id + "-help" : null, id + "-error"].filter(Boolean).join(" "));
  return {
    element: h(
      "div",
      { class: "field" },
      h("label", { for: id, text: label }),
      input,
      help ? h("p", { id: id + "-help", class: "muted small", text: help }) : null,
      error,
    ),
    input,
    error,
  };
}

/**
 * The create/edit form. `existing` is the schedule being edited, or null.
 * @param {any} existing @param {string[]} workspaces @param {() => void} done
 */
function scheduleForm(existing, workspaces, done) {
  const text = (/** @type {string} */ name, /** @type {string} */ value, /** @type {string} */ placeholder) =>
    /** @type {HTMLInputElement} */ (h("input", { type: "text", name, value, placeholder, spellcheck: "false", autocomplete: "off" }));
  const name = field("schedule-name", "Name", text("name", existing ? existing.name : "", "weekly-invoices"));
  const cron = field(
    "schedule-cron",
    "Cron expression",
    text("cron", existing ? existing.cron : "", "0 9 * * 1"),
    "Minute hour day-of-month month day-of-week, or @daily, @weekly, …",
  );
  const zone = field("schedule-zone", "Time zone", text("time_zone", existing ? existing.time_zone : browserZone(), "Europe/Berlin"), "An IANA name");
  const prompt = field(
    "schedule-prompt",
    "Prompt",
    /** @type {HTMLTextAreaElement} */ (h("textarea", { name: "prompt", rows: 3, text: existing ? existing.prompt : "" })),
  );
  const workspace = field(
    "schedule-workspace",
    "Workspace",
    h(
      "select",
      { name: "workspace" },
      workspaces.map((ws) => h("option", { value: ws, selected: existing ? existing.workspace === ws : false, text: ws })),
    ),
  );
  const overlap = field(
    "schedule-overlap",
    "If the previous task is still active",
    h(
      "select",
      { name: "overlap" },
      h("option", { value: "skip", selected: !existing || existing.overlap === "skip", text: "skip this occurrence" }),
      h("option", { value: "queue", selected: existing ? existing.overlap === "queue" : false, text: "queue another task" }),
    ),
  );
  const fields = { name, cron, time_zone: zone, prompt, workspace, overlap };
  const status = h("div", { class: "form-status", "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "button primary", text: existing ? "Save schedule" : "Add schedule" });
  const titleId = existing ? "edit-schedule-title" : "new-schedule-title";
  const form = h(
    "form",
    { class: "panel schedule-form", "aria-labelledby": titleId, novalidate: true },
    h("h2", { id: titleId, text: existing ? `Edit ${existing.name}` : "New schedule" }),
    h("div", { class: "form-row" }, name.element, cron.element, zone.element),
    prompt.element,
    h("div", { class: "form-row" }, workspace.element, overlap.element),
    h("div", { class: "button-row" }, submit, existing ? h("button", { type: "button", class: "button", text: "Cancel", onclick: done }) : null),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const f of Object.values(fields)) {
      f.error.textContent = "";
      f.input.removeAttribute("aria-invalid");
    }
    replace(status);
    /** @type {Record<string, string>} */
    const body = {};
    for (const [key, f] of Object.entries(fields)) {
      body[key] = /** @type {HTMLInputElement} */ (f.input).value;
    }
    submit.setAttribute("disabled", "");
    try {
      if (existing) {
        await api("/api/schedules/" + encodeURIComponent(existing.id), { method: "PUT", body });
      } else {
        await api("/api/schedules", { method: "POST", body });
      }
      done();
    } catch (error) {
      const at =
        error.code === "invalid_cron"
          ? cron
          : error.code === "unknown_time_zone"
            ? zone
            : error.code === "exists"
              ? name
              : error.code === "not_found"
                ? workspace
                : null;
      if (at) {
        at.error.textContent = error.message;
        at.input.setAttribute("aria-invalid", "true");
        at.input.focus();
      } else {
        replace(status, notice("error", "Not saved: " + error.message));
      }
    } finally {
      submit.removeAttribute("disabled");
    }
  });
  return form;
}

/** @param {any} schedule @param {HTMLElement} into */
async function showTasks(schedule, into) {
  replace(into, h("p", { class: "muted", text: "Loading its tasks…" }));
  try {
    const data = await api("/api/schedules/" + encodeURIComponent(schedule.id) + "/tasks?limit=10");
    if (data.tasks.length === 0) {
      replace(into, h("p", { class: "muted", text: "It has not created a task yet." }));
      return;
    }
    replace(
      into,
      h(
        "ul",
        { class: "schedule-tasks" },
        data.tasks.map((/** @type {any} */ task) =>
          h("li", {}, h("a", { href: "#/tasks/" + encodeURIComponent(task.id), text: task.id }), " ", stateBadge(task.state), " ", timeElement(task.created_at)),
        ),
      ),
    );
  } catch (error) {
    replace(into, notice("error", "Cannot list its tasks: " + error.message));
  }
}

/** @param {HTMLElement} container */
export function renderSchedules(container) {
  const list = h("div", { class: "schedules", "aria-busy": "true" }, h("p", { class: "muted", text: "Loading the schedules…" }));
  const status = h("div", { class: "form-status", "aria-live": "polite" });
  const formSlot = h("div", { class: "schedule-form-slot" });
  /** @type {string[]} */
  let workspaces = [];

  replace(
    container,
    h("h1", { text: "Schedules" }),
    h("p", {
      class: "muted",
      text: "Prompts the server runs at cron times, while pocketpilot serve is running. Each run is an ordinary task started by the scheduler: anything it wants to write waits for you in Approvals.",
    }),
    status,
    list,
    formSlot,
  );

  function newForm() {
    replace(formSlot, scheduleForm(null, workspaces, load));
  }

  /** @param {any} schedule */
  function card(schedule) {
    const tasks = h("div", { class: "schedule-task-list" });
    const act = async (/** @type {string} */ what, /** @type {() => Promise<any>} */ call) => {
      replace(status);
      try {
        const result = await call();
        if (what === "run") {
          replace(
            status,
            h(
              "p",
              { class: "notice notice-ok", role: "status" },
              `Fired ${schedule.name}: task `,
              h("a", { href: "#/tasks/" + encodeURIComponent(result.task_id), text: result.task_id }),
              ". Its writes wait for you in Approvals.",
            ),
          );
        }
        await load();
      } catch (error) {
        replace(status, notice("error", `Cannot ${what} ${schedule.name}: ` + error.message));
      }
    };
    const path = "/api/schedules/" + encodeURIComponent(schedule.id);
    const titleId = "schedule-" + schedule.id;
    return h(
      "section",
      { class: "panel schedule", "aria-labelledby": titleId, dataset: { schedule: schedule.name } },
      h("h2", { id: titleId }, visibleCode(schedule.name), " ", stateOf(schedule)),
      h(
        "dl",
        { class: "facts" },
        h("dt", { text: "When" }),
        h("dd", {}, h("code", { text: schedule.cron }), " in ", h("code", { text: schedule.time_zone })),
        h("dt", { text: "Next" }),
        h("dd", {}, nextFire(schedule)),
        h("dt", { text: "Last fired" }),
        h("dd", {}, schedule.last_fired_at ? timeElement(schedule.last_fired_at) : h("span", { class: "muted", text: "never" })),
        h("dt", { text: "Last task" }),
        h(
          "dd",
          {},
          schedule.last_task_id
            ? [h("a", { href: "#/tasks/" + encodeURIComponent(schedule.last_task_id), text: schedule.last_task_id }), " ", schedule.last_task_state ? stateBadge(schedule.last_task_state) : null]
            : h("span", { class: "muted", text: "none" }),
        ),
        h("dt", { text: "Workspace" }),
        h("dd", {}, h("code", { text: schedule.workspace }), ` · overlap: ${schedule.overlap}`),
        h("dt", { text: "Prompt" }),
        h("dd", { class: "schedule-prompt", text: schedule.prompt }),
        schedule.paused_reason ? [h("dt", { text: "Paused" }), h("dd", { text: schedule.paused_reason })] : null,
      ),
      h(
        "div",
        { class: "button-row" },
        h("button", {
          type: "button",
          class: "button primary",
          text: "Run now",
          "aria-label": `Run now: ${schedule.name}`,
          onclick: () => act("run", () => api(path + "/run", { method: "POST" })),
        }),
        h("button", {
          type: "button",
          class: "button",
          text: schedule.enabled ? "Disable" : "Enable",
          "aria-label": `${schedule.enabled ? "Disable" : "Enable"} ${schedule.name}`,
          onclick: () => act(schedule.enabled ? "disable" : "enable", () => api(path, { method: "PUT", body: { enabled: !schedule.enabled } })),
        }),
        h("button", {
          type: "button",
          class: "button",
          text: "Edit",
          "aria-label": `Edit ${schedule.name}`,
          onclick: () => {
            replace(formSlot, scheduleForm(schedule, workspaces, load));
            formSlot.scrollIntoView({ block: "nearest" });
          },
        }),
        h("button", {
          type: "button",
          class: "button",
          text: "Recent tasks",
          "aria-label": `Recent tasks of ${schedule.name}`,
          onclick: () => showTasks(schedule, tasks),
        }),
        h("button", {
          type: "button",
          class: "button danger",
          text: "Remove",
          "aria-label": `Remove ${schedule.name}`,
          onclick: () => {
            if (window.confirm(`Remove the schedule ${schedule.name}? The tasks it created stay.`)) {
              act("remove", () => api(path, { method: "DELETE" }));
            }
          },
        }),
      ),
      tasks,
    );
  }

  async function load() {
    try {
      const [data, spaces] = await Promise.all([api("/api/schedules"), workspaces.length ? null : api("/api/workspaces")]);
      if (spaces) {
        workspaces = (spaces.workspaces || []).map((/** @type {any} */ ws) => ws.name);
      }
      list.removeAttribute("aria-busy");
      replace(list, data.schedules.length ? data.schedules.map(card) : h("p", { class: "empty", text: "No schedules yet." }));
      newForm();
    } catch (error) {
      list.removeAttribute("aria-busy");
      if (error.status !== 401) {
        replace(list, notice("error", "Cannot list the schedules: " + error.message));
      }
    }
  }

  load();
  return null;
}
