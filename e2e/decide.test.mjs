// End-to-end tests of deciding in the console (issue 11): the one approval card with
// size badges, review-grade diffs, truthful outcomes (the stale scenario), structured
// edits with a live re-diff (the server's, issue 27), the decisions panel of a task page, keyboard decisions,
// notifications, 390 px and axe-core. Run with `node --test decide.test.mjs` after
// `cargo build -p pp-cli`. Screenshots land in target/e2e-screenshots/decide-*.png.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import {
  assertNoHorizontalScroll,
  axeViolations,
  eventually,
  openConsole,
  screenshot,
  tempTree,
  textMatches,
} from "./harness.mjs";

/** The todo file: front matter (`---` lines) and a line starting with `--`. */
const TODO = "---\ntitle: Todo\n---\n# Todo\n\n- [ ] Buy milk\n- [ ] Call Bob\n-- old note\n- [ ] Water the plants\n";
const OLD_TEXT = "- [ ] Call Bob\n-- old note\n";
const NEW_TEXT = "- [x] Call Bob\n++ new note\n- [ ] Ship the release\n";
/** A new report of 12 lines, shown in full (no "Content (12 lines…)" collapsing). */
const REPORT = Array.from({ length: 12 }, (_, i) => (i === 1 ? "---" : `Line ${i + 1} of the report`)).join("\n") + "\n";

/** Every task: an edit of notes/todo.md, then a new reports/summary.md, then an answer. */
const SCRIPT = [
  { tool_calls: [{ name: "edit_file", arguments: { path: "notes/todo.md", old_text: OLD_TEXT, new_text: NEW_TEXT } }] },
  { tool_calls: [{ name: "write_file", arguments: { path: "reports/summary.md", content: REPORT } }] },
  { content: "Both files are written." },
];

let tree;
let app;

before(async () => {
  tree = tempTree({ "notes/todo.md": TODO });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  app = await openConsole(tree);
});

afterEach(async () => {
  // Tests stay apart: a task a failed test left waiting is cancelled.
  const response = await app.context.request.get(app.server.base + "/api/tasks");
  for (const task of (await response.json()).tasks) {
    if (["queued", "running", "waiting_approval"].includes(task.state)) {
      await cancelTask(task.id);
    }
  }
  assert.deepEqual(app.problems.splice(0), []);
});

after(async () => {
  await app?.close();
});

const todoPath = () => path.join(tree.workspace, "notes/todo.md");

async function openPage(hash, viewport = { width: 1400, height: 900 }) {
  const page = await app.context.newPage();
  await page.setViewportSize(viewport);
  await page.goto(app.server.base + "/" + hash);
  await page.locator("#nav").waitFor({ state: "visible" });
  return page;
}

async function startTask(prompt) {
  const response = await app.context.request.post(app.server.base + "/api/tasks", { data: { prompt } });
  assert.equal(response.status(), 201, await response.text());
  return (await response.json()).id;
}

/** The full card (the list's rows are for triage) of `taskId`'s pending `tool` call. */
async function pendingFor(taskId, tool) {
  const row = await eventually(`a pending ${tool} approval for ${taskId}`, async () => {
    const response = await app.context.request.get(app.server.base + "/api/approvals?state=pending");
    const { approvals } = await response.json();
    return approvals.find((view) => view.task_id === taskId && view.tool === tool);
  });
  return (await app.context.request.get(`${app.server.base}/api/approvals/${row.id}`)).json();
}

async function approvalView(id) {
  const response = await app.context.request.get(`${app.server.base}/api/approvals/${id}`);
  return response.json();
}

async function cancelTask(id) {
  await app.context.request.post(`${app.server.base}/api/tasks/${id}/cancel`);
}

/**
 * The task page with its "Needs your decision" panel. The task page (timeline.js)
 * mounts `renderDecisions`; where it does not (yet), the test mounts the panel itself
 * at the top of the page, exactly as the task page would.
 */
async function openTaskWithDecisions(taskId, viewport) {
  const page = await openPage("#/tasks/" + encodeURIComponent(taskId), viewport);
  await page.locator(".timeline").first().waitFor();
  if ((await page.locator("#decisions").count()) === 0) {
    await page.evaluate(async (id) => {
      const { renderDecisions } = await import("/assets/decisions.js");
      const slot = document.createElement("div");
      document.querySelector("#view .page").prepend(slot);
      renderDecisions(slot, id, {});
    }, taskId);
  }
  await page.locator("#decisions article.card").first().waitFor();
  return page;
}

