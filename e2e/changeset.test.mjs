// Changesets (issue 27): one model turn asks for three writes; the console shows them
// as one review at #/changesets/ID — every card with its file and diff, and an
// "Approve all 3" button that sends three decisions, each with the fingerprint its card
// showed. A file changed after the review was drawn is not approved blind: that decision
// comes back "changed while you looked", the others are taken, and nothing runs until the
// last card is decided; then the writes run in the model's order.
// 1400 and 390 px, axe-core light and dark. Run with `node --test changeset.test.mjs`
// after `cargo build -p pp-cli`.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { assertNoHorizontalScroll, axeViolations, eventually, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const SCRIPT = [
  {
    tool_calls: [
      { name: "write_file", arguments: { path: "notes/a.md", content: "# A\nnew\n" } },
      { name: "write_file", arguments: { path: "notes/b.md", content: "# B\nrewritten\n" } },
      { name: "write_file", arguments: { path: "notes/c.md", content: "# C\nnew\n" } },
    ],
  },
  { content: "Wrote the three notes." },
];

let tree;
let app;

before(async () => {
  tree = tempTree({ "notes/b.md": "# B\nold\n" });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  app = await openConsole(tree);
});

after(async () => {
  await app?.close();
});

async function pendingOf(taskId, count) {
  return eventually(`${count} pending approvals of ${taskId}`, async () => {
    const response = await app.context.request.get(app.server.base + "/api/approvals?state=pending");
    const mine = (await response.json()).approvals.filter((view) => view.task_id === taskId);
    return mine.length === count ? mine : null;
  });
}

test("a turn's three writes are one review; Approve all sends each card's fingerprint and a changed file is asked again", async () => {
  const created = await app.context.request.post(app.server.base + "/api/tasks", { data: { prompt: "Write the notes" } });
  assert.equal(created.status(), 201, await created.text());
  const taskId = (await created.json()).id;
  const pending = await pendingOf(taskId, 3);
  const changeset = pending[0].changeset_id;
  assert.ok(changeset, "the rows name their changeset");
  assert.ok(pending.every((view) => view.changeset_id === changeset));

  const page = await app.context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  // The inbox groups the turn's three rows and links to the review.
  await page.goto(`${app.server.base}/#/approvals`);
  const group = page.locator(`.inbox-changeset[data-changeset-id="${changeset}"]`);
  await group.waitFor();
  assert.equal(await group.locator(".inbox-row").count(), 3);
  await group.getByRole("link", { name: "Review all 3 together" }).click();
  await page.waitForURL(new RegExp(`#/changesets/${changeset}$`));
  await page.getByRole("heading", { name: "Review the changes together" }).waitFor();
  const cards = page.locator("article.card");
  await eventually("three cards", async () => (await cards.count()) === 3);
  const approveAll = page.getByRole("button", { name: "Approve all 3" });
  await approveAll.waitFor();
  assert.match(await page.locator(".changeset-summary").textContent(), /3 calls asked for together/);
  assert.deepEqual(await page.evaluate(() => document.querySelectorAll("[data-approval-id]").length >= 3), true);
  await screenshot(page, "changeset-1400.png");
  assert.deepEqual(await axeViolations(page), [], "axe-core, light, 1400 px");
  await page.emulateMedia({ colorScheme: "dark" });
  assert.deepEqual(await axeViolations(page), [], "axe-core, dark, 1400 px");
  await page.setViewportSize({ width: 390, height: 844 });
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), [], "axe-core, dark, 390 px");
  await page.emulateMedia({ colorScheme: "light" });
  assert.deepEqual(await axeViolations(page), [], "axe-core, light, 390 px");
  await screenshot(page, "changeset-390.png");
  await page.setViewportSize({ width: 1400, height: 900 });

  // b.md changes after the review was drawn: its decision must not go through blind.
  fs.writeFileSync(path.join(tree.workspace, "notes/b.md"), "# B\nedited by hand\n");
  await approveAll.click();
  const result = page.locator(".changeset-result");
  await textMatches(result, /2 of 3 approved/);
  assert.match(await result.textContent(), /notes\/b\.md: the file changed while you looked/);
  assert.ok(!fs.existsSync(path.join(tree.workspace, "notes/a.md")), "nothing runs before the last decision");

  // The review now offers the one call left, shown against the file as it is now.
  const last = page.getByRole("button", { name: "Approve the 1 pending call" });
  await last.waitFor();
  assert.match(await page.locator(".changeset-warning").textContent(), /changed since the request/);
  await last.click();
  await eventually("the task completed", async () => {
    const response = await app.context.request.get(`${app.server.base}/api/tasks/${taskId}`);
    return (await response.json()).state === "completed";
  });
  assert.equal(fs.readFileSync(path.join(tree.workspace, "notes/a.md"), "utf8"), "# A\nnew\n");
  assert.equal(fs.readFileSync(path.join(tree.workspace, "notes/b.md"), "utf8"), "# B\nrewritten\n");
  assert.equal(fs.readFileSync(path.join(tree.workspace, "notes/c.md"), "utf8"), "# C\nnew\n");
  const changes = await (await app.context.request.get(`${app.server.base}/api/tasks/${taskId}/changes`)).json();
  assert.deepEqual(changes.changes.map((change) => change.path), ["notes/a.md", "notes/b.md", "notes/c.md"], "written in the model's order");
  await page.close();
  assert.deepEqual(app.problems.splice(0), []);
});
