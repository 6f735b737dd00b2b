// #/preview?path=FILE&workspace=NAME: one workspace file, shown as what it is: Markdown
// rendered safely (markdown.js), CSV as a table, images through an <img> whose source
// is a blob URL of the bytes (fetched with the session; the download route itself stays
// `attachment` + `application/octet-stream`), other UTF-8 text as text. Anything else
// (binary, too large) is offered as a download.

import { hashLink, hashQuery, h, notice, replace } from "./dom.js";
import { query } from "./api.js";
import { baseName, formatSize, readText } from "./format.js";
import { renderMarkdown } from "./markdown.js";
import { parseCsv } from "./csv.js";
import { escapeInvisible, visibleCode } from "./visible.js";

/** Image types an <img> may show, by extension. */
const IMAGE_TYPES = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
  avif: "image/avif",
  bmp: "image/bmp",
  ico: "image/x-icon",
};
/** Larger files are not previewed (download them instead). */
const MAX_PREVIEW = 5 * 1024 * 1024;
const MAX_CSV_ROWS = 500;

function extension(path) {
  const match = /\.([^./]+)$/.exec(path);
  return match ? match[1].toLowerCase() : "";
}

function csvTable(text) {
  const rows = parseCsv(text);
  if (rows.length === 0) {
    return h("p", { class: "empty", text: "The table is empty." });
  }
  const [head, ...body] = rows;
  const shown = body.slice(0, MAX_CSV_ROWS);
  return [
    h("p", {
      class: "muted small",
      text: `${body.length} row${body.length === 1 ? "" : "s"}, ${head.length} column${head.length === 1 ? "" : "s"}${body.length > shown.length ? `; the first ${MAX_CSV_ROWS} shown` : ""}.`,
    }),
    h(
      "div",
      { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Table" },
      h(
        "table",
        { class: "result-table csv-table" },
        h("thead", {}, h("tr", {}, head.map((name) => h("th", { scope: "col", text: name })))),
        h("tbody", {}, shown.map((row) => h("tr", {}, head.map((_, index) => h("td", { text: row[index] ?? "" }))))),
      ),
    ),
  ];
}

export function renderPreview(container) {
  const params = hashQuery();
  const path = (params.get("path") || "").replace(/^\/+/, "");
  const workspace = params.get("workspace") || "";
  const name = baseName(path) || "(no file)";
  const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  const download = "/api/files/content" + query({ path, workspace });
  const body = h("div", { class: "preview-body" }, h("p", { class: "muted", text: "Loading…" }));
  const facts = h("p", { class: "muted small preview-facts" });
  let blobUrl = null;

  replace(
    container,
    h(
      "p",
      { class: "crumbs" },
      h("a", { href: hashLink("/files", { path: folder, workspace }), text: "← " + (folder ? escapeInvisible(folder) + "/" : "Files") }),
    ),
    h("h1", { class: "preview-title" }, visibleCode(name)),
    h(
      "div",
      { class: "toolbar" },
      facts,
      h("a", { href: download, download: name, class: "button small", text: "Download", "aria-label": "Download " + escapeInvisible(name) }),
    ),
    h("section", { class: "panel preview", "aria-label": "Preview of " + escapeInvisible(name) }, body),
  );

  const load = async () => {
    if (!path) {
      replace(body, notice("error", "No file named: open a file from the Files page."));
      return;
    }
    let response;
    try {
      response = await fetch(download, { credentials: "same-origin", referrerPolicy: "same-origin" });
    } catch {
      replace(body, notice("error", "Cannot reach the PocketPilot server (is `pocketpilot serve` still running?)"));
      return;
    }
    if (!response.ok) {
      let message = `the server answered ${response.status}`;
      try {
        const data = await response.json();
        message = data.error.message || message;
      } catch {
        // Keep the status line.
      }
      replace(body, notice("error", (response.status === 404 ? "Not found: " : "Cannot open the file: ") + message));
      return;
    }
    const size = Number(response.headers.get("content-length") || "0");
    if (size > MAX_PREVIEW) {
      facts.textContent = formatSize(size);
      replace(body, notice("info", `This file is ${formatSize(size)}: too large to preview here. Download it instead.`));
      return;
    }
    const bytes = await response.arrayBuffer();
    facts.textContent = formatSize(bytes.byteLength);
    const ext = extension(path);
    if (IMAGE_TYPES[ext]) {
      blobUrl = URL.createObjectURL(new Blob([bytes], { type: IMAGE_TYPES[ext] }));
      const image = h("img", { class: "preview-image", src: blobUrl, alt: `Image ${escapeInvisible(name)}` });
      image.addEventListener("error", () => replace(body, notice("warn", "This image cannot be shown by the browser.")));
      replace(body, image);
      return;
    }
    const text = readText(bytes);
    if (text === null) {
      replace(body, notice("info", "A binary file (or too large to show as text): download it to open it."));
      return;
    }
    const lines = text === "" ? 0 : text.replace(/\n$/, "").split("\n").length;
    facts.textContent = `${formatSize(bytes.byteLength)} · ${lines} line${lines === 1 ? "" : "s"}`;
    if (ext === "md" || ext === "markdown") {
      const source = h("details", { class: "long" }, h("summary", { text: "Markdown source" }), h("pre", { class: "content", text }));
      replace(body, renderMarkdown(text), source);
    } else if (ext === "csv") {
      replace(body, csvTable(text));
    } else {
      replace(body, text === "" ? h("p", { class: "empty", text: "The file is empty." }) : h("pre", { class: "content preview-text", text }));
    }
  };
  load();
  return {
    cleanup() {
      if (blobUrl) {
        URL.revokeObjectURL(blobUrl);
      }
    },
  };
}
