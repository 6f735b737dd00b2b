// End-to-end test of the console's memory editor: view, save with the version, a
// conflicting save refused with a clear message while the typed text stays, then saved
// on top of the current memory; an agent's memory_write waiting on its approval card (a
// diff of memory.md) and appending once approved; accessible (axe-core: no serious or critical violation)
// and usable at 390 px.

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

let tree;
let server;
let context;
let opened;

function memoryFile() {
  return path.join(tree.home, "memory.md");
}

before(async () => {
  tree = tempTree({ "notes.txt": "hi\n" });
  // Every task the server runs asks to append to the memory.
  fs.writeFileSync(
    tree.script,
    JSON.stringify([
      { tool_calls: [{ name: "memory_write", arguments: { mode: "append", content: "prefers metric units" } }] },
      { content: "noted" },
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

test("memory: view, save with the version, a conflict keeps the typed text", async () => {
  const page = await context.newPage();
  await page.goto(server.base + "/#/memory");
  const editor = page.locator("#memory-content");
  await editor.waitFor();
  assert.equal(await editor.inputValue(), "");
  await textMatches(page.locator("#memory-version"), /No memory file yet/);
  assert.equal(await page.locator('#nav a[data-route="memory"]').getAttribute("aria-current"), "page");
  assert.deepEqual(await axeViolations(page), []);

  // Save: the file is written and the save is audited as the operator.
  await editor.fill("The user likes tea.\n");
  await page.getByRole("button", { name: "Save memory" }).click();
  await textMatches(page.locator(".notice-ok"), /Saved/);
  assert.equal(fs.readFileSync(memoryFile(), "utf8"), "The user likes tea.\n");
  await textMatches(page.locator("#memory-version"), /Version sha256:/);
  const audit = await (await context.request.get(`${server.base}/api/audit?action=memory_updated`)).json();
  assert.equal(audit.entries[0].actor, "operator");
  assert.equal(audit.entries[0].target, "memory.md");
  await screenshot(page, "memory.png");

  // Someone else saves meanwhile (the CLI, another tab): our save is refused, nothing is
  // written, and what we typed stays in the editor.
  fs.writeFileSync(memoryFile(), "Changed elsewhere.\n");
  await editor.fill("The user likes coffee.\n");
  await page.getByRole("button", { name: "Save memory" }).click();
  await textMatches(page.locator(".notice-error"), /Not saved: the memory changed since you opened it.*Your text is still in the editor/);
  assert.equal(await editor.inputValue(), "The user likes coffee.\n");
  assert.equal(fs.readFileSync(memoryFile(), "utf8"), "Changed elsewhere.\n");
  await textMatches(page.locator(".memory-current-text"), /Changed elsewhere\./);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "memory-conflict.png");

  // Having seen the current memory, saving again replaces it.
  await page.getByRole("button", { name: "Save memory" }).click();
  await textMatches(page.locator(".notice-ok"), /Saved/);
  assert.equal(fs.readFileSync(memoryFile(), "utf8"), "The user likes coffee.\n");
  await page.close();
});

test("memory at 390 px: no horizontal scrolling, still accessible", async () => {
  fs.writeFileSync(memoryFile(), "A long line without spaces: " + "x".repeat(300) + "\n");
  const page = await context.newPage();
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(server.base + "/#/memory");
  await page.locator("#memory-content").waitFor();
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "memory-narrow.png");
  await page.close();
});

test("memory_write waits on a card with a diff of memory.md; approving it appends", async () => {
  fs.writeFileSync(memoryFile(), "likes tea\n");
  const response = await context.request.post(server.base + "/api/tasks", { data: { prompt: "remember my units" } });
  assert.equal(response.status(), 201, await response.text());
  const task = await response.json();
  const page = await context.newPage();
  await page.goto(server.base + "/#/approvals");
  const card = page.locator(`article.card[data-task-id="${task.id}"]`);
  await card.waitFor();
  await textMatches(card.locator(".card-title"), /memory_write\s*memory\.md/);
  // An append is an edit of one added line (the size badge, not "high risk").
  await textMatches(card.locator(".badge.scope-edit"), /^edit \+1 −0$/);
  await textMatches(card.locator(".capability"), /memory:write/);
  assert.deepEqual(await card.locator(".diff-row.diff-add .diff-code").allTextContents(), ["+prefers metric units"]);
  assert.equal(fs.readFileSync(memoryFile(), "utf8"), "likes tea\n", "nothing written before the approval");
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "memory-card.png");
  await card.getByRole("button", { name: "Approve", exact: true }).click();
  await eventually("the memory appended", async () => fs.readFileSync(memoryFile(), "utf8") === "likes tea\nprefers metric units\n");
  await page.goto(server.base + "/#/memory");
  await eventually(
    "the editor shows it",
    async () => (await page.locator("#memory-content").inputValue()) === "likes tea\nprefers metric units\n",
  );
  await page.close();
});