test("diff: a deleted `--` line and an added `++` line are a deletion and an addition, with line numbers and word highlights", async () => {
  const task = await startTask("Tick off Bob in the todo list");
  const view = await pendingFor(task, "edit_file");
  const page = await openPage("#/approvals/" + view.id);
  const card = page.locator(`article.card[data-approval-id="${view.id}"]`);
  await card.waitFor();
  const deleted = await card.locator(".diff-row.diff-del .diff-code").allTextContents();
  const added = await card.locator(".diff-row.diff-add .diff-code").allTextContents();
  assert.ok(deleted.includes("--- old note"), `"-- old note" is a deletion: ${JSON.stringify(deleted)}`);
  assert.ok(added.includes("+++ new note"), `"++ new note" is an addition: ${JSON.stringify(added)}`);
  assert.equal(await card.locator(".diff-row.diff-file").count(), 0, "no line of the hunk became a file header");
  // Old and new line numbers: "-- old note" is line 8 of the file.
  const numbers = await card.locator(".diff-row.diff-del").evaluateAll((rows) => rows.map((row) => row.querySelector(".diff-ln").textContent));
  assert.ok(numbers.includes("8"), `old line numbers shown: ${numbers}`);
  // Word highlights: "[ ]" → "[x]" marks the changed word only.
  const words = await card.locator(".diff-row.diff-add ins.diff-word").allTextContents();
  assert.ok(words.includes("x"), `word-level highlight: ${JSON.stringify(words)}`);
  // Split view side by side, and back.
  await card.getByRole("button", { name: "Split" }).click();
  await card.locator("table.diff-split").waitFor();
  await screenshot(page, "decide-split-1400.png");
  await card.getByRole("button", { name: "Unified" }).click();
  await card.locator("table.diff-unified").waitFor();

  // Expandable context: a whole-file diff folds long unchanged runs behind a button.
  const rows = await page.evaluate(async () => {
    const { diffTexts, renderDiffView } = await import("/assets/diff.js");
    const old = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    const view = renderDiffView({ lines: diffTexts(old, old.replace("line 20\n", "line twenty\n")).lines });
    view.id = "expand-probe";
    document.querySelector("#view").append(view);
    return view.querySelectorAll("tr.diff-row").length;
  });
  const probe = page.locator("#expand-probe");
  assert.equal(await probe.locator(".diff-expand").count(), 2, "unchanged runs before and after the change are folded");
  await textMatches(probe.locator(".diff-expand").first(), /Show 16 unchanged lines/);
  await probe.locator(".diff-expand").first().click();
  assert.equal(await probe.locator("tr.diff-row").count(), rows + 15, "the 16 lines replace their button");
  await page.close();
  await cancelTask(task);
});

test("stale: a card drawn after the file changed says so and, approved, runs against the file as it is now; a change after the card was drawn answers 409 and redraws it", async () => {
  fs.writeFileSync(todoPath(), TODO);
  const task = await startTask("Update my todo list");
  const view = await pendingFor(task, "edit_file");
  // Someone edits the file while the approval waits.
  fs.writeFileSync(todoPath(), TODO.replace("Buy milk", "Buy oat milk"));
  const page = await openPage("#/approvals/" + view.id);
  const card = page.locator(`article.card[data-approval-id="${view.id}"]`);
  await card.waitFor();
  const fresh = await approvalView(view.id);
  assert.equal(fresh.precheck.status, "changed", "the server saw the change");
  await textMatches(card.locator(".current-warning"), /The file changed since the agent asked/);
  // The diff shown is the one against the file as it is now ("oat milk" is context).
  await textMatches(card.locator(".card-preview h3"), /^What changes against the file as it is now$/);
  await textMatches(card.locator(".diff-table"), /Buy oat milk/);
  await screenshot(page, "decide-stale-warning.png");
  // Then it changes again while the person looks: the approve answers 409, nothing runs,
  // and the card shows the file as it is now.
  fs.writeFileSync(todoPath(), TODO.replace("Buy milk", "Buy soy milk"));
  await card.getByRole("button", { name: "Approve against the file as it is now" }).click();
  await textMatches(card.locator(".card-status"), /The file changed while you were looking — here is how it is now/);
  await textMatches(card.locator(".diff-table"), /Buy soy milk/);
  assert.equal(await card.getAttribute("data-state"), "pending");
  assert.equal(fs.readFileSync(todoPath(), "utf8"), TODO.replace("Buy milk", "Buy soy milk"), "nothing was written");
  // Approved after seeing the current state, the call runs against it.
  await card.getByRole("button", { name: "Approve against the file as it is now" }).click();
  await textMatches(card.locator(".outcome"), /^Edited notes\/todo\.md/, 20000);
  assert.doesNotMatch(await card.textContent(), /You approved this call|Not run/);
  const written = fs.readFileSync(todoPath(), "utf8");
  assert.match(written, /Buy soy milk/);
  assert.match(written, /\+\+ new note/);
  await page.close();
  await cancelTask(task);
});

