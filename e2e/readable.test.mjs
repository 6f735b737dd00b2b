// The readable console (issue 11): the compact timeline of a task page, the Changes on
// disk panel with Revert, task search and filters, file previews, the upload-over-an-
// existing-file prompt, the audit table with logins folded, dark mode, recovery after a
// server restart, and every page at 390 and 1400 px (no horizontal scroll, axe-core clean
// in light and dark mode, the phone's top bar one row of at most 64 px).
// Screenshots land in target/e2e-screenshots/ (the docs' console-*.png come from here).

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import {
  SHOTS,
  axeViolations,
  eventually,
  horizontalOverflow,
  launchBrowser,
  screenshot,
  startServer,
  tempTree,
  textMatches,
  watchPage,
} from "./harness.mjs";

const NOTES = [
  "# Project notes",
  "",
  "Some **bold** words, some *emphasis* and `code`.",
  "",
  "- first item",
  "- second item with a [safe link](https://example.org/docs)",
  "- a [bad link](javascript:alert(1))",
  "",
  '<img src="x" id="pwned"> raw HTML stays text',
  "",
  "```",
  "let answer = 42;",
  "```",
  "",
].join("\n");
const TABLE = 'name,amount,note\nAda,12.50,"paid, in full"\nBob,7,"said ""thanks"""\n';
const TODO = "- [ ] write the report\n- [ ] call Bob\n";
const REPORT = "# Report\n\nThe notes have 2 items.\nAll good.\n";
const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="#2456c6"/><circle cx="30" cy="30" r="20" fill="#f0b429"/></svg>';
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const FINAL = "Wrote report.md and ticked the first item in todo.md.";

/** Every task replays this five-step run: read, write (approval), edit (approval), read, answer. */
const SCRIPT = [
  { tool_calls: [{ name: "read_file", arguments: { path: "notes.md" } }] },
  { tool_calls: [{ name: "write_file", arguments: { path: "report.md", content: REPORT } }] },
  { tool_calls: [{ name: "edit_file", arguments: { path: "todo.md", old_text: "- [ ] write the report", new_text: "- [x] write the report" } }] },
  { tool_calls: [{ name: "read_file", arguments: { path: "report.md" } }] },
  { content: FINAL },
];

let tree;
let server;
let browser;
let context;
const problems = [];
/** Which backend parts this server has (the console engineers merge them in as they land). */
const has = { changes: false, search: false, uploadConflict: false };

before(async () => {
  tree = tempTree({ "notes.md": NOTES, "table.csv": TABLE, "todo.md": TODO, "logo.svg": SVG, "pixel.png": PNG, "docs/readme.md": "# Docs\n" });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  server = await startServer(tree);
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  context.setDefaultTimeout(10000);
  context.on("page", (page) => watchPage(page, server.base, problems));
  const page = await context.newPage();
  await page.goto(server.loginUrl);
  await page.locator("#nav").waitFor({ state: "visible" });
  await page.close();
  const openapi = await (await context.request.get(server.base + "/api/openapi.json")).json();
  has.changes = Boolean(openapi.paths?.["/api/tasks/{id}/changes"]);
  has.search = (await context.request.get(server.base + "/api/tasks?q=probe")).ok();
  const probe = () => context.request.put(server.base + "/api/files/content?path=probe.txt", { data: Buffer.from("p\n") });
  await probe();
  has.uploadConflict = (await probe()).status() === 409;
  fs.rmSync(path.join(tree.workspace, "probe.txt"), { force: true });
});

afterEach(async () => {
  for (const page of opened.splice(0)) {
    await page.close();
  }
  assert.deepEqual(problems.splice(0), []);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (tree && !process.env.KEEP_E2E_TREE) {
    fs.rmSync(tree.root, { recursive: true, force: true });
  }
});

const file = (name) => path.join(tree.workspace, name);
const read = (name) => fs.readFileSync(file(name), "utf8");

/** Pages opened by a test, closed after it (each holds event streams: a browser allows six connections per server). */
const opened = [];

async function openPage(hash, viewport) {
  const page = await context.newPage();
  opened.push(page);
  if (viewport) {
    await page.setViewportSize(viewport);
  }
  await page.goto(server.base + "/" + hash);
  await page.locator("#nav").waitFor({ state: "visible" });
  return page;
}

