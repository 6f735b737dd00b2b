// @ts-check
// #/channels: webhook channels. Each is a URL another program posts to, signed with the
// channel's secret (docs/webhooks.md); every accepted delivery becomes a task that, like
// any task, waits for your approval before it writes anything. Add a channel (its secret
// is shown once, with a copy button), disable or enable it, rotate its secret, remove it,
// and read its delivery log (accepted with the task, refused with why, rate limited).

import { api } from "./api.js";
import { debounce, h, notice, replace, timeElement } from "./dom.js";

/** The secret panel: shown once, after creation or rotation. @param {any} answer */
function secretPanel(answer) {
  const secretId = "channel-secret-" + answer.name;
  const copyStatus = h("span", { class: "form-status", "aria-live": "polite" });
  const copy = h("button", {
    type: "button",
    class: "button",
    text: "Copy secret",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(answer.secret);
        copyStatus.textContent = "Copied.";
      } catch {
        const field = document.getElementById(secretId);
        if (field instanceof HTMLInputElement) {
          field.select();
        }
        copyStatus.textContent = "Select the secret and copy it.";
      }
    },
  });
  return h(
    "section",
    { class: "panel channel-secret", "aria-labelledby": secretId + "-title", dataset: { channel: answer.name } },
    h("h2", { id: secretId + "-title", text: `Secret of ${answer.name}` }),
    notice("warn", "This is the only time the secret is shown. Give it to the program that posts; it is stored encrypted and cannot be shown again (rotate to get a new one)."),
    h("label", { for: secretId, text: "Secret" }),
    h("input", { id: secretId, class: "secret-value", type: "text", readonly: true, value: answer.secret, spellcheck: "false", autocomplete: "off" }),
    h("div", { class: "button-row" }, copy, copyStatus),
    h("p", { class: "muted small" }, "Deliveries go to ", h("code", { class: "wrap", text: answer.url })),
  );
}

/** One delivery row. @param {any} row */
function deliveryRow(row) {
  const detail = row.task_id
    ? h("a", { href: "#/tasks/" + encodeURIComponent(row.task_id), text: row.task_id })
    : h("span", { text: row.reason || "" });
  return h(
    "tr",
    { dataset: { status: row.status } },
    h("td", { "data-label": "When" }, timeElement(row.at)),
    h("td", { "data-label": "Status" }, h("span", { class: "badge delivery-" + row.status, text: row.status.replace("_", " ") })),
    h("td", { "data-label": "Task or reason", class: "detail" }, detail),
  );
}

/**
 * The delivery log of `name`, loaded into `target`; the table is replaced only when the
 * log changed (a live refresh keeps the page still otherwise). Resolves to whether it did.
 */
async function loadDeliveries(name, target) {
  try {
    const answer = await api("/api/channels/" + encodeURIComponent(name) + "/deliveries?limit=20");
    const key = answer.deliveries.map((row) => `${row.id}:${row.status}`).join(",");
    if (target.dataset.log === key) {
      return false;
    }
    target.dataset.log = key;
    if (answer.deliveries.length === 0) {
      replace(target, h("p", { class: "muted small", text: "No deliveries yet." }));
      return true;
    }
    replace(
      target,
      h(
        "table",
        { class: "table responsive deliveries" },
        h("caption", { class: "visually-hidden", text: `Deliveries to ${name}, newest first` }),
        h("thead", {}, h("tr", {}, h("th", { text: "When" }), h("th", { text: "Status" }), h("th", { text: "Task or reason" }))),
        h("tbody", {}, answer.deliveries.map(deliveryRow)),
      ),
    );
    return true;
  } catch (error) {
    delete target.dataset.log;
    replace(target, notice("error", "Cannot read the delivery log: " + error.message));
    return false;
  }
}

/** How often the delivery logs are read again: from the first delay, doubling while nothing changes. */
const POLL_FIRST = 3000;
const POLL_MAX = 15000;

