// The new effects through the real tools (issue 14): a scripted task renames a file with
// `move_file` and then asks to run a shell script with `run_command`. In the console the
// move's card says "Rename a → b", approving it moves the file on disk and the card ends
// with the server's outcome; the command's card shows the exact argv, the script, the
// working directory and the limits (and "NOT confined" exactly when the server says the
// command would run without its sandbox); a delete's card shows its size and first lines,
// and once approved Changes on disk lists it (and the move as `old → new`), and Revert
// brings the file back.
// 390 px and axe-core on the task page with the command card. Run with
// `node --test effects.test.mjs` after `cargo build -p pp-cli`.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { assertNoHorizontalScroll, axeViolations, eventually, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const SCRIPT_TEXT = "ls -la\necho 'two  spaces'";
const TODO = "# Todo\n- [ ] milk\n";
/** Every task: rename the scan, a shell script in `inbox`, delete the old list, answer. */
const SCRIPT = [
  { tool_calls: [{ name: "move_file", arguments: { from: "inbox/scan.txt", to: "inbox/2026-11 invoice.txt" } }] },
  { tool_calls: [{ name: "run_command", arguments: { command: "sh", args: ["-c", SCRIPT_TEXT], cwd: "inbox" } }] },
  { tool_calls: [{ name: "delete_file", arguments: { path: "old/todo.md" } }] },
  { content: "Renamed the scan and deleted the old list." },
];

let tree;
let app;

before(async () => {
  tree = tempTree({ "inbox/scan.txt": "ACME invoice 2026-11\n", "old/todo.md": TODO });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  // Where the kernel has no Landlock, the shell is offered only when allowed unconfined:
  // then every card must say so. Where Landlock works, this changes nothing.
  fs.mkdirSync(path.join(tree.config, "pocketpilot"), { recursive: true });
  fs.writeFileSync(path.join(tree.config, "pocketpilot", "pocketpilot.toml"), "[shell]\nallow_unconfined = true\n");
  app = await openConsole(tree);
});

afterEach(async () => {
  const response = await app.context.request.get(app.server.base + "/api/tasks");
  for (const task of (await response.json()).tasks) {
    if (["queued", "running", "waiting_approval"].includes(task.state)) {
      await app.context.request.post(`${app.server.base}/api/tasks/${task.id}/cancel`);
    }
  }
  assert.deepEqual(app.problems.splice(0), []);
});

after(async () => {
  await app?.close();
});

/** The full card (the list's rows are for triage) of `taskId`'s pending `tool` call. */
async function pendingFor(taskId, tool) {
  const row = await eventually(`a pending ${tool} approval for ${taskId}`, async () => {
    const response = await app.context.request.get(app.server.base + "/api/approvals?state=pending");
    const { approvals } = await response.json();
    return approvals.find((view) => view.task_id === taskId && view.tool === tool);
  });
  return (await app.context.request.get(`${app.server.base}/api/approvals/${row.id}`)).json();
}