test("decisions panel on the task page: approve inline, the outcome is what was written, focus moves to the next card", async () => {
  fs.writeFileSync(todoPath(), TODO);
  const task = await startTask("Tidy my todo list and write a summary");
  await pendingFor(task, "edit_file");
  const page = await openTaskWithDecisions(task);
  const panel = page.locator("#decisions");
  await textMatches(panel.locator("h2"), /Needs your decision/);
  await textMatches(panel.locator(".key-hint"), /a approve · r reject · e edit/);
  const card = panel.locator('article.card[data-state="pending"]').first();
  await textMatches(card.locator(".badge.scope, .badge.risk"), /edit|risk/);
  await screenshot(page, "decide-task-panel-1400.png");
  const first = await card.getAttribute("data-approval-id");
  await card.getByRole("button", { name: "Approve", exact: true }).click();
  const decided = panel.locator(`article.card[data-approval-id="${first}"]`);
  await textMatches(decided.locator(".outcome"), /^Edited notes\/todo\.md \(\d+ B\)/, 20000);
  assert.doesNotMatch(await decided.textContent(), /You approved this call/);
  assert.match(fs.readFileSync(todoPath(), "utf8"), /\+\+ new note/);
  // The next call (the new report) appears in the panel and gets the focus.
  const next = panel.locator('article.card[data-state="pending"]');
  await next.first().waitFor();
  await textMatches(next.first().locator(".card-title"), /write_file/);
  await eventually("the new card has the focus", () => page.evaluate(() => document.activeElement?.matches('#decisions article.card[data-state="pending"]')));
  await textMatches(next.first().locator(".card-preview h3"), /New file content \(12 lines\)/);
  // The whole new content is on screen (no collapsed "Content (12 lines…)").
  assert.equal(await next.first().locator(".diff-row.diff-add").count(), 12);
  assert.equal(await next.first().locator("details.long").count(), 0);
  await screenshot(page, "decide-task-newfile-1400.png");
  // The task is cancelled while the write waits: the card ends "Not run — task cancelled".
  const writeCard = panel.locator(`article.card[data-approval-id="${await next.first().getAttribute("data-approval-id")}"]`);
  await cancelTask(task);
  await textMatches(writeCard.locator(".outcome"), /Not run — task cancelled/);
  assert.equal(fs.existsSync(path.join(tree.workspace, "reports/summary.md")), false);
  await page.close();
});

test("keyboard only: e edits with a live re-diff, Esc closes, a approves, r rejects with a reason, j/k move", async () => {
  fs.writeFileSync(todoPath(), TODO);
  const task = await startTask("Keyboard task");
  const view = await pendingFor(task, "edit_file");
  const page = await openPage("#/approvals");
  const card = page.locator(`article.card[data-approval-id="${view.id}"]`);
  await card.waitFor();
  await textMatches(page.locator(".key-hint"), /Esc back/);
  await page.keyboard.press("j");
  await eventually("a card has the focus", () => page.evaluate(() => document.activeElement?.matches("article.card")));
  // Focus this task's card (j moves through the pending cards in order).
  for (let i = 0; i < 10 && !(await page.evaluate((id) => document.activeElement?.dataset.approvalId === id, view.id)); i += 1) {
    await page.keyboard.press("j");
  }
  assert.equal(await page.evaluate(() => document.activeElement.dataset.approvalId), view.id);
  // Decision keys wait 700 ms after a card appears or gets the focus (type-ahead).
  await page.waitForTimeout(800);
  await page.keyboard.press("e");
  await card.locator(".edit-panel").waitFor();
  // The structured editor: the focus is in the new text; typing (an `a` included)
  // does not trigger the keys, and the re-diff follows the text.
  const newText = card.locator('textarea[data-arg="new_text"]');
  assert.equal(await newText.evaluate((element) => element === document.activeElement), true);
  await page.keyboard.press("Control+a");
  await page.keyboard.type("- [x] Call Bob\n++ newer note a\n");
  // The re-diff is the server's (POST …/precheck): against the file as it is now.
  await textMatches(card.locator(".rediff .rediff-summary"), /^Against the file as it is now: \+2 −2 lines\.$/);
  const added = await card.locator(".rediff .diff-row.diff-add .diff-code").allTextContents();
  assert.ok(added.includes("+++ newer note a"), JSON.stringify(added));
  assert.equal(await card.locator(".edit-panel").isVisible(), true, "typing an `a` in a field approves nothing");
  assert.equal(await card.getAttribute("data-state"), "pending");
  await page.keyboard.press("Escape");
  assert.equal(await card.locator(".edit-panel").isVisible(), false, "Esc closes the editor");
  await page.keyboard.press("a");
  await textMatches(card.locator(".outcome"), /^(Approved — running…|Edited|Written|Done)/);
  // The task goes on to the write: reject it with r, a reason and Enter.
  const write = await pendingFor(task, "write_file");
  const second = page.locator(`article.card[data-approval-id="${write.id}"]`);
  await second.waitFor();
  // After the decision the focus went to the next pending card, or to the heading.
  await eventually("focus on a pending card or the heading", () =>
    page.evaluate(() => document.activeElement?.matches('article.card[data-state="pending"], [data-focus-heading]')),
  );
  await second.focus();
  await page.waitForTimeout(800);
  await page.keyboard.press("r");
  await page.keyboard.type("Not now");
  await page.keyboard.press("Enter");
  await textMatches(second.locator(".outcome"), /Not run — rejected/);
  assert.equal((await approvalView(write.id)).reason, "Not now");
  await page.close();
  await cancelTask(task);
});

