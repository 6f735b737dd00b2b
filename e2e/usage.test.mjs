// End-to-end test of the task page's token usage: the scripted model reports usage on
// each turn, `[model] prices` prices the `scripted` model, and the task page shows the
// tokens, their cached and reasoning parts, the model calls and the cost; it fits 390 px
// and axe-core finds nothing serious.

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

before(async () => {
  tree = tempTree({ "notes.txt": "hi\n" });
  fs.writeFileSync(
    tree.script,
    JSON.stringify([
      {
        tool_calls: [{ name: "read_file", arguments: { path: "notes.txt" } }],
        usage: { prompt_tokens: 1200000, completion_tokens: 4000, cached_tokens: 1000000 },
      },
      { content: "Your notes say hi.", usage: { prompt_tokens: 1300000, completion_tokens: 6000, reasoning_tokens: 2500 } },
    ]),
  );
  const config = path.join(tree.config, "pocketpilot");
  fs.mkdirSync(config, { recursive: true });
  fs.writeFileSync(
    path.join(config, "pocketpilot.toml"),
    '[model.prices.scripted]\nprompt = 2.0\ncompletion = 10.0\ncached = 0.5\ncurrency = "EUR"\n',
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

test("task page: tokens, cached and reasoning parts, model calls and cost; 390 px; axe", async () => {
  const created = await context.request.post(server.base + "/api/tasks", { data: { prompt: "what do my notes say?" } });
  assert.equal(created.status(), 201, await created.text());
  const task = await created.json();
  const done = await eventually("the task completes", async () => {
    const response = await context.request.get(`${server.base}/api/tasks/${task.id}`);
    const body = await response.json();
    return body.state === "completed" ? body : null;
  });
  // 1.5 M uncached × 2 + 1 M cached × 0.5 + 10,000 × 10, per million: 3.6 EUR.
  assert.equal(done.usage.total_tokens, 2510000);
  assert.equal(done.usage.cost.currency, "EUR");
  assert.ok(Math.abs(done.usage.cost.amount - 3.6) < 1e-9, JSON.stringify(done.usage));

  const page = await context.newPage();
  await page.goto(`${server.base}/#/tasks/${task.id}`);
  const usage = page.locator(".task-usage");
  await textMatches(
    usage,
    /2,510,000 tokens · prompt 2,500,000 \(1,000,000 cached\) · completion 10,000 \(2,500 reasoning\) · 2 model calls · about 3\.60 EUR/,
  );
  assert.deepEqual(await axeViolations(page), []);
  await page.setViewportSize({ width: 390, height: 844 });
  await assertNoHorizontalScroll(page);
  await screenshot(page, "task-usage-390.png");
  await page.close();
});
