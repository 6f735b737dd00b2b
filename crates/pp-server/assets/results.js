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

// ---- The final answer's claims, checked against the change log (issue 27). ----

/** Words that say a file was written (the claims checked). */
const CLAIM_VERBS =
  /\b(wrote|written|write|writing|created?|creating|updated?|updating|saved?|saving|edited|modified|changed|added|generated|produced|moved|renamed|deleted|removed)\b/i;
/** A sentence that says something was not done claims nothing. */
const NEGATION = /\b(not|never|cannot|can't|couldn't|didn't|wasn't|weren't|won't|unable|failed|without)\b/i;
/** A path-like word: a name with an extension, perhaps under folders. */
const PATH_WORD = /(?:^|[\s"'(\[])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9})(?=$|[\s"'),:;!?\]]|\.(?:\s|$))/g;

/** "./a/b.md" or "/a/b.md" → "a/b.md". */
function normalise(path) {
  return path.trim().replace(/^\.?\/+/, "").replace(/\/+$/, "");
}

/**
 * The files the text says were written, created, updated (…): `{path, sentence}` for
 * each path named in a sentence with such a verb and no negation.
 * @param {string} text
 * @returns {{ path: string, sentence: string }[]}
 */
export function extractClaims(text) {
  const claims = [];
  const seen = new Set();
  for (const sentence of String(text || "").split(/(?<=[.!?])\s+|\n+/)) {
    if (!CLAIM_VERBS.test(sentence) || NEGATION.test(sentence)) {
      continue;
    }
    const paths = [];
    for (const match of sentence.matchAll(/`([^`\n]+)`/g)) {
      const inner = match[1].trim();
      if (/^[\w./-]+$/.test(inner) && /[./]/.test(inner) && !/^\d[\d.]*$/.test(inner)) {
        paths.push(inner);
      }
    }
    const bare = sentence.replace(/`[^`\n]*`/g, " ").replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, " ");
    for (const match of bare.matchAll(PATH_WORD)) {
      paths.push(match[1]);
    }
    for (const raw of paths) {
      const path = normalise(raw);
      if (path && !seen.has(path)) {
        seen.add(path);
        claims.push({ path, sentence: sentence.trim() });
      }
    }
  }
  return claims;
}

/** Whether change-log path `logged` is the file a claim names as `claimed`. */
function samePath(logged, claimed) {
  if (!logged) {
    return false;
  }
  const a = normalise(logged);
  return a === claimed || a.endsWith("/" + claimed) || claimed.endsWith("/" + a);
}

/**
 * Each claim of `text` with the change of the task's change log that backs it (the
 * latest one to that path), or `change: null` when none does.
 * @param {string} text the final answer
 * @param {any[]} changes `GET /api/tasks/ID/changes` → `changes`
 */
export function checkClaims(text, changes) {
  return extractClaims(text).map((claim) => {
    const matching = (changes || []).filter((change) => samePath(change.path, claim.path) || samePath(change.from_path, claim.path));
    return { ...claim, change: matching.length ? matching[matching.length - 1] : null };
  });
}

const KIND_WORDS = {
  created: "created",
  overwritten: "overwritten",
  edited: "edited",
  reverted: "reverted",
  effects_unknown: "effects unknown",
  moved: "moved",
  deleted: "deleted",
  folder_created: "folder created",
};

/**
 * The check under a final answer: every file the answer says it wrote, with the change
 * that backs it, and a warning for each claim with none.
 * @param {ReturnType<typeof checkClaims>} checked
 */
export function claimsPanel(checked) {
  const missing = checked.filter((claim) => !claim.change);
  const head =
    checked.length === 0
      ? "Not verified: the answer names no file it changed. What really changed is under Changes on disk."
      : missing.length
        ? `${missing.length} of ${checked.length} file${checked.length === 1 ? "" : "s"} the answer says it wrote ${missing.length === 1 ? "has" : "have"} no matching change in the change log.`
        : `Checked: every file the answer says it wrote is in the change log (${checked.length}).`;
  return h(
    "div",
    {
      class: "claims-check" + (missing.length ? " claims-missing" : checked.length ? " claims-ok" : " claims-none"),
      role: "group",
      "aria-label": "The answer checked against the change log",
    },
    h("p", { class: "claims-head" }, h("strong", { text: missing.length ? "Unconfirmed claims. " : "Answer check. " }), head),
    checked.length
      ? h(
          "ul",
          { class: "claims" },
          checked.map((claim) =>
            h(
              "li",
              { class: "claim " + (claim.change ? "claim-ok" : "claim-unconfirmed"), dataset: { path: claim.path } },
              h("span", { class: "claim-mark", text: claim.change ? "Confirmed: " : "Not in the change log: " }),
              h("code", { text: claim.path }),
              claim.change
                ? h("span", { text: ` — ${KIND_WORDS[claim.change.kind] || claim.change.kind}${claim.change.path && normalise(claim.change.path) !== claim.path ? " as " + claim.change.path : ""}` })
                : h("span", { text: " — the answer says it was written, but the task recorded no change to it." }),
            ),
          ),
        )
      : null,
  );
}
