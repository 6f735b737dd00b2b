// End-to-end tests of the web console: a real `pocketpilot serve` (scripted model) and
// Debian's headless Chromium. Run with `node --test` from this directory after
// `cargo build -p pp-cli`. Screenshots land in target/e2e-screenshots/.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import {
  badgeCount,
  cli,
  eventually,
  launchBrowser,
  screenshot,
  startServer,
  tempTree,
  textMatches,
  watchPage,
} from "./harness.mjs";

const ORIGINAL = "Buy milk\nCall Bob\n";
const PROPOSED = "Buy milk\nCall Ada\nShip the release\n";
const FINAL_ANSWER = "Finished with notes.txt. Tell me if you want anything else changed.";

/** Every task replays this: one write that overwrites notes.txt, then an answer. */
const SCRIPT = [
  { tool_calls: [{ name: "write_file", arguments: { path: "notes.txt", content: PROPOSED } }] },
  { content: FINAL_ANSWER },
];

let tree;
let server;
let browser;
/** A logged-in browser context shared by the tests (cookies, like one person's browser). */
let context;
const problems = [];

before(async () => {
  tree = tempTree({ "notes.txt": ORIGINAL, "docs/readme.md": "# Docs\n" });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  server = await startServer(tree);
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  context.setDefaultTimeout(10000);
  context.on("page", (page) => watchPage(page, server.base, problems));
  const page = await context.newPage();
  await page.goto(server.loginUrl);
  await page.locator("#nav").waitFor({ state: "visible" });
  assert.equal(new URL(page.url()).pathname, "/", "the login redirects to the console");
  assert.ok(!page.url().includes("token="), "the token leaves the address bar");
  await page.close();
});

afterEach(() => {
  // Every page of the logged-in context: no script errors, no CSP violations, no
  // request that leaves the server's origin.
  assert.deepEqual(problems.splice(0), []);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (tree && !process.env.KEEP_E2E_TREE) {
    fs.rmSync(tree.root, { recursive: true, force: true });
  }
});

function workspaceFile(name) {
  return path.join(tree.workspace, name);
}

function readWorkspace(name) {
  return fs.readFileSync(workspaceFile(name), "utf8");
}

async function openPage(hash = "#/tasks") {
  const page = await context.newPage();
  await page.goto(server.base + "/" + hash);
  await page.locator("#nav").waitFor({ state: "visible" });
  return page;
}

/** Creates a task through the API (as a script or the CLI would) and returns it. */
async function createTaskViaApi(prompt) {
  const response = await context.request.post(server.base + "/api/tasks", { data: { prompt } });
  assert.equal(response.status(), 201, await response.text());
  return response.json();
}

async function pendingApprovalFor(taskId) {
  return eventually(`a pending approval for ${taskId}`, async () => {
    const response = await context.request.get(server.base + "/api/approvals");
    const { approvals } = await response.json();
    return approvals.find((approval) => approval.task_id === taskId);
  });
}

async function taskEvents(taskId) {
  const response = await context.request.get(`${server.base}/api/tasks/${taskId}/events`);
  return (await response.json()).events;
}

/** Creates a task through the "new task" form; returns its id (from the task page URL). */
async function createTaskViaForm(page, prompt, base = server.base) {
  await page.goto(base + "/#/tasks");
  await page.locator("#task-workspace option").first().waitFor({ state: "attached" });
  await page.fill("#task-prompt", prompt);
  // The id comes from the server's answer to this form's POST, never from the address
  // bar: on a slow machine the address can still show the previous task's page.
  const created = page.waitForResponse(
    (response) => response.request().method() === "POST" && new URL(response.url()).pathname === "/api/tasks",
  );
  await page.getByRole("button", { name: "Start task" }).click();
  const response = await created;
  assert.equal(response.status(), 201, await response.text());
  const { id } = await response.json();
  await page.waitForURL((url) => url.hash === "#/tasks/" + encodeURIComponent(id));
  await page.locator(`.timeline [data-type="approval_required"]`).first().waitFor();
  return id;
}

