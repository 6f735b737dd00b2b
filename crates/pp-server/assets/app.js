// The PocketPilot console: the shell (navigation, login page, live approval count) and
// the hash router. Each page lives in its own module and renders into <main>.
//
// Routes: #/tasks, #/tasks/ID, #/approvals, #/approvals/ID, #/changesets/ID, #/files, #/preview?path=,
// #/audit, #/chat, #/chat/ID, #/skills, #/skills/NAME, #/memory, #/mcp, #/schedules,
// #/channels.
// No inline scripts or styles anywhere: the Content-Security-Policy forbids them.

import { api, followEvents, onUnauthorized } from "./api.js";
import { debounce, h, replace } from "./dom.js";
import { renderTaskList } from "./tasks.js";
import { renderTask } from "./taskpage.js";
import { renderInbox, renderApproval } from "./approvals.js";
import { renderChangeset } from "./changeset.js";
import { renderFiles } from "./files.js";
import { renderPreview } from "./preview.js";
import { renderAudit } from "./audit.js";
import { renderChat, renderChatList } from "./chat.js";
import { renderSkills, renderSkill } from "./skills.js";
import { renderMemory } from "./memory.js";
import { renderMcp } from "./mcp.js";
import { renderSchedules } from "./schedules.js";
import { renderChannels } from "./channels.js";
import { installDecide } from "./keys.js";
import { loadMe } from "./me.js";
import { renderCodeSpans } from "./markdown.js";

const view = document.getElementById("view");
const nav = document.getElementById("nav");
const countBadge = document.getElementById("approval-count");
const connection = document.getElementById("connection");
const logoutButton = document.getElementById("logout");
const who = document.getElementById("who");

/**
 * The page on screen: `{ cleanup(), onEvent(stored), resync() }`, all optional.
 * `resync` runs when the all-tasks stream comes back after a drop (events may have been
 * missed while it was down).
 */
let page = null;
/** The all-tasks event stream (drives the approval count and live pages). */
let globalStream = null;
let loggedIn = false;

const ROUTES = [
  { pattern: /^\/tasks\/?$/, name: "tasks", render: renderTaskList },
  { pattern: /^\/tasks\/([^/?]+)$/, name: "tasks", render: renderTask },
  { pattern: /^\/approvals\/?$/, name: "approvals", render: renderInbox },
  { pattern: /^\/approvals\/([^/?]+)$/, name: "approvals", render: renderApproval },
  { pattern: /^\/changesets\/([^/?]+)$/, name: "approvals", render: renderChangeset },
  { pattern: /^\/files\/?$/, name: "files", render: renderFiles },
  { pattern: /^\/preview\/?$/, name: "files", render: renderPreview },
  { pattern: /^\/audit\/?$/, name: "audit", render: renderAudit },
  { pattern: /^\/chat\/?$/, name: "chat", render: renderChatList },
  { pattern: /^\/chat\/([^/?]+)$/, name: "chat", render: renderChat },
  { pattern: /^\/skills\/?$/, name: "skills", render: renderSkills },
  { pattern: /^\/skills\/([^/?]+)$/, name: "skills", render: renderSkill },
  { pattern: /^\/memory\/?$/, name: "memory", render: renderMemory },
  { pattern: /^\/mcp\/?$/, name: "mcp", render: renderMcp },
  { pattern: /^\/schedules\/?$/, name: "schedules", render: renderSchedules },
  { pattern: /^\/channels\/?$/, name: "channels", render: renderChannels },
];

/** Events after which the number of pending approvals may have changed. */
const COUNT_EVENTS = new Set([
  "approval_required",
  "approval_resolved",
  "task_cancelled",
  "task_completed",
  "task_failed",
  "task_interrupted",
  "task_retried",
]);

const context = {
  refreshCount: debounce(refreshCount, 100),
};

async function refreshCount() {
  if (!loggedIn) {
    return;
  }
  try {
    // The count alone (issue 27): no card is read or sent for the badge.
    const data = await api("/api/approvals/count");
    const count = data.pending;
    countBadge.textContent = String(count);
    countBadge.dataset.count = String(count);
    countBadge.hidden = count === 0;
    countBadge.setAttribute("aria-label", `${count} pending`);
    document.title = count > 0 ? `(${count}) PocketPilot` : "PocketPilot";
  } catch {
    // A 401 already switched to the login page; anything else is retried on the next event.
  }
}

