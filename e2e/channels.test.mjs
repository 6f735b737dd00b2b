// End-to-end test of the console's channels page: create a channel (its secret shown
// once, with a copy button), deliver with the CLI's `channels test`, see the delivery in
// the log appear live (no reload: accepted ones through the event stream, refused ones
// through the polling), approve the write it asks for from the approvals badge (nothing
// on disk before), disable, rotate and remove; accessible (axe-core) and usable at 390 px.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import {
  assertNoHorizontalScroll,
  axeViolations,
  badgeCount,
  cli,
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
      { tool_calls: [{ name: "write_file", arguments: { path: "form.txt", content: "Ada" } }] },
      { content: "filed" },
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

test("channels: create with the secret once, deliver with the CLI, see it, approve from the badge", async () => {
  const page = await context.newPage();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(server.base + "/#/channels");
  await page.locator("main h1").waitFor();
  assert.equal(await page.locator('#nav a[data-route="channels"]').getAttribute("aria-current"), "page");
  await page.getByLabel(/^Name/).fill("forms");
  await page.getByLabel(/^Template/).fill("File this submission: {{body}}");
  await page.getByRole("button", { name: "Add channel" }).click();

  const secretPanel = page.locator('.channel-secret[data-channel="forms"]');
  await secretPanel.waitFor();
  const secret = await secretPanel.locator("input.secret-value").inputValue();
  assert.match(secret, /^[0-9a-f]{64}$/);
  await secretPanel.getByRole("button", { name: "Copy secret" }).waitFor();
  await textMatches(secretPanel, /only time the secret is shown/);
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "channels-secret-390.png");

  // Shown once: a reload has the channel but not its secret.
  await page.reload();
  const panel = page.locator('section.channel[data-channel="forms"]');
  await panel.waitFor();
  assert.equal(await page.locator(".channel-secret").count(), 0);
  assert.doesNotMatch(await page.locator("main").textContent(), new RegExp(secret));

  // Deliver with the CLI, signed with the secret it reads on this machine.
  const sent = cli(tree, ["channels", "test", "forms", "--json", "--url", server.base, "--body", '{"name":"Ada"}']);
  assert.equal(sent.status, 0, sent.stderr);
  const { status, response } = JSON.parse(sent.stdout);
  assert.equal(status, 202);
  await eventually("the badge counts the webhook's write", async () => (await badgeCount(page)) === 1);
  assert.equal(fs.existsSync(path.join(tree.workspace, "form.txt")), false, "nothing written before approval");

  // The log is live: the accepted delivery shows up without a reload.
  const row = panel.locator('tr[data-status="accepted"]');
  await row.waitFor();
  await textMatches(row, new RegExp(response.task_id));
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "channels-delivered-390.png");

  // Approve from the badge.
  await page.locator('#nav a[data-route="approvals"]').click();
  const card = page.locator(`article.card[data-task-id="${response.task_id}"]`);
  await card.waitFor();
  await card.getByRole("button", { name: /^Approve/ }).first().click();
  await eventually("the write after approval", async () => fs.existsSync(path.join(tree.workspace, "form.txt")));
  assert.equal(fs.readFileSync(path.join(tree.workspace, "form.txt"), "utf8"), "Ada");
  await eventually("badge 0", async () => (await badgeCount(page)) === 0);

  // Disable: the CLI's delivery is refused like any bad one.
  await page.goto(server.base + "/#/channels");
  await panel.getByRole("button", { name: "Disable" }).click();
  await textMatches(panel.locator("h2"), /disabled/);
  const refused = cli(tree, ["channels", "test", "forms", "--json", "--url", server.base]);
  assert.equal(JSON.parse(refused.stdout).status, 401);
  // A refused delivery starts no task (no event): the polling brings it in, no reload.
  await panel.locator('tr[data-status="refused"]').waitFor({ timeout: 20000 });
  await textMatches(panel.locator('tr[data-status="refused"]').first(), /disabled/i);

  // Rotate shows a new secret once; remove empties the page.
  page.once("dialog", (dialog) => dialog.accept());
  await panel.getByRole("button", { name: "Rotate secret" }).click();
  const rotated = await page.locator('.channel-secret[data-channel="forms"] input.secret-value').inputValue();
  assert.match(rotated, /^[0-9a-f]{64}$/);
  assert.notEqual(rotated, secret);
  page.once("dialog", (dialog) => dialog.accept());
  await page.locator('section.channel[data-channel="forms"]').getByRole("button", { name: "Remove" }).click();
  await page.locator(".channels .empty").waitFor();
  await page.close();
});