/**
 * The sequence numbers shown in a task's timeline (the compact timeline folds a call's
 * approval and result into the call's line, so they come back sorted); asserts there
 * are no duplicates.
 */
async function timelineSeqs(page) {
  const seqs = await page.locator(".timeline [data-seq]").evaluateAll((items) => items.map((item) => Number(item.dataset.seq)));
  assert.equal(new Set(seqs).size, seqs.length, `duplicate timeline rows: ${seqs}`);
  return seqs.sort((a, b) => a - b);
}

test("a browser without a session gets a page saying how to log in", async () => {
  const fresh = await browser.newContext();
  const page = await fresh.newPage();
  const pageProblems = watchPage(page, server.base);
  await page.goto(server.base + "/#/approvals");
  const login = page.locator(".login");
  await login.waitFor();
  await textMatches(login, /Log in to PocketPilot/);
  await textMatches(login, /pocketpilot serve/);
  await textMatches(login, /login\?token=/);
  assert.equal(await page.locator("#nav").isVisible(), false, "no navigation into a broken app");
  await screenshot(page, "login.png");
  // A wrong token gets the server's refusal page, not a session.
  const refused = await page.goto(server.base + "/login?token=wrong");
  assert.equal(refused.status(), 401);
  await page.goto(server.base + "/");
  await login.waitFor();
  await fresh.close();
  assert.deepEqual(pageProblems, []);
});

test("a session that ends while the console is open turns into the login page", async () => {
  const other = await browser.newContext();
  const page = await other.newPage();
  await page.goto(server.loginUrl);
  await page.locator("#nav").waitFor({ state: "visible" });
  await page.locator(".task-list table, .task-list .empty").first().waitFor();
  await other.clearCookies();
  // The next API call (here: opening the audit page) gets a 401.
  await page.evaluate(() => {
    location.hash = "#/audit";
  });
  await textMatches(page.locator(".login"), /not logged in, or its session has expired/);
  assert.equal(await page.locator("#nav").isVisible(), false);
  await other.close();
});

