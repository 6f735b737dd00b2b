// #/audit?actor=&task_id=&logins=1: the audit ledger, newest first, filterable by actor
// and task. Console logins are folded away unless "Show logins" is ticked (the server
// leaves them out with `?exclude=console_login`).

import { api, query } from "./api.js";
import { h, hashLink, hashQuery, notice, replace, timeElement } from "./dom.js";
import { visibleCode } from "./visible.js";

const ACTORS = ["agent", "operator", "scheduler", "webhook", "mcp_client"];
const PAGE = 200;
/** The audit action of a console login (folded unless asked for). */
const LOGIN = "console_login";

export function renderAudit(container) {
  const params = hashQuery();
  const actor = params.get("actor") || "";
  const taskId = params.get("task_id") || "";
  const logins = params.get("logins") === "1";

  const actorSelect = h(
    "select",
    { id: "audit-actor", name: "actor" },
    h("option", { value: "", text: "Everyone" }),
    ACTORS.map((name) => h("option", { value: name, selected: name === actor, text: name })),
  );
  const taskInput = h("input", { id: "audit-task", name: "task_id", type: "text", value: taskId, placeholder: "t_…", spellcheck: "false" });
  const loginsBox = h("input", { id: "audit-logins", name: "logins", type: "checkbox", checked: logins });
  const form = h(
    "form",
    { class: "filters" },
    h("div", { class: "field" }, h("label", { for: "audit-actor", text: "Actor" }), actorSelect),
    h("div", { class: "field" }, h("label", { for: "audit-task", text: "Task id" }), taskInput),
    h("div", { class: "field check-field" }, h("label", { for: "audit-logins", class: "check" }, loginsBox, " Show logins")),
    h("button", { type: "submit", class: "button", text: "Filter" }),
    actor || taskId || logins ? h("a", { href: "#/audit", class: "button ghost", text: "Clear" }) : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = hashLink("/audit", { actor: actorSelect.value, task_id: taskInput.value.trim(), logins: loginsBox.checked ? "1" : "" });
  });
  actorSelect.addEventListener("change", () => form.requestSubmit());
  loginsBox.addEventListener("change", () => form.requestSubmit());

  const body = h("tbody");
  const table = h(
    "table",
    { class: "table responsive audit" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["When", "Actor", "Action", "Task", "Tool", "Target", "Detail"].map((name) => h("th", { text: name })),
      ),
    ),
    body,
  );
  const status = h("div", { class: "audit-status" }, h("p", { class: "muted", text: "Loading the ledger…" }));
  const more = h("button", { type: "button", class: "button", hidden: true, text: "Show older entries" });
  let oldest = null;

  const row = (entry) =>
    h(
      "tr",
      { dataset: { actor: entry.actor, action: entry.action } },
      h("td", { "data-label": "When" }, timeElement(entry.at)),
      h(
        "td",
        { "data-label": "Actor" },
        h("span", { class: "badge actor-" + entry.actor, text: entry.actor }),
        entry.user ? h("div", { class: "small audit-user", text: entry.user }) : null,
        entry.origin ? h("div", { class: "muted small audit-origin" }, "from ", visibleCode(entry.origin, "origin")) : null,
      ),
      h("td", { "data-label": "Action" }, h("code", { text: entry.action })),
      h(
        "td",
        { "data-label": "Task" },
        entry.task_id
          ? h("a", { href: "#/tasks/" + encodeURIComponent(entry.task_id), class: "mono", text: entry.task_id })
          : "",
      ),
      h("td", { "data-label": "Tool", text: entry.tool || "" }),
      h("td", { "data-label": "Target" }, entry.target ? visibleCode(entry.target) : ""),
      h(
        "td",
        { "data-label": "Detail", class: "detail" },
        entry.detail || "",
        entry.approval_id
          ? h("div", { class: "muted small" }, "approval ", h("a", { href: "#/approvals/" + encodeURIComponent(entry.approval_id), class: "mono", text: entry.approval_id }))
          : null,
        entry.arguments_hash
          ? h("div", { class: "muted small mono", title: entry.arguments_hash, text: "arguments " + entry.arguments_hash.slice(0, 19) + "…" })
          : null,
      ),
    );

  const load = async (before) => {
    try {
      const data = await api("/api/audit" + query({ actor, task_id: taskId, before, limit: PAGE, exclude: logins ? "" : LOGIN }));
      for (const entry of data.entries) {
        // A server without `exclude` still sends login rows: fold them here too.
        if (logins || entry.action !== LOGIN) {
          body.append(row(entry));
        }
      }
      if (data.entries.length) {
        oldest = data.entries[data.entries.length - 1].id;
      }
      more.hidden = data.entries.length < PAGE;
      replace(status, body.children.length === 0 ? h("p", { class: "empty", text: "No entries match." }) : null);
    } catch (error) {
      replace(status, notice("error", "Cannot load the ledger: " + error.message));
    }
  };
  more.addEventListener("click", () => load(oldest));

  replace(
    container,
    h("h1", { text: "Audit ledger" }),
    h("p", {
      class: "muted",
      text: "Every side effect and decision, newest first. The agent's writes appear only after an operator approved them; the operator's own uploads and downloads are listed as operator.",
    }),
    form,
    h("section", { class: "panel audit-panel" }, table, status, more),
  );
  load();
  return {};
}