function setConnection(status) {
  if (status === "live") {
    connection.hidden = true;
    connection.textContent = "";
  } else {
    connection.hidden = false;
    connection.textContent = "Reconnecting…";
  }
}

function startGlobalStream() {
  if (globalStream) {
    return;
  }
  let dropped = false;
  globalStream = followEvents("/api/events", {
    onStatus(status) {
      setConnection(status);
      if (status !== "live") {
        dropped = true;
      } else if (dropped) {
        // Anything could have happened while the stream was down.
        dropped = false;
        context.refreshCount();
        if (page && page.resync) {
          page.resync();
        }
      }
    },
    onEvent(stored) {
      if (COUNT_EVENTS.has(stored.type)) {
        context.refreshCount();
      }
      if (page && page.onEvent) {
        page.onEvent(stored);
      }
    },
  });
}

function stopGlobalStream() {
  if (globalStream) {
    globalStream.close();
    globalStream = null;
  }
}

function leavePage() {
  if (page && page.cleanup) {
    page.cleanup();
  }
  page = null;
}

/**
 * Whether this server is in team mode, as far as the console knows: a 401 says so ("team
 * mode: …"), and so does a logged-in user's name. Team mode logs in with the user's own
 * token, not with the link `pocketpilot serve` prints.
 */
let teamServer = false;

/** The login page's steps for a team user (team mode). */
function teamLoginSteps() {
  return [
    h("p", {
      text: "This browser is not logged in, or its session has expired. This is a team server: you log in with your own user token.",
    }),
    h(
      "ol",
      {},
      h(
        "li",
        {},
        "Find your user token (",
        h("code", { text: "ppu_…" }),
        "): ",
        h("code", { text: "pocketpilot users add" }),
        " or ",
        h("code", { text: "pocketpilot users rotate" }),
        " printed it once, for you.",
      ),
      h(
        "li",
        {},
        "Open ",
        h("code", { class: "nowrap-ok", text: "/login?token=<your user token>" }),
        " on this server in this browser.",
      ),
    ),
    h("p", {
      class: "muted",
      text: "Lost it, or it stopped working (rotated, or your user was removed)? Ask an owner: `pocketpilot users rotate NAME` prints a new one.",
    }),
  ];
}

/** The page for a browser without a (valid) session; `error` is the 401, if any. */
function showLogin(error) {
  if (error && typeof error.message === "string" && error.message.startsWith("team mode:")) {
    teamServer = true;
  }
  loggedIn = false;
  leavePage();
  stopGlobalStream();
  nav.hidden = true;
  menuButton.hidden = true;
  logoutButton.hidden = true;
  connection.hidden = true;
  document.title = "PocketPilot: log in";
  replace(
    view,
    h(
      "section",
      { class: "login panel", "aria-labelledby": "login-title" },
      h("h1", { id: "login-title", text: "Log in to PocketPilot" }),
      ...(teamServer
        ? teamLoginSteps()
        : [
            h("p", {
              text: "This browser is not logged in, or its session has expired. The console opens with a login link that only the person at this computer can see.",
            }),
            h(
              "ol",
              {},
              h("li", {}, "In a terminal, run ", h("code", { text: "pocketpilot serve" }), "."),
              h(
                "li",
                {},
                "It prints a line like ",
                h("code", { class: "nowrap-ok", text: "PocketPilot console: http://127.0.0.1:PORT/login?token=…" }),
                ". Open that link in this browser.",
              ),
            ),
            h("p", {
              class: "muted",
              text: "The server prints the link once, when it starts: scroll back in its terminal, or stop and start it again. After `pocketpilot token rotate`, restart the server and use the new link.",
            }),
          ]),
      h("button", { type: "button", class: "button", onclick: start, text: "I have logged in — try again" }),
    ),
  );
}

async function logout() {
  try {
    await fetch("/logout", {
      method: "POST",
      credentials: "same-origin",
      referrerPolicy: "same-origin",
    });
  } finally {
    showLogin();
  }
}

function markNavigation(name) {
  for (const link of nav.querySelectorAll("a[data-route]")) {
    if (link.dataset.route === name) {
      link.setAttribute("aria-current", "page");
    } else {
      link.removeAttribute("aria-current");
    }
  }
}