test("overwrite: see the diff, edit the path, approve; reject another with a reason; live badge", async () => {
  const page = await openPage();
  assert.equal(await badgeCount(page), 0);

  // Two tasks through the form; each stops at an approval and the badge counts them.
  const first = await createTaskViaForm(page, "Update notes.txt with the new plan");
  await eventually("badge 1", async () => (await badgeCount(page)) === 1);
  const second = await createTaskViaForm(page, "Tidy up notes.txt");
  await eventually("badge 2", async () => (await badgeCount(page)) === 2);
  assert.equal(await page.locator("#approval-count").textContent(), "2");

  // The inbox: both cards, newest first, with the overwrite label, high risk and diff.
  await page.getByRole("link", { name: /Approvals/ }).click();
  // The triage inbox (issue 27) opens the first row by itself: open the other one too.
  await eventually("two rows", async () => (await page.locator(".inbox-row").count()) === 2);
  for (const row of await page.locator('.inbox-open[aria-expanded="false"]').all()) {
    await row.click();
  }
  const cards = page.locator("article.card");
  await eventually("two cards", async () => (await cards.count()) === 2);
  assert.equal(await cards.nth(0).getAttribute("data-task-id"), second, "newest first");
  assert.equal(await cards.nth(1).getAttribute("data-task-id"), first);
  const card = page.locator(`article.card[data-task-id="${first}"]`);
  await textMatches(card.locator(".card-task"), /Update notes\.txt with the new plan/);
  await textMatches(card.locator(".card-title"), /write_file\s*notes\.txt/);
  // The size badge in proportion: overwriting the whole file is the strongest.
  await textMatches(card.locator(".badge.scope-replaces_whole_file"), /^replaces whole file \+2 −1$/);
  await textMatches(card.locator(".capability"), /file:write/);
  assert.match(await card.getAttribute("class"), /risk-high/);
  assert.deepEqual(await card.locator(".diff-row.diff-del .diff-code").allTextContents(), ["-Call Bob"]);
  assert.deepEqual(await card.locator(".diff-row.diff-add .diff-code").allTextContents(), ["+Call Ada", "+Ship the release"]);
  const diffColors = await card.locator(".diff-row.diff-add .diff-code, .diff-row.diff-del .diff-code").evaluateAll((lines) =>
    lines.map((line) => getComputedStyle(line).backgroundColor),
  );
  assert.equal(new Set(diffColors).size, 2, `added and removed lines are colored apart: ${diffColors}`);
  await screenshot(page, "inbox.png");

  // Edit (structured: a path field and the content): an empty path is caught in the
  // browser; an escaping path gets the server's 422 inline; a new path is approved.
  await card.getByRole("button", { name: "Edit…" }).click();
  const pathField = card.locator('input[data-arg="path"]');
  assert.equal(await pathField.inputValue(), "notes.txt");
  assert.equal(await card.locator('textarea[data-arg="content"]').inputValue(), PROPOSED);
  await pathField.fill(" ");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card.locator(".edit-error"), /path must not be empty/);
  await pathField.fill("../outside.txt");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card.locator(".edit-error"), /server refused the edited arguments: .*escapes/);
  assert.equal(fs.existsSync(path.join(tree.root, "outside.txt")), false);
  assert.equal(await badgeCount(page), 2, "still pending after a refused edit");
  await screenshot(page, "card-edit-refused.png");
  await pathField.fill("notes-edited.txt");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  // The card follows the call to its real outcome (never "approved" as the last word).
  await textMatches(card.locator(".outcome"), /^Written notes-edited\.txt \(\d+ B\)/);
  await eventually("badge 1 after approving", async () => (await badgeCount(page)) === 1);

  // The timeline finishes; the write went to the edited path, the original is untouched.
  await card.getByRole("link", { name: /Follow the task/ }).click();
  await page.waitForURL(new RegExp(`#/tasks/${first}$`));
  const final = page.locator('.timeline [data-type="task_completed"]');
  await textMatches(final, new RegExp(FINAL_ANSWER.replace(/[.]/g, "\\.")));
  await textMatches(page.locator(".task-facts .badge"), /^completed$/);
  await textMatches(page.locator('.timeline [data-type="approval_resolved"]'), /Approved with edited arguments/);
  await textMatches(page.locator('.timeline [data-type="tool_call"]').first(), /path=notes\.txt/);
  await textMatches(page.locator('.timeline [data-type="tool_result"]'), /notes-edited\.txt/);
  assert.equal(await page.getByRole("button", { name: "Cancel task" }).count(), 0, "no cancel on a finished task");
  assert.equal(readWorkspace("notes-edited.txt"), PROPOSED);
  assert.equal(readWorkspace("notes.txt"), ORIGINAL);
  const seqs = await timelineSeqs(page);
  assert.deepEqual(seqs, (await taskEvents(first)).map((event) => event.seq), "every event shown once");
  await screenshot(page, "timeline.png");

  // Reject the second with a reason; the badge reaches 0 and the model's reply shows.
  await page.getByRole("link", { name: /Approvals/ }).click();
  const other = page.locator(`article.card[data-task-id="${second}"]`);
  await other.getByRole("button", { name: "Reject…" }).click();
  await page.getByLabel("Reason for rejecting (optional)").fill("Not today: keep the old plan");
  await other.getByRole("button", { name: "Reject call" }).click();
  await textMatches(other.locator(".outcome"), /Not run — rejected/);
  await textMatches(other.locator(".resolution"), /reason: “Not today: keep the old plan”/);
  await eventually("badge 0", async () => (await badgeCount(page)) === 0);
  assert.equal(await page.locator("#approval-count").isVisible(), false);

  // The inbox's history shows who decided and why.
  await page.selectOption("#approval-filter", "rejected");
  await page.waitForURL(/#\/approvals\?state=rejected/);
  // A history row opens its card (issue 27's triage inbox).
  await page.locator(`.inbox-row[data-task-id="${second}"] .inbox-open`).click();
  await textMatches(
    page.locator(`article.card[data-task-id="${second}"] .resolution`),
    /Rejected (via \w+ )?by operator at .*reason: “Not today: keep the old plan”/,
  );
  assert.equal(await page.locator(`article.card[data-task-id="${second}"] button.approve`).count(), 0);

  await page.goto(`${server.base}/#/tasks/${second}`);
  await textMatches(page.locator('.timeline [data-type="approval_resolved"]'), /Rejected by the operator.*Not today: keep the old plan/s);
  await textMatches(page.locator('.timeline [data-type="tool_error"]'), /rejected/i);
  await textMatches(page.locator('.timeline [data-type="task_completed"]'), /Finished with notes\.txt/);
  assert.equal(readWorkspace("notes.txt"), ORIGINAL, "a rejected call writes nothing");
  await timelineSeqs(page);
  await screenshot(page, "timeline-rejected.png");

  // The task list shows both with state badges, and the filter narrows it.
  await page.goto(server.base + "/#/tasks");
  await textMatches(page.locator(`tr[data-task-id="${first}"] .badge`), /completed/);
  await screenshot(page, "tasks.png");
  await page.selectOption("#state-filter", "waiting_approval");
  await page.waitForURL(/state=waiting_approval/);
  await textMatches(page.locator(".task-list"), /No tasks waiting for approval/);
  await page.close();
});

