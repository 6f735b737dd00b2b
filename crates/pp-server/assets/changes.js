// The "Changes on disk" panel of a task page: what the task's approved calls really did
// to the workspace, from the change log (`GET /api/tasks/ID/changes`), not from the
// model's words. Created / overwritten / edited / reverted files with their sizes, time
// and a link to the file, moved files as `old → new`, deleted files and created folders;
// calls whose effects PocketPilot cannot see are listed as such;
// a Revert button on each change that can still be undone (`POST /api/changes/ID/revert`,
// refused with the diff when the file changed since the agent wrote it).

import { api } from "./api.js";
import { debounce, h, notice, replace, timeElement } from "./dom.js";
import { renderDiff } from "./diff.js";
import { formatSize, previewHref } from "./format.js";
import { visibleCode } from "./visible.js";

const KIND_WORDS = {
  created: "created",
  overwritten: "overwritten",
  edited: "edited",
  moved: "moved",
  deleted: "deleted",
  folder_created: "folder created",
  reverted: "reverted",
  effects_unknown: "effects unknown to PocketPilot",
};

/** How a count of each kind reads in a task's summary ("2 moved", "1 folder created"). */
const COUNT_WORDS = {
  folder_created: (n) => (n === 1 ? "folder created" : "folders created"),
  effects_unknown: () => "unknown effects",
};

/** "2 created · 1 edited" from a task's `changes` counts; "" when there are none. */
export function countsText(counts) {
  if (!counts) {
    return "";
  }
  return Object.keys(KIND_WORDS)
    .filter((kind) => counts[kind] > 0)
    .map((kind) => `${counts[kind]} ${COUNT_WORDS[kind] ? COUNT_WORDS[kind](counts[kind]) : kind}`)
    .join(" · ");
}

/** What the Revert button is about to do, in words. */
export function revertPromptText(change) {
  switch (change.kind) {
    case "created":
      return `Revert removes ${change.path}, which this task created.`;
    case "moved":
      return `Revert moves ${change.path} back to ${change.from_path} (and puts back a file the move replaced).`;
    case "deleted":
      return `Revert restores ${change.path}, which this task deleted.`;
    case "folder_created":
      return `Revert removes the folder ${change.path} if it is still empty.`;
    default:
      return `Revert puts back the content ${change.path} had before this change.`;
  }
}

/** The message after a successful revert. */
function revertedText(change) {
  switch (change.kind) {
    case "moved":
      return `Reverted: ${change.path} is back at ${change.from_path}.`;
    case "deleted":
      return `Reverted: ${change.path} is restored.`;
    case "folder_created":
      return `Reverted: the folder ${change.path} is removed.`;
    default:
      return `Reverted: ${change.path} is back as it was before this change.`;
  }
}

/**
 * The change's path: a link to the file as it is now; a move as `old → new` (the old
 * path is gone, so only the new one is a link); a deleted file or a folder as plain
 * code; the tool for a call without a path.
 */
function pathOf(change, workspace) {
  if (!change.path) {
    return h("code", { text: change.tool });
  }
  const link = () => h("a", { class: "change-path", href: change.root === "memory" ? "#/memory" : previewHref(change.path, workspace) }, visibleCode(change.path));
  switch (change.kind) {
    case "moved":
      return h(
        "span",
        { class: "change-move" },
        change.from_path ? [visibleCode(change.from_path, "change-from"), h("span", { class: "move-arrow", "aria-label": "moved to", text: " → " })] : null,
        link(),
      );
    case "deleted":
    case "folder_created":
      return visibleCode(change.path, "change-path");
    default:
      return link();
  }
}

/**
 * Mounts the panel in `container` for task `taskId`. Returns `{ refresh(), cleanup() }`;
 * `refresh` is debounced (call it on every event of the task).
 */