/** @param {HTMLElement} container */
export function renderChannels(container) {
  const list = h("div", { class: "channels", "aria-busy": "true" });
  const secretSlot = h("div", { class: "secret-slot" });
  const status = h("div", { class: "form-status", "aria-live": "polite" });

  async function refresh() {
    try {
      const answer = await api("/api/channels");
      list.removeAttribute("aria-busy");
      if (answer.channels.length === 0) {
        replace(list, h("p", { class: "empty", text: "No channels yet. Add one above, then give its URL and secret to the program that posts." }));
        return;
      }
      replace(list, answer.channels.map(channelPanel));
    } catch (error) {
      list.removeAttribute("aria-busy");
      if (error.status !== 401) {
        replace(list, notice("error", "Cannot list the channels: " + error.message));
      }
    }
  }

  /** @param {string} message @param {Promise<any>} call */
  async function act(message, call) {
    try {
      const answer = await call;
      status.textContent = message;
      if (answer && answer.secret) {
        replace(secretSlot, secretPanel(answer));
      }
      await refresh();
      // Something was just done here: deliveries may follow soon (a test post, say).
      soon();
    } catch (error) {
      replace(status, notice("error", error.message));
    }
  }

  /** @param {any} channel */
  function channelPanel(channel) {
    const titleId = "channel-" + channel.name;
    const log = h("div", { class: "delivery-log" }, h("p", { class: "muted small", text: "Loading deliveries…" }));
    const path = "/api/channels/" + encodeURIComponent(channel.name);
    const toggle = h("button", {
      type: "button",
      class: "button",
      text: channel.enabled ? "Disable" : "Enable",
      onclick: () => act(`${channel.name} ${channel.enabled ? "disabled" : "enabled"}.`, api(path, { method: "PUT", body: { enabled: !channel.enabled } })),
    });
    const rotate = h("button", {
      type: "button",
      class: "button",
      text: "Rotate secret",
      onclick: () => {
        if (window.confirm(`Replace the secret of ${channel.name}? The old one stops working at once.`)) {
          act(`${channel.name} has a new secret.`, api(path + "/rotate", { method: "POST" }));
        }
      },
    });
    const remove = h("button", {
      type: "button",
      class: "button danger",
      text: "Remove",
      onclick: () => {
        if (window.confirm(`Remove ${channel.name} and its delivery log? Its tasks stay.`)) {
          act(`${channel.name} removed.`, api(path, { method: "DELETE" }));
        }
      },
    });
    const panel = h(
      "section",
      { class: "panel channel", "aria-labelledby": titleId, dataset: { channel: channel.name } },
      h(
        "h2",
        { id: titleId },
        h("span", { text: channel.name }),
        " ",
        h("span", { class: "badge " + (channel.enabled ? "state-completed" : "state-cancelled"), text: channel.enabled ? "enabled" : "disabled" }),
      ),
      h("p", { class: "muted small" }, "URL path ", h("code", { class: "wrap", text: channel.webhook_path })),
      h("p", { class: "small" }, "Template: ", h("span", { class: "wrap", text: channel.template || "the default (the whole body, quoted as untrusted data)" })),
      h("div", { class: "button-row" }, toggle, rotate, remove),
      h("h3", { text: "Deliveries" }),
      log,
    );
    loadDeliveries(channel.name, log);
    return panel;
  }

  const nameInput = h("input", { id: "new-channel-name", name: "name", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", autocomplete: "off", spellcheck: "false" });
  const templateInput = h("textarea", { id: "new-channel-template", name: "template", rows: "2", placeholder: "File the submission from {{json.name}}: {{body}}" });
  const form = h(
    "form",
    { class: "panel new-channel", "aria-labelledby": "new-channel-title" },
    h("h2", { id: "new-channel-title", text: "Add a channel" }),
    h("div", { class: "field" }, h("label", { for: "new-channel-name", text: "Name (a-z, 0-9, - and _)" }), nameInput),
    h("div", { class: "field" }, h("label", { for: "new-channel-template", text: "Template (optional): {{body}}, {{json.field}}" }), templateInput),
    h("button", { type: "submit", class: "button primary", text: "Add channel" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = /** @type {HTMLInputElement} */ (nameInput).value.trim();
    const template = /** @type {HTMLTextAreaElement} */ (templateInput).value.trim();
    const body = template ? { name, template } : { name };
    act(`${name} added.`, api("/api/channels", { method: "POST", body })).then(() => {
      /** @type {HTMLFormElement} */ (form).reset();
    });
  });

  replace(
    container,
    h("h1", { text: "Webhook channels" }),
    h("p", {
      class: "muted",
      text: "Other programs post to a channel's URL, signed with its secret (see docs/webhooks.md). Each accepted delivery starts a task; like every task, it asks you before it writes anything.",
    }),
    form,
    status,
    secretSlot,
    list,
  );
  refresh();

  // The delivery logs are live: an accepted delivery starts a task (its event comes on
  // the shell's stream, and the logs are read again at once); a refused one leaves no
  // event, so the logs are also polled, backing off while nothing changes.
  let delay = POLL_FIRST;
  let timer = null;
  let stopped = false;
  const refreshLogs = async () => {
    let changed = false;
    for (const panel of list.querySelectorAll("section.channel")) {
      const log = panel.querySelector(".delivery-log");
      if (log && panel.dataset.channel) {
        changed = (await loadDeliveries(panel.dataset.channel, log)) || changed;
      }
    }
    return changed;
  };
  const poll = async () => {
    clearTimeout(timer);
    const changed = document.hidden ? false : await refreshLogs();
    if (stopped) {
      return;
    }
    delay = changed ? POLL_FIRST : Math.min(delay * 2, POLL_MAX);
    timer = setTimeout(poll, delay);
  };
  const soon = debounce(() => {
    delay = POLL_FIRST;
    poll();
  }, 200);
  timer = setTimeout(poll, delay);
  return {
    onEvent(stored) {
      if (stored.type === "task_started") {
        soon();
      }
    },
    resync: soon,
    cleanup() {
      stopped = true;
      clearTimeout(timer);
      soon.cancel();
    },
  };
}