test("two tabs resolve the same card: one wins, the other says already resolved", async () => {
  const task = await createTaskViaApi("Two people, one card");
  const approval = await pendingApprovalFor(task.id);
  const tabs = [await openPage("#/approvals"), await openPage("#/approvals")];
  const cardIn = (tab) => tab.locator(`article.card[data-approval-id="${approval.id}"]`);
  for (const tab of tabs) {
    await cardIn(tab).waitFor();
  }
  await Promise.all(tabs.map((tab) => cardIn(tab).getByRole("button", { name: "Approve", exact: true }).click()));
  const texts = await Promise.all(tabs.map((tab) => textMatches(cardIn(tab), /Already resolved|Approved — running…|Written|Done/)));
  const winners = texts.filter((text) => !/Already resolved/.test(text));
  const losers = texts.filter((text) => /Already resolved/.test(text));
  assert.equal(winners.length, 1, texts.join(" | "));
  assert.equal(losers.length, 1, texts.join(" | "));
  assert.match(losers[0], /approved (via \w+ )?by operator/);
  const loser = tabs[texts.indexOf(losers[0])];
  assert.doesNotMatch(await cardIn(loser).locator(".card-status").textContent(), /409|error|\{/i, "no error dump");
  await screenshot(loser, "already-resolved.png");

  // The call ran exactly once.
  await eventually("the task completes", async () => {
    const response = await context.request.get(`${server.base}/api/tasks/${task.id}`);
    return (await response.json()).state === "completed";
  });
  const executed = (await taskEvents(task.id)).filter((event) => event.type === "tool_result");
  assert.equal(executed.length, 1);

  // A card resolved elsewhere (here: the API, as the CLI would) says who resolved it.
  const next = await createTaskViaApi("Resolved from elsewhere");
  const nextApproval = await pendingApprovalFor(next.id);
  const tab = tabs[0];
  await cardIn(tab).waitFor();
  const nextCard = tab.locator(`article.card[data-approval-id="${nextApproval.id}"]`);
  await nextCard.waitFor();
  const response = await context.request.post(`${server.base}/api/approvals/${nextApproval.id}/resolve`, {
    data: { decision: "reject", reason: "done from the command line" },
  });
  assert.equal(response.status(), 202);
  await textMatches(nextCard.locator(".card-status"), /Resolved elsewhere: rejected (via \w+ )?by operator .*done from the command line/);
  assert.equal(await nextCard.getByRole("button", { name: "Approve", exact: true }).count(), 0);
  await eventually("badge 0", async () => (await badgeCount(tab)) === 0);
  for (const each of tabs) {
    await each.close();
  }
});

test("the timeline resumes after a dropped connection without duplicating events", async () => {
  const task = await createTaskViaApi("Survive a server restart");
  const approval = await pendingApprovalFor(task.id);
  const page = await openPage(`#/tasks/${task.id}`);
  await page.locator('.timeline [data-type="approval_required"]').waitFor();
  const before = await timelineSeqs(page);
  const inbox = await openPage("#/approvals");
  const card = inbox.locator(`article.card[data-approval-id="${approval.id}"]`);
  await card.waitFor();

  // The server goes away; the approval is resolved from the CLI meanwhile; the server
  // comes back on the same port and the page picks up where it stopped.
  const port = server.port;
  await server.stop();
  await textMatches(page.locator(".stream-state"), /reconnecting/i);
  const approved = cli(tree, ["approvals", "approve", approval.id]);
  assert.equal(approved.status, 0, `${approved.stdout}\n${approved.stderr}`);
  server = await startServer(tree, { port });
  await textMatches(page.locator('.timeline [data-type="task_completed"]'), /Finished with notes\.txt/, 30000);
  const seqs = await timelineSeqs(page);
  assert.deepEqual(seqs.slice(0, before.length), before);
  assert.deepEqual(seqs, (await taskEvents(task.id)).map((event) => event.seq), "every event exactly once");
  // The inbox catches up too: the card was decided on the command line meanwhile.
  await textMatches(card.locator(".card-status"), /Resolved elsewhere: approved (via \w+ )?by operator/, 30000);
  await eventually("the navigation is live again", async () => !(await inbox.locator("#connection").isVisible()));
  await page.close();
  await inbox.close();
});

test("cancel a task that waits for approval: its card leaves the inbox", async () => {
  // The prompt doubles as an escaping check: it must show as text, never as markup.
  const task = await createTaskViaApi('Cancel me while I wait <img src="x" id="pwned">');
  await pendingApprovalFor(task.id);
  const page = await openPage(`#/tasks/${task.id}`);
  await page.locator('.timeline [data-type="approval_required"]').waitFor();
  await textMatches(page.locator("h1.task-prompt"), /Cancel me while I wait <img src="x" id="pwned">/);
  assert.equal(await page.locator("#pwned").count(), 0, "text is never parsed as HTML");
  await eventually("badge counts the card", async () => (await badgeCount(page)) >= 1);
  const pending = await badgeCount(page);
  assert.equal(await page.getByRole("button", { name: "Retry task" }).count(), 0, "no retry while waiting");
  await page.getByRole("button", { name: "Cancel task" }).click();
  await textMatches(page.locator(".task-facts .badge"), /^cancelled$/);
  await textMatches(page.locator('.timeline [data-type="task_cancelled"]'), /Cancelled/);
  await eventually("badge drops", async () => (await badgeCount(page)) === pending - 1);
  assert.equal(await page.getByRole("button", { name: "Cancel task" }).count(), 0);
  const response = await context.request.get(`${server.base}/api/approvals?state=cancelled`);
  assert.ok((await response.json()).approvals.some((approval) => approval.task_id === task.id));
  await page.close();
});

test("files: browse, download, upload by picker and by drop, guard errors shown plainly", async () => {
  const page = await openPage("#/files");
  const notes = page.locator('tr[data-path="notes.txt"]');
  await notes.waitFor();
  await page.locator('tr[data-path="docs"] a').click();
  await page.waitForURL(/path=docs/);
  await page.locator('tr[data-path="docs/readme.md"]').waitFor();

  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download readme.md" }).click(),
  ]);
  assert.equal(download.suggestedFilename(), "readme.md");
  assert.equal(fs.readFileSync(await download.path(), "utf8"), "# Docs\n");

  await page.setInputFiles("#upload-input", { name: "picked.txt", mimeType: "text/plain", buffer: Buffer.from("picked\n") });
  await textMatches(page.locator(".upload-status"), /Uploaded docs\/picked\.txt/);
  assert.equal(readWorkspace("docs/picked.txt"), "picked\n");
  await page.locator('tr[data-path="docs/picked.txt"]').waitFor();

  await page.evaluate(() => {
    const transfer = new DataTransfer();
    transfer.items.add(new File(["dropped\n"], "dropped.txt", { type: "text/plain" }));
    const zone = document.querySelector(".drop-zone");
    for (const type of ["dragenter", "dragover", "drop"]) {
      zone.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
  });
  await textMatches(page.locator(".upload-status"), /Uploaded docs\/dropped\.txt/);
  assert.equal(readWorkspace("docs/dropped.txt"), "dropped\n");
  await screenshot(page, "files.png");

  await page.goto(server.base + "/#/files?path=..%2F..%2Fetc");
  await textMatches(page.locator(".file-list .notice-error"), /Refused by the workspace guard: .*escapes the workspace/);
  await page.close();
});

