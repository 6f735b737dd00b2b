// #/files?path=DIR&workspace=NAME: browse a workspace, preview (file names link to
// #/preview), download, upload (drag and drop or the file picker; over an existing file
// the server answers 409 `exists`, and the page shows the diff and asks first). This is the operator's road (SPEC §1.6): no approval card, but
// the workspace guard still applies and every upload and download is audited.

import { api, query } from "./api.js";
import { h, hashLink, hashQuery, notice, replace, timeElement } from "./dom.js";
import { escapeInvisible, visibleCode } from "./visible.js";
import { fillWorkspaces } from "./tasks.js";
import { renderDiff, unifiedDiff } from "./diff.js";
import { baseName, formatSize, previewHref, readText } from "./format.js";

/** The message for a failed files request; guard refusals name the rule plainly. */
function explain(error) {
  if (error.status === 403 && error.code === "forbidden") {
    return "Refused by the workspace guard: " + error.message;
  }
  if (error.status === 404) {
    return "Not found: " + error.message;
  }
  if (error.status === 413) {
    return "Too large: " + error.message;
  }
  return error.message;
}

export function renderFiles(container) {
  const params = hashQuery();
  const dir = (params.get("path") || "").replace(/^\/+|\/+$/g, "");
  const workspaceName = params.get("workspace") || "";
  const link = (path, workspace = workspaceName) => hashLink("/files", { path, workspace });

  const workspaceSelect = h("select", { id: "files-workspace" });
  fillWorkspaces(workspaceSelect)
    .then((workspaces) => {
      if (workspaceName) {
        workspaceSelect.value = workspaceName;
      }
      workspaceSelect.closest(".field").hidden = workspaces.length < 2;
      root.textContent = workspaceSelect.value || root.textContent;
    })
    .catch(() => {
      // The listing below reports an unreachable server; the selector stays as it is.
    });
  workspaceSelect.addEventListener("change", () => {
    location.hash = link("", workspaceSelect.value);
  });

  const crumbs = h("nav", { class: "crumbs path-crumbs", "aria-label": "Folder" });
  const segments = dir ? dir.split("/") : [];
  const root = h("a", { href: link(""), text: workspaceName || "workspace" });
  crumbs.append(root);
  segments.forEach((segment, index) => {
    const path = segments.slice(0, index + 1).join("/");
    crumbs.append(h("span", { class: "sep", "aria-hidden": "true", text: " / " }));
    if (index === segments.length - 1) {
      crumbs.append(h("span", { "aria-current": "page" }, visibleCode(segment)));
    } else {
      crumbs.append(h("a", { href: link(path) }, visibleCode(segment)));
    }
  });

  const listing = h("div", { class: "file-list", "aria-live": "polite" }, h("p", { class: "muted", text: "Loading…" }));
  const uploadStatus = h("div", { class: "upload-status", "aria-live": "polite" });

  const load = async () => {
    let data;
    try {
      data = await api("/api/files" + query({ path: dir, workspace: workspaceName }));
    } catch (error) {
      replace(listing, notice("error", explain(error)));
      return;
    }
    const entries = [...data.entries].sort((a, b) => {
      const dirA = a.kind === "dir" ? 0 : 1;
      const dirB = b.kind === "dir" ? 0 : 1;
      return dirA - dirB || a.path.localeCompare(b.path);
    });
    const rows = [];
    if (dir) {
      const parent = segments.slice(0, -1).join("/");
      rows.push(
        h(
          "tr",
          {},
          h("td", { "data-label": "Name" }, h("a", { href: link(parent), class: "dir", text: "↑ Parent folder" })),
          h("td", { "data-label": "Size" }),
          h("td", { "data-label": "Modified" }),
          h("td", { "data-label": "" }),
        ),
      );
    }
    for (const entry of entries) {
      const name = baseName(entry.path);
      const isDir = entry.kind === "dir";
      const download = "/api/files/content" + query({ path: entry.path, workspace: workspaceName });
      rows.push(
        h(
          "tr",
          { dataset: { path: entry.path, kind: entry.kind } },
          h(
            "td",
            { "data-label": "Name" },
            isDir
              ? h("a", { href: link(entry.path), class: "dir" }, visibleCode(name), "/")
              : entry.kind === "file"
                ? h("a", { href: previewHref(entry.path, workspaceName), class: "file-name file", "aria-label": "Preview " + escapeInvisible(name) }, visibleCode(name))
                : h("span", { class: "file-name " + entry.kind }, visibleCode(name)),
          ),
          h("td", { "data-label": "Size", text: isDir ? "" : formatSize(entry.size) }),
          h("td", { "data-label": "Modified" }, entry.modified_at ? timeElement(entry.modified_at) : ""),
          h(
            "td",
            { "data-label": "" },
            entry.kind === "file"
              ? h("a", { href: download, download: name, class: "button small", text: "Download", "aria-label": "Download " + escapeInvisible(name) })
              : null,
          ),
        ),
      );
    }
    replace(
      listing,
      entries.length === 0 ? h("p", { class: "empty", text: "This folder is empty." }) : null,
      rows.length
        ? h(
            "table",
            { class: "table responsive files" },
            h("thead", {}, h("tr", {}, h("th", { text: "Name" }), h("th", { text: "Size" }), h("th", { text: "Modified" }), h("th", { text: "" }))),
            h("tbody", {}, rows),
          )
        : null,
      data.truncated ? notice("warn", "Only the first entries are shown.") : null,
    );
  };

  /** Sends one file; `overwrite` only after the person confirmed the replacement. */
  const send = (target, file, overwrite) =>
    api("/api/files/content" + query({ path: target, workspace: workspaceName, overwrite: overwrite ? "true" : "" }), {
      method: "PUT",
      raw: file,
    });

  const uploaded = (line, result) =>
    line.replaceWith(notice("ok", `${result.created ? "Uploaded" : "Replaced"} ${result.path} (${formatSize(result.size)}).`));

  /**
   * The file exists: show what would change (text files) and ask "Replace?". Resolves
   * when the person decided.
   */
  const askReplace = async (target, file, line) => {
    const box = h("div", { class: "subpanel replace-confirm", role: "group", "aria-label": "Replace " + escapeInvisible(target) + "?" });
    line.replaceWith(box);
    replace(box, h("p", { class: "muted", text: `Comparing ${target} with the new file…` }));
    let comparison = null;
    try {
      const current = await fetch("/api/files/content" + query({ path: target, workspace: workspaceName }), {
        credentials: "same-origin",
        referrerPolicy: "same-origin",
      });
      if (current.ok) {
        const [before, after] = await Promise.all([readText(await current.arrayBuffer()), readText(await file.arrayBuffer())]);
        if (before !== null && after !== null) {
          comparison =
            before === after
              ? notice("info", "The new file has exactly the same content.")
              : unifiedDiff(before, after, "a/" + target, "b/" + target);
        }
      }
    } catch (error) {
      comparison = notice("warn", "Cannot compare: " + error.message);
    }
    return new Promise((resolve) => {
      const yes = h("button", { type: "button", class: "button danger confirm-replace", text: "Replace" });
      const no = h("button", { type: "button", class: "button ghost", text: "Keep the current file" });
      replace(
        box,
        h("p", {}, h("strong", { text: `${target} already exists. Replace it?` })),
        comparison === null
          ? h("p", { class: "muted small", text: "Not a text file: no line comparison." })
          : typeof comparison === "string"
            ? [h("p", { class: "muted small", text: "What changes (the file now → your upload):" }), renderDiff(comparison)]
            : comparison,
        h("div", { class: "button-row" }, yes, no),
      );
      yes.addEventListener("click", async () => {
        yes.disabled = true;
        no.disabled = true;
        const status = notice("info", `Replacing ${target}…`);
        box.replaceWith(status);
        try {
          uploaded(status, await send(target, file, true));
        } catch (error) {
          status.replaceWith(notice("error", `${target} was not replaced. ${explain(error)}`));
        }
        resolve(undefined);
      });
      no.addEventListener("click", () => {
        box.replaceWith(notice("info", `${target} was kept as it is; nothing uploaded.`));
        resolve(undefined);
      });
      yes.focus();
    });
  };

  const upload = async (files) => {
    const list = [...files];
    if (list.length === 0) {
      return;
    }
    replace(uploadStatus);
    for (const file of list) {
      const target = dir ? `${dir}/${file.name}` : file.name;
      const line = notice("info", `Uploading ${target}…`);
      uploadStatus.append(line);
      try {
        uploaded(line, await send(target, file, false));
      } catch (error) {
        if (error.status === 409 && error.code === "exists") {
          await askReplace(target, file, line);
        } else {
          line.replaceWith(notice("error", `${target} was not uploaded. ${explain(error)}`));
        }
      }
    }
    load();
  };

  const fileInput = h("input", { id: "upload-input", type: "file", multiple: true, class: "visually-hidden" });
  fileInput.addEventListener("change", () => {
    upload(fileInput.files).finally(() => {
      fileInput.value = "";
    });
  });
  const dropZone = h(
    "div",
    { class: "drop-zone" },
    h("p", {}, "Drop files here to upload them to ", h("code", { text: dir ? dir + "/" : "the workspace root" }), ", or "),
    h("label", { for: "upload-input", class: "button", tabindex: "0", role: "button", text: "Choose files…" }),
    fileInput,
  );
  dropZone.querySelector("label").addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      fileInput.click();
    }
  });
  let depth = 0;
  dropZone.addEventListener("dragenter", (event) => {
    event.preventDefault();
    depth += 1;
    dropZone.classList.add("dragging");
  });
  dropZone.addEventListener("dragover", (event) => {
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  });
  dropZone.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) {
      dropZone.classList.remove("dragging");
    }
  });
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    depth = 0;
    dropZone.classList.remove("dragging");
    upload(event.dataTransfer.files);
  });

  replace(
    container,
    h(
      "div",
      { class: "section-head" },
      h("h1", { text: "Files" }),
      h("div", { class: "field inline" }, h("label", { for: "files-workspace", text: "Workspace" }), workspaceSelect),
    ),
    crumbs,
    h("section", { class: "panel" }, dropZone, uploadStatus, listing),
  );
  load();
  return {};
}