// Code spans in the model's words: every message and final answer that a page shows
// (timeline, chat) gets its `backticks` as <code>, built with DOM APIs (markdown.js).
const CODE_SPAN_TEXT = ".message-text, .final-text";
new MutationObserver(() => {
  for (const element of view.querySelectorAll(CODE_SPAN_TEXT)) {
    if (!element.hasAttribute("data-code-spans")) {
      element.setAttribute("data-code-spans", "");
      renderCodeSpans(element);
    }
  }
}).observe(view, { childList: true, subtree: true });

// The phone's top bar: one row (the brand, Approvals with its count, "Menu"); the other
// sections, notifications and logging out open under "Menu". Wider windows show it all.
const topbar = document.querySelector(".topbar");
const menuButton = h("button", {
  type: "button",
  id: "nav-toggle",
  class: "nav-toggle",
  hidden: true,
  "aria-expanded": "false",
  "aria-controls": "nav",
  text: "Menu",
});
const setMenu = (open) => {
  topbar.classList.toggle("nav-open", open);
  menuButton.setAttribute("aria-expanded", String(open));
  menuButton.textContent = open ? "Close menu" : "Menu";
};
menuButton.addEventListener("click", () => setMenu(!topbar.classList.contains("nav-open")));
topbar.append(menuButton);

/** Stops waiting for the new page's heading (see `focusHeading`). */
let stopFocusWatch = () => {};

/**
 * Moves focus to the page's first heading once it is on screen (pages render their
 * heading after a request), so a screen reader starts at the new page, not at <body>.
 */
function focusHeading() {
  stopFocusWatch();
  const tryFocus = () => {
    const heading = view.querySelector("h1");
    if (!heading) {
      return false;
    }
    if (!heading.hasAttribute("tabindex")) {
      heading.setAttribute("tabindex", "-1");
    }
    heading.focus({ preventScroll: true });
    return true;
  };
  if (tryFocus()) {
    return;
  }
  const observer = new MutationObserver(() => {
    if (tryFocus()) {
      stopFocusWatch();
    }
  });
  const timer = setTimeout(() => stopFocusWatch(), 10000);
  stopFocusWatch = () => {
    observer.disconnect();
    clearTimeout(timer);
    stopFocusWatch = () => {};
  };
  observer.observe(view, { childList: true, subtree: true });
}

function route() {
  if (!loggedIn) {
    return;
  }
  const hash = location.hash.replace(/^#/, "");
  const path = hash.split("?")[0];
  if (path === "" || path === "/") {
    location.replace("#/tasks");
    return;
  }
  leavePage();
  setMenu(false);
  const match = ROUTES.map((candidate) => ({ candidate, found: candidate.pattern.exec(path) })).find(
    ({ found }) => found,
  );
  if (!match) {
    markNavigation(null);
    replace(
      view,
      h("h1", { text: "Page not found" }),
      h("p", {}, "There is no page at ", h("code", { text: hash }), ". ", h("a", { href: "#/tasks", text: "Go to the tasks" }), "."),
    );
    focusHeading();
    return;
  }
  markNavigation(match.candidate.name);
  const container = h("div", { class: "page page-" + match.candidate.name });
  replace(view, container);
  const param = match.found[1] ? decodeURIComponent(match.found[1]) : null;
  page = match.candidate.render(container, param, context) || null;
  focusHeading();
}

/** The next automatic try while the server cannot be reached. */
let startTimer = null;

async function start() {
  clearTimeout(startTimer);
  try {
    await api("/api/workspaces");
  } catch (error) {
    if (error.status !== 401) {
      replace(
        view,
        h("h1", { tabindex: "-1", text: "Cannot reach PocketPilot" }),
        h("p", { class: "notice notice-error", role: "alert", text: error.message }),
        h("p", { class: "muted", text: "Trying again every few seconds; this page recovers by itself when the server is back." }),
        h("button", { type: "button", class: "button", onclick: start, text: "Try again now" }),
      );
      startTimer = setTimeout(start, 3000);
    }
    return;
  }
  loggedIn = true;
  // Team mode: show who is logged in (single-user mode has no user name).
  const me = await loadMe();
  who.textContent = me.user ? `${me.user} (${me.role})` : "";
  if (me.user) {
    teamServer = true;
  }
  who.hidden = !me.user;
  nav.hidden = false;
  menuButton.hidden = false;
  logoutButton.hidden = false;
  startGlobalStream();
  refreshCount();
  route();
}

onUnauthorized((error) => {
  if (loggedIn || !view.querySelector(".login")) {
    showLogin(error);
  }
});
installDecide();
logoutButton.addEventListener("click", logout);
window.addEventListener("hashchange", route);
start();