test("audit: the ledger filtered by actor and by task", async () => {
  const page = await openPage("#/audit");
  await page.locator("table.audit tbody tr").first().waitFor();
  await page.selectOption("#audit-actor", "operator");
  await page.waitForURL(/actor=operator/);
  await eventually("operator rows", async () => (await page.locator("table.audit tbody tr").count()) > 0);
  const actors = await page.locator("table.audit tbody tr").evaluateAll((rows) => rows.map((row) => row.dataset.actor));
  assert.deepEqual([...new Set(actors)], ["operator"]);
  const actions = await page.locator("table.audit tbody tr").evaluateAll((rows) => rows.map((row) => row.dataset.action));
  assert.ok(actions.includes("file_uploaded"), actions.join(", "));

  const { tasks } = await (await context.request.get(server.base + "/api/tasks?limit=1000")).json();
  const first = tasks.find((task) => task.prompt === "Update notes.txt with the new plan");
  await page.selectOption("#audit-actor", "");
  await page.fill("#audit-task", first.id);
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(new RegExp(`task_id=${first.id}`));
  await eventually("task rows", async () => {
    const links = await page.locator("table.audit tbody tr td:nth-child(4)").allTextContents();
    return links.length > 0 && links.every((text) => text === first.id);
  });
  const taskActions = await page.locator("table.audit tbody tr").evaluateAll((rows) => rows.map((row) => row.dataset.action));
  assert.ok(taskActions.some((action) => /approv/.test(action)), taskActions.join(", "));
  await screenshot(page, "audit.png");
  await page.close();
});

