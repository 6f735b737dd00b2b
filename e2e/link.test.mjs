// End-to-end test of the approval-link page (issue 30, docs/remote.md): `/d/{token}` at
// 390 px in a browser that never logged in — the one card, no horizontal scrolling,
// axe-core finds nothing serious, Approve decides once (the file is written), no cookie
// is set, and opening the link again says it no longer decides. Run with
// `node --test link.test.mjs` after `cargo build -p pp-cli`.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import {
  assertNoHorizontalScroll,
  axeViolations,
  cli,
  eventually,
  launchBrowser,
  screenshot,
  startServer,
  tempTree,
  textMatches,
  watchPage,
} from "./harness.mjs";

const SCRIPT = [
  { tool_calls: [{ name: "write_file", arguments: { path: "reports/week.md", content: "# Week\n\nAll invoices are paid.\n" } }] },
  { content: "Written." },
];

let tree;
let server;
let browser;

before(async () => {
  tree = tempTree({ "reports/old.md": "old\n" });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  server = await startServer(tree);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (!process.env.KEEP_E2E_TREE) {
    fs.rmSync(tree.root, { recursive: true, force: true });
  }
});

/** The API as the operator (bearer token), from the test itself. */
async function call(method, route, body) {
  const token = new URL(server.loginUrl).searchParams.get("token");
  const response = await fetch(server.base + route, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, json: await response.json().catch(() => null) };
}

test("390 px: the link page shows the one card, fits, passes axe, and approves once", async () => {
  const created = await call("POST", "/api/tasks", { prompt: "write the weekly report" });
  assert.equal(created.status, 201);
  const approval = await eventually("a pending approval", async () => {
    const { json } = await call("GET", "/api/approvals?state=pending");
    return json.approvals.find((row) => row.task_id === created.json.id)?.id;
  });
  const made = cli(tree, ["approvals", "link", approval, "--json"]);
  assert.equal(made.status, 0, made.stderr);
  const { url } = JSON.parse(made.stdout);
  const token = url.split("/d/")[1];
  assert.match(token, /^[0-9a-f]{64}$/);

  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  context.setDefaultTimeout(10000);
  const problems = [];
  const page = await context.newPage();
  watchPage(page, server.base, problems);
  const response = await page.goto(`${server.base}/d/${token}`);
  assert.equal(response.status(), 200);
  assert.equal(response.headers()["referrer-policy"], "no-referrer");
  assert.equal(response.headers()["x-robots-tag"], "noindex");
  assert.equal(response.headers()["cache-control"], "no-store");
  const card = page.locator("article.card");
  await card.waitFor({ state: "visible" });
  assert.equal(await page.locator("article.card").count(), 1, "the one card");
  await textMatches(page.locator(".card-title"), /write_file/);
  await textMatches(page.locator(".link-expiry"), /works once/);
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "link-390.png");
  assert.equal((await call("GET", `/api/approvals/${approval}`)).json.state, "pending", "reading decided nothing");

  await page.locator("button.approve").click();
  await eventually("the file is written", () => {
    const file = path.join(tree.workspace, "reports/week.md");
    return fs.existsSync(file) && fs.readFileSync(file, "utf8").includes("All invoices are paid.");
  });
  const decided = (await call("GET", `/api/approvals/${approval}`)).json;
  assert.equal(decided.state, "approved");
  assert.equal(decided.resolved_via, "link");
  await textMatches(page.locator(".card .resolution"), /approved via link/i);
  assert.deepEqual(await context.cookies(), [], "the link page sets no cookie");

  // Opened again: it no longer decides, and says how the approval was decided.
  await page.reload();
  await textMatches(page.locator(".link-ended"), /already approved via link/);
  assert.equal(await page.locator("button.approve").count(), 0);
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  assert.ok(!server.stderr().includes(token), "the token is not in the server's log");
  assert.deepEqual(problems, []);
  await context.close();
});
