// End-to-end test of the document tools from the console: a task (served by `serve`, the
// scripted model) reads a Chinese PDF invoice with extract_document, groups a CSV with
// analyze_table and checks a folder of invoices with extract_invoice. None of them needs
// an approval (all `file:read`); the timeline shows what each one returned as what it is
// — the document's text, a table, the invoices and their findings — accessible (axe-core:
// no serious or critical violation) and usable at 390 px.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { ROOT, assertNoHorizontalScroll, axeViolations, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const INVOICES = path.join(ROOT, "crates", "pp-docs", "tests", "fixtures", "invoices");

let tree;
let server;
let context;
let opened;

before(async () => {
  tree = tempTree({
    "sales.csv": "region,amount\n华东,100.50\n华北,20\n华东,9.50\n",
  });
  const copy = (from, to) => {
    fs.mkdirSync(path.dirname(path.join(tree.workspace, to)), { recursive: true });
    fs.copyFileSync(path.join(INVOICES, from), path.join(tree.workspace, to));
  };
  copy("good/digital-004.pdf", "invoice.pdf");
  copy("good/digital-001.xml", "inbox/digital-001.xml");
  copy("broken/total-mismatch.xml", "inbox/total-mismatch.xml");
  fs.writeFileSync(
    tree.script,
    JSON.stringify([
      { tool_calls: [{ name: "extract_document", arguments: { path: "invoice.pdf" } }] },
      {
        tool_calls: [
          {
            name: "analyze_table",
            arguments: { path: "sales.csv", op: "group_by", by: ["region"], aggregates: [{ column: "amount", fn: "sum" }] },
          },
        ],
      },
      { tool_calls: [{ name: "extract_invoice", arguments: { path: "inbox" } }] },
      { content: "One invoice does not add up." },
    ]),
  );
  opened = await openConsole(tree);
  ({ server, context } = opened);
});

afterEach(() => {
  assert.deepEqual(opened.problems.splice(0), []);
});

after(async () => {
  await opened?.close();
});

test("document, table and invoice results read as text, a table and findings", async () => {
  const expected = JSON.parse(fs.readFileSync(path.join(INVOICES, "good", "digital-004.pdf.expected.json"), "utf8"));
  const response = await context.request.post(server.base + "/api/tasks", { data: { prompt: "check my invoices" } });
  assert.equal(response.status(), 201, await response.text());
  const task = await response.json();
  const page = await context.newPage();
  await page.goto(`${server.base}/#/tasks/${task.id}`);
  await textMatches(page.locator(".event-final .final-text"), /One invoice does not add up/);
  // The compact timeline folds each result into its call's line.
  const results = page.locator('.timeline [data-type="tool_result"]');
  assert.equal(await results.count(), 3);
  assert.deepEqual(
    await page.locator(".timeline li.call-line").evaluateAll((lines) => lines.map((line) => line.dataset.name)),
    ["extract_document", "analyze_table", "extract_invoice"],
  );
  // Open the lines, as a person reading the results would.
  for (const summary of await page.locator(".timeline li.call-line .call-details > summary").all()) {
    await summary.click();
  }

  // extract_document: the format and pages as facts, then the text itself (not JSON).
  const documentRow = results.nth(0);
  await textMatches(documentRow.locator(".result-facts"), /^PDF · 1 page/);
  const text = await documentRow.locator("pre.output").textContent();
  assert.ok(text.includes(expected.seller_name), `the seller's name in the text:\n${text}`);
  assert.ok(!text.trimStart().startsWith("{"), "the text, not the JSON");

  // analyze_table: a real table with a header row and one row per group.
  const tableRow = results.nth(1);
  const headers = await tableRow.locator("table.result-table th").allTextContents();
  assert.ok(headers.includes("region"), headers.join(","));
  assert.equal(await tableRow.locator("table.result-table tbody tr").count(), 2);
  await textMatches(tableRow.locator("table.result-table tbody"), /华东[\s\S]*110/);

  // extract_invoice on a folder: the invoices listed, the broken total as a finding.
  const invoiceRow = results.nth(2);
  await textMatches(invoiceRow.locator(".result-facts"), /^2 invoices · \d+ findings?/);
  await textMatches(invoiceRow.locator(".result-findings"), /total_mismatch/);
  await textMatches(invoiceRow.locator(".result-json summary"), /whole result/);

  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "docs-timeline.png");
  await page.setViewportSize({ width: 390, height: 800 });
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "docs-timeline-narrow.png");
  await page.close();
});
