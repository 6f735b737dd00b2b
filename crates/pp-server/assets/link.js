// The approval-link page (`/d/{token}`, docs/remote.md): the one card a link decides,
// drawn by the console's card component, with Approve / Reject and nothing else. No
// login: the token in the URL is read from the path, sent only to this server's two link
// routes, and never stored. Reading the page decides nothing; only a button does.

import { api } from "./api.js";
import { approvalCard } from "./card.js";
import { formatTime, h, notice, replace } from "./dom.js";

const token = decodeURIComponent(location.pathname.replace(/^\/d\//, "").split("/")[0] || "");
const base = "/api/links/" + encodeURIComponent(token);
const statusBox = document.getElementById("link-status");
const cardBox = document.getElementById("link-card");

/** "Open the console": the one way on once the link no longer decides. */
function consoleLink() {
  return h("p", {}, h("a", { class: "button", href: "/#/approvals", text: "Open the console" }));
}

/** Why the link no longer decides (410), changed (409) or may not (403), and the way on. */
function ended(error) {
  const words = {
    gone: "This link no longer decides anything.",
    changed_since_seen: "The file changed after this link was made. Nothing ran, and this link no longer works.",
    not_remotely_approvable: "This call cannot be approved through a link.",
    forbidden: "You may no longer decide this approval through this link.",
    not_found: "This link is not valid.",
  }[error.code] || "The decision was not recorded.";
  const keep = error.code === "not_remotely_approvable";
  replace(
    statusBox,
    h("p", { class: "notice notice-" + (keep ? "warn" : "error") + " link-ended", dataset: { code: error.code || "" } }, words + " " + (error.message || "")),
    keep ? null : consoleLink(),
  );
  if (!keep && error.code !== "changed_since_seen") {
    replace(cardBox);
  }
}

async function load() {
  let view;
  try {
    view = await api(base);
  } catch (error) {
    ended(error);
    return;
  }
  const approvable = view.approvable && !view.changed_since_link;
  const notes = [h("p", { class: "muted small link-expiry", text: `This link works once, until ${formatTime(view.expires_at)}.` })];
  if (view.changed_since_link) {
    notes.push(notice("warn", "The file changed after this link was made: this link can only reject it. To approve it as it is now, open the console."));
    notes.push(consoleLink());
  } else if (!view.approvable) {
    notes.push(notice("info", view.approve_refusal || "This call cannot be approved through a link: approve it in the console or the terminal."));
  }
  replace(statusBox, notes);
  const card = approvalCard(view.approval, {
    linkToTask: false,
    focusNext: false,
    remote: {
      approvable,
      resolve: (body) => api(base + "/resolve", { method: "POST", body }),
      ended,
    },
  });
  replace(cardBox, card.element);
}

load();