/**
 * A screenshot for docs/console.md: the top of the page, at most `maxHeight` pixels
 * (`target/e2e-screenshots/docs-NAME`; pngquant makes the committed copy small).
 */
async function docShot(page, name, maxHeight) {
  await page.evaluate(() => window.scrollTo(0, 0));
  const height = Math.min(maxHeight, await page.evaluate(() => document.documentElement.scrollHeight));
  const { width } = page.viewportSize();
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, "docs-" + name), fullPage: true, clip: { x: 0, y: 0, width, height } });
}

async function createTask(prompt) {
  const response = await context.request.post(server.base + "/api/tasks", { data: { prompt } });
  assert.equal(response.status(), 201, await response.text());
  return response.json();
}

async function taskState(id) {
  return (await (await context.request.get(`${server.base}/api/tasks/${id}`)).json()).state;
}

/** Approves the inline card in the timeline row of the pending `tool` call. */
async function approveInline(page, tool) {
  const card = page.locator(`.timeline li.call-line[data-name="${tool}"] article.card[data-state="pending"]`);
  await card.waitFor();
  // "Approve", or "Approve anyway — it will fail" on a card whose precheck says so (issue 27).
  await card.locator("button.approve").click();
  await eventually(`${tool} leaves the pending state`, async () => (await card.count()) === 0);
}

/** Runs a whole task from its page, approving both writes inline; returns its id. */
async function runTask(page, prompt) {
  const task = await createTask(prompt);
  await page.goto(`${server.base}/#/tasks/${task.id}`);
  await approveInline(page, "write_file");
  await approveInline(page, "edit_file");
  await eventually("the task completes", async () => (await taskState(task.id)) === "completed");
  await textMatches(page.locator(".task-facts .badge"), /^completed$/);
  return task.id;
}

let firstTask = null;