test("a rename approved on its card moves the file; the command card shows argv, script, cwd, limits; a delete approved and reverted; Changes on disk lists both", async () => {
  const created = await app.context.request.post(app.server.base + "/api/tasks", { data: { prompt: "Name the scan after its invoice" } });
  assert.equal(created.status(), 201, await created.text());
  const taskId = (await created.json()).id;

  const move = await pendingFor(taskId, "move_file");
  assert.equal(move.label, "move");
  assert.equal(move.destination, "inbox/2026-11 invoice.txt");
  const page = await app.context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(`${app.server.base}/#/approvals/${move.id}`);
  const moveCard = page.locator(`article.card[data-approval-id="${move.id}"]`);
  await moveCard.waitFor();
  assert.equal((await moveCard.locator(".effect-move .effect-line").textContent()).trim(), "Rename inbox/scan.txt → inbox/2026-11 invoice.txt");
  assert.equal(await moveCard.locator(".badge.label-move").textContent(), "rename");
  await moveCard.getByRole("button", { name: "Approve", exact: true }).click();
  await textMatches(moveCard.locator(".outcome"), /2026-11 invoice\.txt/);
  assert.equal(await moveCard.getAttribute("data-outcome"), "done");
  assert.ok(fs.existsSync(path.join(tree.workspace, "inbox/2026-11 invoice.txt")), "the file is at its new name");
  assert.ok(!fs.existsSync(path.join(tree.workspace, "inbox/scan.txt")), "and no longer at the old one");

  const run = await pendingFor(taskId, "run_command");
  assert.deepEqual(run.command.argv, ["sh", "-c", SCRIPT_TEXT]);
  assert.equal(run.command.shell, true);
  await page.goto(`${app.server.base}/#/tasks/${encodeURIComponent(taskId)}`);
  const runCard = page.locator(`article.card[data-approval-id="${run.id}"]`).first();
  await runCard.waitFor();
  assert.deepEqual(await runCard.locator(".argv .arg-value").allTextContents(), ["sh", "-c", "ls -la\\u{a}echo 'two  spaces'"]);
  assert.deepEqual(await runCard.locator(".script-lines li").allTextContents(), ["ls -la", "echo 'two  spaces'"]);
  assert.match(await runCard.locator(".shell-note").textContent(), /^Runs a shell script/);
  const facts = await runCard.locator(".command-facts").textContent();
  assert.match(facts, new RegExp(`Working directory${run.command.cwd}`));
  assert.match(facts, new RegExp(`wall-clock timeout ${run.command.limits.timeout_secs} s`));
  assert.match(facts, new RegExp(`memory ${run.command.limits.memory_mb} MiB`));
  // The banner is there exactly when the server says the command runs unconfined.
  assert.equal(await runCard.locator(".unconfined-banner").count(), run.command.confined ? 0 : 1, `confined: ${run.command.confined}`);
  assert.match(facts, run.command.confined ? /Sandboxconfined \(Landlock\)/ : /SandboxNOT confined/);
  await screenshot(page, "effects-task-1400.png");

  await page.setViewportSize({ width: 390, height: 844 });
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), [], "axe-core on the task page with the command card at 390 px");
  await page.setViewportSize({ width: 1400, height: 900 });

  // Reject the command (nothing runs); the task answers and the change log has the move.
  await runCard.getByRole("button", { name: "Reject…" }).click();
  await runCard.getByRole("button", { name: "Reject call" }).click();
  await textMatches(runCard.locator(".outcome"), /Not run — rejected/);
  const row = page.locator('li.change[data-kind="moved"]');
  await eventually("the moved row", async () => (await row.count()) === 1);
  assert.equal(await row.locator(".change-move").textContent(), "inbox/scan.txt → inbox/2026-11 invoice.txt");
  assert.equal(await row.locator("a.change-path").textContent(), "inbox/2026-11 invoice.txt");

  // The delete: its size and first lines on the card; approved, the file is gone, the
  // change log has a deleted row, and Revert brings the file back.
  const del = await pendingFor(taskId, "delete_file");
  const delCard = page.locator(`article.card[data-approval-id="${del.id}"]`).first();
  await delCard.waitFor();
  assert.equal((await delCard.locator(".effect-delete .effect-line").textContent()).trim(), `Delete old/todo.md (${TODO.length} B)`);
  assert.deepEqual((await delCard.locator(".diff-row.diff-del .diff-code").allTextContents()).map((line) => line.replace(/^-/, "")), ["# Todo", "- [ ] milk"]);
  await delCard.getByRole("button", { name: "Approve", exact: true }).click();
  await eventually("the file deleted", () => !fs.existsSync(path.join(tree.workspace, "old/todo.md")));
  const deleted = page.locator('li.change[data-kind="deleted"]');
  await eventually("the deleted row", async () => (await deleted.count()) === 1);
  assert.equal(await deleted.locator("code.change-path").textContent(), "old/todo.md");
  await deleted.locator("button.revert").click();
  assert.equal(await deleted.locator(".revert-confirm p").textContent(), "Revert restores old/todo.md, which this task deleted.");
  await deleted.getByRole("button", { name: "Revert now" }).click();
  await eventually("the file restored", () => fs.existsSync(path.join(tree.workspace, "old/todo.md")));
  assert.equal(fs.readFileSync(path.join(tree.workspace, "old/todo.md"), "utf8"), TODO);
  await textMatches(page.locator('li.change[data-kind="deleted"] .change-result'), /Reverted: old\/todo\.md is restored\./);
  await page.close();
});