test("a narrow window: no horizontal scrolling, focus rings on the card's buttons", async () => {
  const narrow = await context.newPage();
  await narrow.setViewportSize({ width: 390, height: 800 });
  fs.writeFileSync(workspaceFile("notes.txt"), PROPOSED);
  const task = await createTaskViaApi("A pending card on a phone-sized window");
  await pendingApprovalFor(task.id);
  await narrow.goto(server.base + "/#/approvals");
  const card = narrow.locator(`article.card[data-task-id="${task.id}"]`);
  await card.waitFor();
  // notes.txt already holds exactly the proposed text: the card says nothing changes.
  await textMatches(card, /No change on disk/);
  const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scrolling on a narrow window (overflow ${overflow}px)`);
  await screenshot(narrow, "inbox-narrow.png");
  // Keyboard: the approve button is reachable with Tab and shows a focus ring.
  await narrow.locator(`article.card[data-task-id="${task.id}"] button.approve`).focus();
  const outline = await narrow.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none");
  await narrow.close();
});

test("a richer run: denial, a long result collapsed, a create card with content, an edit with a diff", async () => {
  const bigLines = Array.from({ length: 60 }, (_, index) => `line ${index + 1}`).join("\n") + "\n";
  const rich = tempTree({ "big.txt": bigLines, "greeting.txt": "hi there\n" });
  fs.writeFileSync(path.join(rich.root, "secret.txt"), "TOP-SECRET\n");
  fs.writeFileSync(
    rich.script,
    JSON.stringify([
      { tool_calls: [{ name: "read_file", arguments: { path: "../secret.txt" } }] },
      { content: "That file is outside the workspace; reading the one inside instead.", tool_calls: [{ name: "read_file", arguments: { path: "big.txt" } }] },
      { tool_calls: [{ name: "write_file", arguments: { path: "summary.md", content: "# Summary\n\n60 lines.\n" } }] },
      { tool_calls: [{ name: "edit_file", arguments: { path: "greeting.txt", old_text: "hi there", new_text: "hello there" } }] },
      { content: "Wrote summary.md and fixed the greeting." },
    ]),
  );
  const richServer = await startServer(rich);
  const richContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  richContext.setDefaultTimeout(10000);
  const found = [];
  richContext.on("page", (page) => watchPage(page, richServer.base, found));
  try {
    const page = await richContext.newPage();
    await page.goto(richServer.loginUrl);
    await page.locator("#nav").waitFor({ state: "visible" });
    await createTaskViaForm(page, "Summarise big.txt into summary.md and fix the greeting", richServer.base);
    const timeline = page.locator(".timeline");
    await textMatches(timeline.locator('[data-type="tool_denied"]'), /escapes/);
    await textMatches(timeline.locator('li[data-name="read_file"][data-status="denied"]'), /read_file.*denied/s);
    const result = timeline.locator('[data-type="tool_result"] details.long');
    await textMatches(result.locator("summary"), /Output \(61 lines/);
    assert.equal(await result.getAttribute("open"), null, "long output starts collapsed");
    assert.equal(await result.locator("pre").isVisible(), false);

    // The create card shows the content; approve it from the timeline's link.
    await page.getByRole("link", { name: "Open the approval card" }).click();
    const create = page.locator("article.card");
    await textMatches(create.locator(".badge.scope-new_file, .label-create"), /^(new file|create)/);
    await textMatches(create.locator(".diff-row.diff-add .diff-code").first(), /# Summary/);
    await create.getByRole("button", { name: "Approve", exact: true }).click();
    await textMatches(create.locator(".outcome"), /^(Written|Done)/);

    // The edit card shows a diff.
    await page.getByRole("link", { name: /Approvals/ }).click();
    const edit = page.locator("article.card").first();
    await textMatches(edit.locator(".card-title"), /edit_file\s*greeting\.txt/);
    assert.deepEqual(await edit.locator(".diff-row.diff-del .diff-code").allTextContents(), ["-hi there"]);
    assert.deepEqual(await edit.locator(".diff-row.diff-add .diff-code").allTextContents(), ["+hello there"]);
    await screenshot(page, "card-edit-file.png");
    // Keyboard only: the actions are real buttons and links.
    await edit.getByRole("button", { name: "Approve", exact: true }).focus();
    await page.keyboard.press("Enter");
    await edit.getByRole("link", { name: /Follow the task/ }).focus();
    await page.keyboard.press("Enter");
    await textMatches(page.locator('.timeline [data-type="task_completed"]'), /Wrote summary\.md and fixed the greeting/);
    assert.equal(fs.readFileSync(path.join(rich.workspace, "summary.md"), "utf8"), "# Summary\n\n60 lines.\n");
    assert.equal(fs.readFileSync(path.join(rich.workspace, "greeting.txt"), "utf8"), "hello there\n");
    await timelineSeqs(page);
    await screenshot(page, "timeline-rich.png");
    await page.setViewportSize({ width: 390, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the timeline fits a narrow window (overflow ${overflow}px)`);
    await screenshot(page, "timeline-narrow.png");
    assert.deepEqual(found, []);
  } finally {
    await richContext.close();
    await richServer.stop();
    fs.rmSync(rich.root, { recursive: true, force: true });
  }
});