test("compact timeline: one line per tool call, model rows behind a toggle, the model's name shown", async () => {
  fs.writeFileSync(file("todo.md"), TODO);
  const page = await openPage("#/tasks");
  firstTask = await runTask(page, "Write a report from notes.md and tick the first todo");
  const timeline = page.locator(".timeline");
  await textMatches(timeline.locator('[data-type="task_completed"]'), new RegExp(FINAL.replace(/\./g, "\\.")));
  // The answer's claims (report.md written, todo.md ticked) are both in the change log.
  const check = timeline.locator('[data-type="task_completed"] .claims-check');
  await textMatches(check, /Checked: every file the answer says it wrote is in the change log \(2\)/);
  assert.deepEqual(await check.locator(".claim-ok code").allTextContents(), ["report.md", "todo.md"]);

  // Four calls, four lines, each with its result folded in.
  const lines = timeline.locator("li.call-line");
  assert.equal(await lines.count(), 4);
  assert.deepEqual(await lines.evaluateAll((items) => items.map((item) => item.dataset.name)), ["read_file", "write_file", "edit_file", "read_file"]);
  assert.deepEqual(await lines.evaluateAll((items) => items.map((item) => item.dataset.status)), ["done", "done", "done", "done"]);
  assert.equal(await timeline.locator("li.call-line [data-type='tool_result']").count(), 4);
  // Every stored event is on the page exactly once.
  const events = (await (await context.request.get(`${server.base}/api/tasks/${firstTask}/events`)).json()).events;
  const seqs = await timeline.locator("[data-seq]").evaluateAll((items) => items.map((item) => Number(item.dataset.seq)));
  assert.deepEqual([...seqs].sort((a, b) => a - b), events.map((event) => event.seq));

  // The write's arguments: path and size, never JSON with \n.
  const write = lines.nth(1);
  const summary = await write.locator(".call-details > summary").textContent();
  assert.match(summary, /path=report\.md · content: 4 lines, 44 B/);
  assert.doesNotMatch(summary, /\\n|\{/);
  await write.locator(".call-details > summary").click();
  await textMatches(write.locator(".arguments-list"), /content.*# Report/s);
  assert.doesNotMatch(await write.locator(".arguments-list").textContent(), /\\n/);

  // The visible rows: start, four calls, the answer. Model requests are hidden.
  const visibleRows = () => timeline.locator(":scope > li:visible").count();
  assert.equal(await visibleRows(), 6);
  const modelRows = timeline.locator("li.model-row");
  assert.ok((await modelRows.count()) >= 5, "one model request per step");
  assert.equal(await modelRows.first().isVisible(), false);
  await page.getByLabel(/Show model requests/).check();
  assert.equal(await modelRows.first().isVisible(), true);
  assert.equal(await visibleRows(), 6 + (await modelRows.count()));
  await page.getByLabel(/Show model requests/).uncheck();

  await textMatches(page.locator(".task-facts .model-name"), /model\s*scripted/);
  await screenshot(page, "readable-task.png");
  await page.close();
});

test("the timeline follows the newest event unless the person scrolled up; the inline card sits in the pending call's row", async () => {
  const page = await openPage("#/tasks", { width: 1400, height: 900 });
  const task = await createTask("Follow me while I wait");
  await page.goto(`${server.base}/#/tasks/${task.id}`);
  const row = page.locator('.timeline li.call-line[data-name="write_file"]');
  await row.locator("article.card").waitFor();
  await textMatches(row.locator(".call-status"), /waiting for your decision/);
  // Decision first: the panel at the top holds the same call.
  await page.locator("#decisions article.card").first().waitFor();
  const box = page.locator(".timeline-scroll");
  await eventually("the box is scrolled to its end", () =>
    box.evaluate((element) => element.scrollHeight <= element.clientHeight || element.scrollTop + element.clientHeight >= element.scrollHeight - 40),
  );
  await screenshot(page, "readable-task-pending.png");
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok((await horizontalOverflow(page)) <= 0, "the pending task page fits 390 px");
  await screenshot(page, "readable-task-pending-narrow.png");
  await docShot(page, "console-task-narrow.png", 1500);
  await page.setViewportSize({ width: 1400, height: 900 });
  await approveInline(page, "write_file");
  await approveInline(page, "edit_file");
  await eventually("completed", async () => (await taskState(task.id)) === "completed");
  await page.close();
});

test("changes on disk: a write and an edit listed with sizes and links; revert one; a refused revert shows the diff", async (t) => {
  if (!has.changes) {
    t.skip("needs feat-changes (GET /api/tasks/{id}/changes)");
    return;
  }
  const page = await openPage(`#/tasks/${firstTask}`);
  const panel = page.locator("section.changes");
  const rows = panel.locator("li.change");
  await eventually("two changes", async () => (await rows.count()) === 2);
  assert.deepEqual(await rows.evaluateAll((items) => items.map((item) => item.dataset.kind)), ["created", "edited"]);
  await textMatches(rows.nth(0), /created\s*report\.md\s*44 B/);
  assert.equal(await rows.nth(0).locator("a.change-path").getAttribute("href"), "#/preview?path=report.md&workspace=ws");

  // Revert the edit: todo.md is back as it was.
  await rows.nth(1).getByRole("button", { name: "Revert" }).click();
  await rows.nth(1).getByRole("button", { name: "Revert now" }).click();
  await eventually("todo.md restored", () => read("todo.md") === TODO);
  await eventually("a reverted row", async () => (await panel.locator('li.change[data-kind="reverted"]').count()) === 1);

  // The report changed after the agent wrote it: reverting would clobber that, so it is refused with the diff.
  fs.writeFileSync(file("report.md"), REPORT + "A line I added myself.\n");
  const created = panel.locator('li.change[data-kind="created"]');
  await created.getByRole("button", { name: "Revert" }).click();
  await created.getByRole("button", { name: "Revert now" }).click();
  await textMatches(created.locator(".change-result"), /Not reverted: .*changed after the agent's write/);
  await textMatches(created.locator(".change-result .diff"), /A line I added myself/);
  assert.match(read("report.md"), /A line I added myself/, "nothing clobbered");
  await screenshot(page, "readable-changes.png");
  await docShot(page, "console-task.png", 1150);

  // The task list counts what really happened.
  await page.goto(server.base + "/#/tasks");
  await textMatches(page.locator(`tr[data-task-id="${firstTask}"] .change-counts`), /1 created · 1 edited · 1 reverted/);
  await page.close();
});

test("task list: search by prompt, filter by state, paging with next_before, kept on reload", async (t) => {
  if (!has.search) {
    t.skip("needs feat-apimisc (task search)");
    return;
  }
  await createTask("Alpha budget review");
  await createTask("Beta budget review");
  await createTask("Gamma unrelated chore");
  const page = await openPage("#/tasks?limit=2");
  await page.fill("#task-search", "budget");
  await page.waitForURL(/q=budget/);
  const rows = page.locator(".task-list tbody tr");
  // The unfiltered first page also has two rows: wait for the search's, not for a count.
  const budget = ["Beta budget review", "Alpha budget review"];
  const prompts = () => rows.locator(".prompt-cell a").allTextContents();
  await eventually("the two budget tasks", async () => JSON.stringify(await prompts()) === JSON.stringify(budget));
  assert.deepEqual(await prompts(), budget);
  // Paging: two per page; the state filter narrows to waiting tasks.
  await page.fill("#task-search", "");
  await page.selectOption("#state-filter", "waiting_approval");
  await page.waitForURL(/state=waiting_approval/);
  const allWaiting = () => rows.evaluateAll((items) => items.every((item) => item.dataset.state === "waiting_approval"));
  await eventually("first page", async () => (await rows.count()) === 2 && (await allWaiting()));
  await page.getByRole("button", { name: "Older tasks" }).click();
  await eventually("second page", async () => (await rows.count()) >= 3);
  const states = await rows.evaluateAll((items) => items.map((item) => item.dataset.state));
  assert.deepEqual([...new Set(states)], ["waiting_approval"]);
  // A reload keeps the filter.
  await page.reload();
  await page.locator("#nav").waitFor({ state: "visible" });
  assert.equal(await page.locator("#state-filter").inputValue(), "waiting_approval");
  await screenshot(page, "readable-tasks.png");
  await docShot(page, "console-tasks.png", 900);
  await page.close();
});

test("file preview: Markdown rendered safely, CSV as a table, images through a blob URL", async () => {
  const page = await openPage("#/files");
  await page.getByRole("link", { name: "Preview notes.md" }).click();
  await page.waitForURL(/#\/preview\?path=notes\.md/);
  const body = page.locator(".preview-body");
  await textMatches(page.locator("h1"), /notes\.md/);
  await textMatches(body.locator(".markdown h2"), /^Project notes$/);
  assert.equal(await body.locator(".markdown strong").first().textContent(), "bold");
  assert.equal(await body.locator(".markdown li").count(), 3);
  assert.equal(await body.locator(".markdown pre code").textContent(), "let answer = 42;");
  assert.equal(await body.locator('.markdown a[href="https://example.org/docs"]').count(), 1);
  assert.equal(await body.locator('.markdown a[href^="javascript"]').count(), 0, "no javascript: link");
  await textMatches(body.locator(".markdown"), /\[bad link\]\(javascript:alert\(1\)\)/);
  assert.equal(await page.locator("#pwned").count(), 0, "raw HTML is never parsed");
  await textMatches(body.locator(".markdown"), /<img src="x" id="pwned"> raw HTML stays text/);
  // Focus moved to the new page's heading.
  assert.equal(await page.evaluate(() => document.activeElement?.tagName), "H1");
  await screenshot(page, "readable-preview-markdown.png");
  await docShot(page, "console-preview.png", 900);

  await page.goto(server.base + "/#/preview?path=table.csv");
  const table = page.locator(".preview-body table.csv-table");
  await table.waitFor();
  assert.deepEqual(await table.locator("th").allTextContents(), ["name", "amount", "note"]);
  assert.deepEqual(await table.locator("tbody tr").nth(0).locator("td").allTextContents(), ["Ada", "12.50", "paid, in full"]);
  assert.deepEqual(await table.locator("tbody tr").nth(1).locator("td").allTextContents(), ["Bob", "7", 'said "thanks"']);
  await screenshot(page, "readable-preview-csv.png");

  for (const name of ["pixel.png", "logo.svg"]) {
    await page.goto(`${server.base}/#/preview?path=${name}`);
    const image = page.locator(".preview-body img.preview-image");
    await image.waitFor();
    assert.match(await image.getAttribute("src"), /^blob:/);
    await eventually(`${name} decoded`, () => image.evaluate((img) => img.complete && img.naturalWidth > 0));
  }
  await screenshot(page, "readable-preview-image.png");
  // The download route itself still never renders in the browser.
  const response = await context.request.get(server.base + "/api/files/content?path=logo.svg");
  assert.equal(response.headers()["content-type"], "application/octet-stream");
  assert.match(response.headers()["content-disposition"], /^attachment/);
  await page.close();
});

test("upload over an existing file: the diff, then Replace only after confirming", async (t) => {
  if (!has.uploadConflict) {
    t.skip("needs feat-apimisc (PUT 409 exists)");
    return;
  }
  fs.writeFileSync(file("docs/plan.md"), "one\ntwo\nthree\n");
  const page = await openPage("#/files?path=docs");
  await page.locator('tr[data-path="docs/plan.md"]').waitFor();
  const upload = (content) =>
    page.setInputFiles("#upload-input", { name: "plan.md", mimeType: "text/markdown", buffer: Buffer.from(content) });

  // Keep: nothing changes.
  await upload("one\nTWO\nthree\n");
  const prompt = page.locator(".replace-confirm");
  await textMatches(prompt, /docs\/plan\.md already exists\. Replace it\?/);
  assert.deepEqual(await prompt.locator(".diff-del .diff-text, .diff-del").first().textContent().then((text) => /two/.test(text)), true);
  await textMatches(prompt.locator(".diff"), /TWO/);
  assert.equal(read("docs/plan.md"), "one\ntwo\nthree\n", "nothing written before the answer");
  await screenshot(page, "readable-upload-replace.png");
  await docShot(page, "console-upload.png", 900);
  await prompt.getByRole("button", { name: "Keep the current file" }).click();
  await textMatches(page.locator(".upload-status"), /kept as it is/);
  assert.equal(read("docs/plan.md"), "one\ntwo\nthree\n");

  // Replace: sent again with overwrite=true.
  await upload("one\nTWO\nthree\n");
  await page.locator(".replace-confirm").getByRole("button", { name: "Replace" }).click();
  await textMatches(page.locator(".upload-status"), /Replaced docs\/plan\.md/);
  assert.equal(read("docs/plan.md"), "one\nTWO\nthree\n");
  await page.close();
});

test("audit: login rows folded unless asked for; the detail column wraps", async () => {
  const page = await openPage("#/audit");
  const rows = page.locator("table.audit tbody tr");
  await rows.first().waitFor();
  const actions = () => rows.evaluateAll((items) => items.map((item) => item.dataset.action));
  assert.ok(!(await actions()).includes("console_login"), "logins folded");
  await page.getByLabel("Show logins").check();
  await page.waitForURL(/logins=1/);
  await eventually("login rows", async () => (await actions()).includes("console_login"));
  // Nothing in the table is clipped: every cell fits its column.
  const clipped = await page.locator("table.audit td").evaluateAll((cells) => cells.filter((cell) => cell.scrollWidth > cell.clientWidth + 1).length);
  assert.equal(clipped, 0);
  assert.ok((await horizontalOverflow(page)) <= 0);
  await page.getByLabel("Show logins").uncheck();
  await page.waitForURL((url) => !/logins=1/.test(url.hash));
  await screenshot(page, "readable-audit.png");
  await docShot(page, "console-audit.png", 900);
  await page.close();
});

test("after a server restart the pages recover by themselves; an unknown task says so", async () => {
  const page = await openPage("#/files");
  const port = server.port;
  await server.stop();
  await page.evaluate(() => {
    location.hash = "#/tasks";
  });
  await textMatches(page.locator(".new-task .form-status"), /Cannot list workspaces: .*Trying again/);
  server = await startServer(tree, { port });
  await eventually("the message clears", async () => (await page.locator(".new-task .form-status .notice").count()) === 0, 30000);
  await page.locator("#task-workspace option").first().waitFor({ state: "attached" });
  await page.locator(".task-list table, .task-list .empty").first().waitFor();

  await page.evaluate(() => {
    location.hash = "#/tasks/t_does_not_exist";
  });
  await textMatches(page.locator("main h1"), /^No such task$/);
  await page.getByRole("link", { name: "Go back to the tasks" }).waitFor();
  assert.equal(await page.locator(".stream-state").count(), 0, "no permanent “Connection lost”");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "No such task");
  await page.close();
});

/** Every page of the console, with what shows it is ready. */
async function everyPage() {
  const sessions = await context.request.post(server.base + "/api/sessions", { data: { title: "A chat" } });
  const session = await sessions.json();
  const pending = await createTask("A task waiting on a phone");
  await context.request.post(server.base + "/api/schedules", {
    data: { name: "weekly-invoices", cron: "0 9 * * 1", time_zone: "Europe/Berlin", prompt: "Summarise last week's invoices" },
  });
  const approval = await eventually("an approval", async () => {
    const { approvals } = await (await context.request.get(server.base + "/api/approvals")).json();
    return approvals.find((item) => item.task_id === pending.id);
  });
  return [
    ["tasks", "#/tasks", ".task-list table"],
    ["task", `#/tasks/${pending.id}`, "#decisions article.card"],
    ["inbox", "#/approvals", "article.card"],
    ["approval", `#/approvals/${approval.id}`, "article.card"],
    ["chat-list", "#/chat", "main h1"],
    ["chat", `#/chat/${session.id}`, "main h1"],
    ["files", "#/files", "table.files"],
    ["preview", "#/preview?path=notes.md", ".markdown"],
    ["audit", "#/audit", "table.audit tbody tr"],
    ["skills", "#/skills", "main h1"],
    ["memory", "#/memory", "main h1"],
    ["mcp", "#/mcp", ".mcp-servers:not([aria-busy])"],
    ["schedules", "#/schedules", ".schedules:not([aria-busy])"],
    ["channels", "#/channels", ".channels:not([aria-busy])"],
  ];
}

test("every page at 390×844 and 1400×900: no horizontal scroll, top bar ≤ 64 px on the phone, axe-core finds nothing serious (light and dark)", async () => {
  const pages = await everyPage();
  const page = await context.newPage();
  opened.push(page);
  for (const [name, hash, ready] of pages) {
    for (const viewport of [{ width: 390, height: 844 }, { width: 1400, height: 900 }]) {
      await page.setViewportSize(viewport);
      await page.goto(server.base + "/" + hash);
      await page.locator(ready).first().waitFor();
      const overflow = await horizontalOverflow(page);
      assert.ok(overflow <= 0, `${name} at ${viewport.width}px scrolls sideways by ${overflow}px`);
      if (viewport.width === 390) {
        // The sticky top bar is one row on a phone (issue 27: it was 182 px).
        const bar = await page.evaluate(() => document.querySelector(".topbar").getBoundingClientRect().height);
        assert.ok(bar <= 64, `${name} at 390px: top bar ${bar}px high`);
      }
      assert.deepEqual(await axeViolations(page), [], `${name} at ${viewport.width}px`);
      await screenshot(page, `readable-${name}-${viewport.width}.png`);
      await page.emulateMedia({ colorScheme: "dark" });
      assert.deepEqual(await axeViolations(page), [], `${name} at ${viewport.width}px, dark`);
      await page.emulateMedia({ colorScheme: "light" });
    }
  }
  await page.close();
  // The login page, in a browser without a session.
  const fresh = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const login = await fresh.newPage();
  await login.goto(server.base + "/");
  await login.locator(".login").waitFor();
  assert.ok((await horizontalOverflow(login)) <= 0);
  assert.deepEqual(await axeViolations(login), []);
  await screenshot(login, "readable-login-390.png");
  await fresh.close();
});

test("dark mode follows the system: the pages stay axe-clean (contrast included)", async () => {
  const dark = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: "dark" });
  dark.setDefaultTimeout(10000);
  const found = [];
  dark.on("page", (page) => watchPage(page, server.base, found));
  await dark.addCookies(await context.cookies());
  const page = await dark.newPage();
  for (const [name, hash, ready] of await everyPage()) {
    await page.goto(server.base + "/" + hash);
    await page.locator(ready).first().waitFor();
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(background, "rgb(18, 22, 28)", "the dark palette is on");
    assert.deepEqual(await axeViolations(page), [], `${name} in dark mode`);
    if (name === "task" || name === "tasks" || name === "preview") {
      await screenshot(page, `readable-dark-${name}.png`);
    }
    if (name === "task") {
      await docShot(page, "console-dark.png", 1100);
    }
  }
  await dark.close();
  assert.deepEqual(found, []);
});