export function changesPanel(container, taskId) {
  const list = h("ul", { class: "changes-list", "aria-live": "polite" });
  const status = h("div", { class: "changes-status" }, h("p", { class: "muted", text: "Loading the change log…" }));
  let workspace = "";

  /**
   * The status box of a change's row as it is on screen now (a live refresh rebuilds the
   * rows and moves the box into the new one).
   */
  const resultBox = (change) => {
    const box = [...list.querySelectorAll("li.change")].find((item) => item.dataset.changeId === change.id)?.querySelector(".change-result");
    return box || h("div");
  };

  const revert = async (change, button) => {
    button.disabled = true;
    replace(resultBox(change), notice("info", "Reverting…"));
    try {
      await api(`/api/changes/${encodeURIComponent(change.id)}/revert`, { method: "POST" });
      replace(resultBox(change), notice("ok", revertedText(change)));
      refresh();
    } catch (error) {
      button.disabled = false;
      if (error.status === 409 && error.code === "changed_since") {
        const diff = error.body && typeof error.body.diff === "string" ? error.body.diff : "";
        replace(
          resultBox(change),
          notice("error", "Not reverted: " + error.message),
          diff ? [h("p", { class: "muted small", text: "What changed since the agent's write (agent's version → the file now):" }), renderDiff(diff)] : null,
        );
      } else {
        replace(resultBox(change), notice("error", "Not reverted: " + error.message));
      }
    }
  };

  const confirmRevert = (change, button) => {
    const result = resultBox(change);
    const yes = h("button", { type: "button", class: "button danger small confirm-revert", text: "Revert now" });
    const no = h("button", { type: "button", class: "button ghost small", text: "Keep it" });
    yes.addEventListener("click", () => revert(change, button));
    no.addEventListener("click", () => {
      replace(resultBox(change));
      button.focus();
    });
    replace(
      result,
      h(
        "div",
        { class: "subpanel revert-confirm" },
        h("p", { text: revertPromptText(change) }),
        h("div", { class: "button-row" }, yes, no),
      ),
    );
    yes.focus();
  };

  const row = (change, byId) => {
    const kind = change.kind;
    const revertedBy = change.reverted_by ? byId.get(change.reverted_by) : null;
    const canRevert = change.revertible && !change.reverted_by && kind !== "reverted" && kind !== "effects_unknown";
    const button = canRevert ? h("button", { type: "button", class: "button small revert", text: "Revert" }) : null;
    const item = h(
      "li",
      { class: "change change-" + kind, dataset: { changeId: change.id, kind } },
      h(
        "div",
        { class: "change-head" },
        h("span", { class: "badge change-kind kind-" + kind, text: KIND_WORDS[kind] || kind }),
        " ",
        pathOf(change, workspace),
        change.bytes !== null && change.bytes !== undefined ? h("span", { class: "muted small", text: ` ${formatSize(change.bytes)}` }) : null,
        h("span", { class: "muted small" }, " · ", timeElement(change.at), change.path ? ` · ${change.tool}` : ""),
        button,
      ),
      change.reverted_by
        ? h("p", { class: "muted small", text: `Reverted${revertedBy ? " at " + new Date(revertedBy.at).toLocaleTimeString() : ""} (${change.reverted_by}).` })
        : null,
      !canRevert && !change.reverted_by && change.revertible === false && kind !== "reverted" && kind !== "effects_unknown"
        ? h("p", { class: "muted small", text: "Cannot be undone: nothing was kept (too large)." })
        : null,
      kind === "effects_unknown"
        ? h("p", {
            class: "muted small",
            text: change.path
              ? "The command changed this in a way no revert covers (a mode, a link, a special file, or content beyond the snapshot bound): check it yourself."
              : "This tool has no file snapshot: check its effects yourself.",
          })
        : null,
      h("div", { class: "change-result", role: "status" }),
    );
    if (button) {
      button.addEventListener("click", () => confirmRevert(change, button));
    }
    return item;
  };

  const load = async () => {
    let data;
    try {
      if (!workspace) {
        const task = await api("/api/tasks/" + encodeURIComponent(taskId));
        workspace = task.workspace || "";
      }
      data = await api(`/api/tasks/${encodeURIComponent(taskId)}/changes`);
    } catch (error) {
      replace(status, notice(error.status === 404 ? "info" : "warn", error.status === 404 ? "No change log for this task on this server." : "Cannot load the change log: " + error.message));
      return;
    }
    const changes = data.changes || [];
    const byId = new Map(changes.map((change) => [change.id, change]));
    // Rows already showing a revert's result keep it.
    const kept = new Map([...list.querySelectorAll("li.change")].map((item) => [item.dataset.changeId, item.querySelector(".change-result")]));
    replace(list, changes.map((change) => row(change, byId)));
    for (const item of list.querySelectorAll("li.change")) {
      const old = kept.get(item.dataset.changeId);
      if (old && old.childElementCount) {
        item.querySelector(".change-result").replaceWith(old);
      }
    }
    replace(status, changes.length === 0 ? h("p", { class: "empty", text: "Nothing changed on disk (yet)." }) : null);
  };
  const refresh = debounce(load, 250);

  replace(
    container,
    h(
      "section",
      { class: "panel changes", "aria-labelledby": "changes-title" },
      h("h2", { id: "changes-title", text: "Changes on disk" }),
      h("p", { class: "muted small", text: "From PocketPilot's own change log: what the approved calls wrote, not what the model says." }),
      status,
      list,
    ),
  );
  load();
  return { refresh, cleanup: () => refresh.cancel() };
}