test("hidden characters in a model-written path are shown visibly, with the file it resolves to", async () => {
  // U+202E (right-to-left override) and U+200B (zero width space) in a folder name the
  // path then leaves with `..`: the file touched is notes.txt.
  const sneaky = "drafts\u202etxt.exe\u200b/../notes.txt";
  const hidden = tempTree({ "notes.txt": "old\n", "drafts\u202etxt.exe\u200b/keep.txt": "k\n" });
  fs.writeFileSync(
    hidden.script,
    JSON.stringify([
      { tool_calls: [{ name: "write_file", arguments: { path: sneaky, content: "new\n" } }] },
      { content: "done" },
    ]),
  );
  const hiddenServer = await startServer(hidden);
  const hiddenContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  hiddenContext.setDefaultTimeout(10000);
  const found = [];
  hiddenContext.on("page", (page) => watchPage(page, hiddenServer.base, found));
  try {
    const page = await hiddenContext.newPage();
    await page.goto(hiddenServer.loginUrl);
    await page.locator("#nav").waitFor({ state: "visible" });
    await createTaskViaForm(page, "Update the notes", hiddenServer.base);

    // Timeline: the escapes are visible and no raw override reaches the page text.
    const waiting = page.locator('.timeline [data-type="approval_required"]');
    // allTextContents does not wait, and the task page may be drawn again while its
    // events arrive (the line found first can be gone a moment later): ask until the
    // line drawn last shows both escapes.
    const escapes = ["\\u{202e}", "\\u{200b}"];
    const marksOf = (locator) => locator.locator(".invisible-char").allTextContents();
    await eventually("the timeline line's escapes", async () => {
      const marks = await marksOf(waiting.locator(".approval-line"));
      return JSON.stringify(marks) === JSON.stringify(escapes) ? marks : null;
    });
    await textMatches(waiting.locator(".resolves-to"), /resolves to\s*notes\.txt/);

    // The card: the title shows the escapes in their own style, and the resolved file.
    await page.getByRole("link", { name: "Open the approval card" }).click();
    // The task page shows its pending cards too: a card read right after the click can
    // be the task page's, and the next read can find none while the approval page loads
    // (CI saw `[]`). Wait for the approval page's own card.
    await page.waitForURL(/#\/approvals\/[^/]+$/);
    await page.getByRole("heading", { level: 1, name: "Approval", exact: true }).waitFor();
    const card = page.locator("main .cards > article.card");
    await card.waitFor();
    const title = card.locator(".card-title .target");
    assert.equal(await title.textContent(), "drafts\\u{202e}txt.exe\\u{200b}/../notes.txt");
    assert.deepEqual(await marksOf(title), escapes);
    const style = await title.locator(".invisible-char").first().evaluate((mark) => getComputedStyle(mark).borderStyle);
    assert.equal(style, "dashed", "escapes are styled apart from the path");
    await textMatches(card.locator(".resolves-to"), /resolves to\s*notes\.txt/);
    const pageText = await page.locator("main").evaluate((main) => main.textContent || "");
    assert.ok(!/[\u202a-\u202e\u2066-\u2069\u200b]/.test(pageText), "no raw bidi or zero-width character on the page");
    await screenshot(page, "card-hidden-characters.png");

    // Files: the folder name is shown with its escapes too.
    await page.goto(hiddenServer.base + "/#/files");
    const folder = page.locator("a.dir").first();
    await textMatches(folder, /drafts\\u\{202e\}txt\.exe\\u\{200b\}\//);
    assert.deepEqual(found, []);
  } finally {
    await hiddenContext.close();
    await hiddenServer.stop();
    fs.rmSync(hidden.root, { recursive: true, force: true });
  }
});
