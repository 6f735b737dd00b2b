// End-to-end test of the console's schedules page: a real `pocketpilot serve` (scripted
// model: every task wants to write report.txt) and headless Chromium. A schedule is
// created through the form (a bad cron expression is refused inline, naming the field
// and token), its next fire time is shown in its zone and the browser's, "Run now"
// fires it, the write waits (nothing on disk), the badge counts it, and the person
// approves it from the inbox, whose card says which schedule it came from. Accessible
// (axe-core: nothing serious or critical) and without horizontal scrolling at 390 px.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import {
  assertNoHorizontalScroll,
  axeViolations,
  badgeCount,
  eventually,
  openConsole,
  screenshot,
  tempTree,
  textMatches,
} from "./harness.mjs";

const SCRIPT = [
  { tool_calls: [{ name: "write_file", arguments: { path: "report.txt", content: "3 invoices\n" } }] },
  { content: "Wrote the report." },
];

let tree;
let opened;

before(async () => {
  tree = tempTree({ "notes.txt": "hi\n" });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  opened = await openConsole(tree);
});

afterEach(() => {
  assert.deepEqual(opened.problems.splice(0), []);
});

after(async () => {
  await opened?.close();
});

test("schedules: create (errors inline), run now, approve from the badge; 390 px; axe", async () => {
  const page = await opened.context.newPage();
  await page.goto(opened.server.base + "/#/schedules");
  await page.locator(".schedules:not([aria-busy])").waitFor();
  assert.equal(await page.locator('#nav a[data-route="schedules"]').getAttribute("aria-current"), "page");
  await textMatches(page.locator(".schedules .empty"), /No schedules yet/);

  // A bad expression: the server's invalid_cron, next to the cron field.
  await page.getByLabel("Name").fill("weekly-invoices");
  await page.getByLabel("Cron expression").fill("0,15,99 * * * *");
  await page.getByLabel("Time zone").fill("Europe/Berlin");
  await page.getByLabel("Prompt").fill("Summarise last week's invoices into report.txt");
  await page.getByRole("button", { name: "Add schedule" }).click();
  await textMatches(page.locator("#schedule-cron-error"), /minute `99`/);
  assert.equal(await page.getByLabel("Cron expression").getAttribute("aria-invalid"), "true");
  // An unknown zone: next to the zone field.
  await page.getByLabel("Cron expression").fill("0 9 * * 1");
  await page.getByLabel("Time zone").fill("Mars/Olympus");
  await page.getByRole("button", { name: "Add schedule" }).click();
  await textMatches(page.locator("#schedule-zone-error"), /Mars\/Olympus/);
  await page.getByLabel("Time zone").fill("Europe/Berlin");
  await page.getByRole("button", { name: "Add schedule" }).click();

  const card = page.locator('section.schedule[data-schedule="weekly-invoices"]');
  await card.waitFor();
  await textMatches(card.locator(".badge"), /enabled/);
  // Monday 09:00 in Berlin, shown in the schedule's zone.
  await textMatches(card.locator(".next-fire-zone"), /09:00/);
  await screenshot(page, "schedules.png");

  // Disable and enable again.
  await card.getByRole("button", { name: "Disable weekly-invoices" }).click();
  await textMatches(page.locator('section.schedule[data-schedule="weekly-invoices"] .badge').first(), /disabled/);
  await page.getByRole("button", { name: "Enable weekly-invoices" }).click();
  await textMatches(page.locator('section.schedule[data-schedule="weekly-invoices"] .badge').first(), /enabled/);

  // Run now: a task started by the scheduler; its write waits, nothing on disk.
  assert.equal(await badgeCount(page), 0);
  await page.getByRole("button", { name: "Run now: weekly-invoices" }).click();
  await textMatches(page.locator(".form-status .notice-ok"), /Fired weekly-invoices: task t_/);
  const taskId = (await page.locator(".form-status .notice-ok a").textContent()).trim();
  await eventually("the badge counts the scheduled write", async () => (await badgeCount(page)) === 1);
  assert.equal(fs.existsSync(path.join(tree.workspace, "report.txt")), false, "nothing written before approval");

  // The schedule's recent tasks list it.
  await page.getByRole("button", { name: "Recent tasks of weekly-invoices" }).click();
  await textMatches(page.locator(".schedule-tasks"), new RegExp(taskId));

  // Readable at 390 px, accessible.
  await page.setViewportSize({ width: 390, height: 844 });
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "schedules-390.png");
  await page.setViewportSize({ width: 1280, height: 860 });

  // Approve from the badge: the inbox card says where it came from.
  await page.getByRole("link", { name: /Approvals/ }).click();
  const approval = page.locator(`article.card[data-task-id="${taskId}"]`);
  await textMatches(approval.locator(".card-origin"), /From: schedule\s*weekly-invoices/);
  await approval.locator("button.approve").click();
  await eventually("the badge drops", async () => (await badgeCount(page)) === 0);
  await eventually("the file is written after approval", async () => fs.existsSync(path.join(tree.workspace, "report.txt")));
  assert.equal(fs.readFileSync(path.join(tree.workspace, "report.txt"), "utf8"), "3 invoices\n");

  // Remove it.
  await page.goto(opened.server.base + "/#/schedules");
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Remove weekly-invoices" }).click();
  await textMatches(page.locator(".schedules .empty"), /No schedules yet/);
  await page.close();
});