test("structured edit: path and content fields, live re-diff, a refusal that goes away once fixed", async () => {
  fs.writeFileSync(todoPath(), TODO);
  const task = await startTask("Write the summary");
  const view = await pendingFor(task, "edit_file");
  await app.context.request.post(`${app.server.base}/api/approvals/${view.id}/resolve`, { data: { decision: "reject", reason: "skip" } });
  const write = await pendingFor(task, "write_file");
  const page = await openPage("#/approvals/" + write.id);
  const card = page.locator(`article.card[data-approval-id="${write.id}"]`);
  await card.waitFor();
  await textMatches(card.locator(".badge.scope-new_file"), /new file \+12/);
  await card.getByRole("button", { name: "Edit…" }).click();
  const pathField = card.locator('input[data-arg="path"]');
  const content = card.locator('textarea[data-arg="content"]');
  assert.equal(await content.inputValue(), REPORT);
  await content.fill("# Summary\n\nAll done.\n");
  await textMatches(card.locator(".rediff .rediff-summary"), /^Creates a new file: \+3 lines\.$/);
  // An escape out of the workspace: the server refuses, the error is shown…
  await pathField.fill("../outside.md");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card.locator(".edit-error"), /refused/);
  // …and goes away as soon as the path is fixed.
  await pathField.fill("reports/final.md");
  await eventually("the stale error is gone", async () => (await card.locator(".edit-error").textContent()) === "");
  await textMatches(card.locator(".rediff"), /Writes to\s*reports\/final\.md/);
  await screenshot(page, "decide-structured-edit-1400.png");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card.locator(".outcome"), /^Written reports\/final\.md \(\d+ B\)/, 20000);
  assert.equal(fs.readFileSync(path.join(tree.workspace, "reports/final.md"), "utf8"), "# Summary\n\nAll done.\n");
  await page.close();
});

test("notifications: after the permission is granted, a new approval raises one; the title and favicon count it", async () => {
  await app.context.grantPermissions(["notifications"], { origin: app.server.base });
  // Record notifications instead of showing them (headless Chromium has no desktop).
  await app.context.addInitScript(() => {
    window.__notifications = [];
    const Real = window.Notification;
    class Recorder {
      static get permission() {
        return Real.permission;
      }
      static requestPermission() {
        return Real.requestPermission();
      }
      constructor(title, options) {
        window.__notifications.push({ title, body: options?.body });
      }
      addEventListener() {}
      close() {}
    }
    window.Notification = Recorder;
  });
  const page = await openPage("#/approvals");
  await page.locator("#approval-count").waitFor({ state: "attached" });
  assert.equal(await page.evaluate(() => Notification.permission), "granted");
  assert.equal(await page.locator("#enable-notifications").isVisible(), false, "no button once granted");
  // Let the first count (the baseline) arrive, then start a task.
  await eventually("baseline count", () => page.evaluate(() => document.querySelector('link[rel~="icon"]')?.dataset.count !== undefined));
  const before = Number(await page.locator("#approval-count").getAttribute("data-count"));
  const task = await startTask("Notify me about this one");
  await pendingFor(task, "edit_file");
  const notes = await eventually("a notification", async () => {
    const list = await page.evaluate(() => window.__notifications);
    return list.length ? list : null;
  });
  assert.match(notes[0].title, /needs your decision/);
  assert.match(notes[0].body, /edit_file notes\/todo\.md — Notify me about this one/);
  const count = before + 1;
  await eventually("title count", async () => (await page.title()) === `(${count}) PocketPilot`);
  const icon = await page.evaluate(() => document.querySelector('link[rel~="icon"]').getAttribute("href"));
  assert.match(decodeURIComponent(icon), new RegExp(`^data:image/svg\\+xml,<svg[^]*>${count}</text>`));
  await page.close();
  await cancelTask(task);
});

