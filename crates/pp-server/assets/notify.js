// New-approval alerts: the pending count in the tab title and as a badge on the
// favicon, and — once the person allows it — a browser notification for each new
// pending approval. The count is the navigation's (#approval-count, which app.js reads
// from `GET /api/approvals/count`); the notifications come from the `approval_required`
// events of the shell's all-tasks stream (api.js `onAllEvents`). No pending card is
// downloaded for either: a notification reads only its task (for the prompt, and only
// when the person wrote it — a webhook's or schedule's text is never put in one).

import { api, onAllEvents } from "./api.js";
import { h } from "./dom.js";
import { taskTitle, untrustedPrompt } from "./format.js";

const BASE_TITLE = "PocketPilot";

/** An SVG favicon: the PocketPilot mark, with a red count badge when `count > 0`. */
export function faviconSvg(count) {
  const label = count > 99 ? "99+" : String(count);
  const badge =
    count > 0
      ? `<circle cx="46" cy="18" r="18" fill="#c62828"/><text x="46" y="25" font-family="Arial,sans-serif" font-size="${label.length > 2 ? 15 : 22}" font-weight="700" fill="#fff" text-anchor="middle">${label}</text>`
      : "";
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">` +
    `<rect x="4" y="8" width="48" height="48" rx="10" fill="#2456c6"/>` +
    `<text x="28" y="45" font-family="Arial,sans-serif" font-size="32" font-weight="700" fill="#fff" text-anchor="middle">P</text>` +
    badge +
    `</svg>`
  );
}

function iconLink() {
  let link = document.querySelector('link[rel~="icon"]');
  if (!link) {
    link = h("link", { rel: "icon", type: "image/svg+xml", href: "/assets/favicon.svg" });
    document.head.append(link);
  }
  if (!link.dataset.base) {
    link.dataset.base = link.getAttribute("href") || "/assets/favicon.svg";
  }
  return link;
}

/** Title and favicon for `count` pending approvals. */
export function showCount(count) {
  const link = iconLink();
  if (count > 0) {
    link.setAttribute("type", "image/svg+xml");
    link.setAttribute("href", "data:image/svg+xml," + encodeURIComponent(faviconSvg(count)));
    link.dataset.count = String(count);
    if (!document.title.startsWith(`(${count}) `)) {
      document.title = `(${count}) ${BASE_TITLE}`;
    }
  } else {
    link.setAttribute("href", link.dataset.base);
    link.dataset.count = "0";
  }
}

const supported = () => typeof Notification === "function";

/** The "Notify me" button (hidden when granted, refused or unsupported). */
function enableButton() {
  const button = h("button", {
    type: "button",
    id: "enable-notifications",
    class: "link-button notify-button",
    text: "Notify me of approvals",
    title: "Show a browser notification when a call needs your decision",
  });
  const sync = () => {
    button.hidden = !supported() || Notification.permission !== "default";
  };
  button.addEventListener("click", async () => {
    try {
      await Notification.requestPermission();
    } finally {
      sync();
      const region = document.getElementById("notify-status");
      if (region) {
        region.textContent =
          supported() && Notification.permission === "granted"
            ? "Notifications are on: new approvals show up even when this tab is in the background."
            : "Notifications are off (the browser did not allow them).";
      }
    }
  });
  sync();
  return button;
}

export function installNotifications() {
  const badge = document.getElementById("approval-count");
  const topbar = document.querySelector(".topbar");
  if (topbar) {
    const logout = document.getElementById("logout");
    topbar.insertBefore(enableButton(), logout || null);
    topbar.insertBefore(h("span", { id: "notify-status", class: "visually-hidden", role: "status" }), logout || null);
  }
  if (!badge) {
    return;
  }
  /** Approvals already notified (an event is delivered once, but a resync may repeat). */
  const notified = new Set();

  const notify = async (stored) => {
    const id = stored.approval_id;
    if (!id || notified.has(id) || !supported() || Notification.permission !== "granted") {
      return;
    }
    notified.add(id);
    const target = stored.preview?.target;
    let about = "";
    try {
      const task = await api("/api/tasks/" + encodeURIComponent(stored.task_id));
      about = untrustedPrompt(task) ? taskTitle(task) : task.prompt || "";
    } catch {
      // The call alone still says enough.
    }
    const notification = new Notification("PocketPilot: a call needs your decision", {
      body: `${stored.name}${target ? " " + target : ""}${about ? " — " + about : ""}`,
      tag: id,
    });
    notification.addEventListener("click", () => {
      window.focus();
      location.hash = "#/approvals/" + encodeURIComponent(id);
      notification.close();
    });
  };
  onAllEvents((stored) => {
    if (stored.type === "approval_required") {
      notify(stored);
    }
  });

  const observe = () => showCount(Number(badge.dataset.count || "0"));
  new MutationObserver(observe).observe(badge, { attributes: true, attributeFilter: ["data-count"], childList: true });
  // Titles set elsewhere (the login page, app.js) keep the count in front.
  new MutationObserver(() => {
    const count = Number(badge.dataset.count || "0");
    if (count > 0 && !document.title.startsWith(`(${count}) `) && !badge.hidden) {
      document.title = `(${count}) ${BASE_TITLE}`;
    }
  }).observe(document.querySelector("title"), { childList: true });
  // No request yet: before the login an API call would answer 401. The first count
  // app.js writes sets the baseline (approvals already pending are not notified).
  showCount(Number(badge.dataset.count || "0"));
}
