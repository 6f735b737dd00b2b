// Tool results in the timeline. Most tools answer with text, shown as it is. The document
// tools answer with JSON: a document's text (`extract_document`), a table
// (`analyze_table`) or invoice records with findings (`extract_invoice`). Those are shown
// as what they are (the text, a table, the findings first), with the whole JSON one click
// away, so a person can check what the model was told without reading a JSON blob.

import { block, h, prettyJson } from "./dom.js";

/** The most table rows drawn; the rest stay in the JSON block. */
const MAX_ROWS = 50;

/** The body of a `tool_result` row for `content` (the tool's output text). */
export function resultBody(content) {
  const value = parseObject(content);
  if (!value) {
    return block(content, "Output", "output");
  }
  if (typeof value.text === "string" && typeof value.format === "string") {
    return documentBody(value);
  }
  if (Array.isArray(value.columns) && Array.isArray(value.rows)) {
    return tableBody(value);
  }
  const records = invoiceRecords(value);
  if (records) {
    return invoiceBody(value, records);
  }
  return block(prettyJson(value), "Output", "json");
}

function parseObject(content) {
  if (typeof content !== "string" || !content.trimStart().startsWith("{")) {
    return null;
  }
  try {
    const value = JSON.parse(content);
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function whole(value) {
  return h(
    "details",
    { class: "long result-json" },
    h("summary", { text: "The whole result (JSON)" }),
    h("pre", { class: "json", text: prettyJson(value) }),
  );
}

function facts(...parts) {
  return h("p", { class: "muted small result-facts", text: parts.filter(Boolean).join(" · ") });
}

function documentBody(doc) {
  const pages = Number.isInteger(doc.pages) ? `${doc.pages} page${doc.pages === 1 ? "" : "s"}` : null;
  return [
    facts(
      String(doc.format).toUpperCase(),
      pages,
      doc.title ? `title: ${doc.title}` : null,
      doc.encoding ? `encoding: ${doc.encoding}` : null,
      doc.truncated ? "truncated" : null,
    ),
    block(doc.text, "Text", "output"),
  ];
}

function cellText(cell) {
  if (cell === null || cell === undefined) {
    return "";
  }
  return typeof cell === "object" ? JSON.stringify(cell) : String(cell);
}

function tableBody(table) {
  const columns = table.columns.map((column) => (typeof column === "object" ? column.name ?? JSON.stringify(column) : String(column)));
  const shown = table.rows.slice(0, MAX_ROWS);
  const more = table.rows.length - shown.length;
  const grid = h(
    "table",
    { class: "result-table" },
    h("caption", { class: "visually-hidden", text: "Result rows" }),
    h("thead", {}, h("tr", {}, columns.map((name) => h("th", { scope: "col", text: name })))),
    h(
      "tbody",
      {},
      shown.map((row) =>
        h("tr", {}, (Array.isArray(row) ? row : columns.map((name) => row?.[name])).map((cell) => h("td", { text: cellText(cell) }))),
      ),
    ),
  );
  return [
    facts(
      `${table.rows.length} row${table.rows.length === 1 ? "" : "s"}`,
      more > 0 ? `the first ${MAX_ROWS} shown` : null,
      table.truncated ? "truncated by the tool" : null,
    ),
    // A wide table scrolls inside its own box (reachable by keyboard), never the page.
    h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Result table" }, grid),
    whole(table),
  ];
}

function invoiceRecords(value) {
  // A folder's answer (`extract_invoice` on a folder): `invoices` with the totals.
  if (Array.isArray(value.invoices) && value.overall) {
    return value.invoices;
  }
  if (Array.isArray(value.findings) && ("number" in value || "total" in value || "kind" in value)) {
    return [value];
  }
  return null;
}

function findingItems(findings) {
  return findings.map((finding) =>
    h(
      "li",
      {},
      h("span", { class: "badge rule", text: finding.code || "finding" }),
      " ",
      h("span", { text: [finding.file, finding.message].filter(Boolean).join(": ") }),
    ),
  );
}

function invoiceBody(value, records) {
  // A folder's answer lists all findings (those across files included); a single
  // invoice carries its own.
  const findings =
    Array.isArray(value.invoices) && Array.isArray(value.findings)
      ? value.findings
      : records.flatMap((record) => (record.findings || []).map((finding) => ({ file: record.file, ...finding })));
  const total = (record) => (record.total === undefined || record.total === null ? null : `total ${record.total}`);
  return [
    facts(
      `${records.length} invoice${records.length === 1 ? "" : "s"}`,
      findings.length ? `${findings.length} finding${findings.length === 1 ? "" : "s"}` : "no findings",
    ),
    h(
      "ul",
      { class: "result-records" },
      records.map((record) =>
        h("li", {
          text: [record.file, record.number, record.seller_name, record.issue_date, total(record)].filter(Boolean).join(" · "),
        }),
      ),
    ),
    findings.length ? h("ul", { class: "result-findings", "aria-label": "Findings" }, findingItems(findings)) : null,
    whole(value),
  ];
}