test("a browser that has not decided yet gets a button that asks for the permission", async () => {
  const page = await app.context.browser().newPage();
  // A fresh context: permission "default" is simulated, the request answers "granted".
  await page.addInitScript(() => {
    let permission = "default";
    class Fake {
      static get permission() {
        return permission;
      }
      static async requestPermission() {
        permission = "granted";
        return permission;
      }
    }
    window.Notification = Fake;
  });
  await page.goto(app.server.loginUrl);
  await page.locator("#nav").waitFor({ state: "visible" });
  const button = page.locator("#enable-notifications");
  await button.waitFor({ state: "visible" });
  await button.click();
  await button.waitFor({ state: "hidden" });
  await textMatches(page.locator("#notify-status"), /Notifications are on/);
  await page.context().close();
});

test("390 px and 1400 px: inbox and task page with a card fit, axe-core finds nothing serious", async () => {
  fs.writeFileSync(todoPath(), TODO);
  const task = await startTask("A long task prompt that should wrap nicely on a phone screen without pushing anything sideways");
  await pendingFor(task, "edit_file");
  for (const [name, viewport] of [
    ["390", { width: 390, height: 844 }],
    ["1400", { width: 1400, height: 900 }],
  ]) {
    const inbox = await openPage("#/approvals", viewport);
    await inbox.locator("article.card").first().waitFor();
    await inbox.locator("article.card .diff-table").first().waitFor();
    await assertNoHorizontalScroll(inbox);
    const card = inbox.locator("article.card").first();
    assert.ok((await card.evaluate((element) => element.getBoundingClientRect().right)) <= viewport.width, "the card fits the window");
    assert.equal(await card.getByRole("button", { name: /^Edit/ }).isVisible(), true);
    assert.deepEqual(await axeViolations(inbox), []);
    await screenshot(inbox, `decide-inbox-${name}.png`);
    await inbox.close();

    const taskPage = await openTaskWithDecisions(task, viewport);
    await assertNoHorizontalScroll(taskPage);
    assert.deepEqual(await axeViolations(taskPage), []);
    await screenshot(taskPage, `decide-task-${name}.png`);
    // The split view falls back to one column on a phone.
    await taskPage.locator("#decisions").getByRole("button", { name: "Split" }).first().click();
    await assertNoHorizontalScroll(taskPage);
    await taskPage.close();
  }
  await cancelTask(task);
});

test("a call whose old content is too large to keep says “cannot be undone” before the decision", async () => {
  const small = tempTree({ "notes/todo.md": TODO });
  fs.writeFileSync(small.script, JSON.stringify(SCRIPT));
  // Keep at most 10 bytes for a revert: the todo file (95 B) cannot be kept.
  fs.mkdirSync(path.join(small.config, "pocketpilot"), { recursive: true });
  fs.writeFileSync(path.join(small.config, "pocketpilot", "pocketpilot.toml"), "[revert]\nmax_bytes = 10\n");
  const other = await openConsole(small);
  try {
    const response = await other.context.request.post(other.server.base + "/api/tasks", { data: { prompt: "Edit a file I cannot get back" } });
    const task = (await response.json()).id;
    const view = await eventually("the pending edit", async () => {
      const list = await (await other.context.request.get(other.server.base + "/api/approvals")).json();
      return list.approvals.find((approval) => approval.task_id === task);
    });
    assert.equal(view.revertible, false);
    const page = await other.context.newPage();
    await page.goto(`${other.server.base}/#/approvals/${view.id}`);
    const card = page.locator(`article.card[data-approval-id="${view.id}"]`);
    await textMatches(card.locator(".badge.irreversible"), /^cannot be undone$/);
    await textMatches(card.locator(".irreversible-note"), /cannot be undone/);
    assert.deepEqual(other.problems, []);
  } finally {
    await other.close();
  }
});
