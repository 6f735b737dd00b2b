// End-to-end tests of issue 27's console side: every card tells the truth before and
// after the decision. Real `pocketpilot serve` tasks driven by a scripted model that asks
// for one call a turn: an edit of a file that then changes (`changed`), an edit whose
// text is then gone (`will_fail`), a write of identical content (`no_change`), a new
// file (`ready`) and a failing command (its exit code and output); `unavailable` and
// `precheck: null` come as fixtures mounted with card.js. Covered: the badge, words and
// buttons of every precheck status; `seen_fingerprint` both ways (approving a changed
// card after seeing it runs against the file as it is now; a change after the card was
// drawn answers 409 and the card is drawn again); an edited approve re-diffed by the
// server and shown as what ran (card and timeline); provenance with an untrusted
// webhook prompt quoted at 200 characters; the 700 ms key guard; the focus and Tab
// order; 1400 and 390 px, axe-core light and dark, no horizontal scroll, no innerHTML.
// Run with `node --test truth.test.mjs` after `cargo build -p pp-cli`. Screenshots land
// in target/e2e-screenshots/truth-*.png.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { ROOT, assertNoHorizontalScroll, axeViolations, eventually, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const TODO = "# Todo\n\n- [ ] Buy milk\n- [ ] Call Bob\n- [ ] Water the plants\n";
const OTHER = "# Other\n\n- [ ] Walk the dog\n";
const SAME = "Already like this.\n";
const REPORT = Array.from({ length: 12 }, (_, i) => `Line ${i + 1} of the report`).join("\n") + "\n";
/** The model's own text of the first turn: untrusted, shown quoted. */
const MODEL_TEXT = "I will tidy the todo list, then the other list, keep same.txt and write the report.";

/** Every task: five calls needing approval, one a turn, then an answer. */
const SCRIPT = [
  { content: MODEL_TEXT, tool_calls: [{ name: "edit_file", arguments: { path: "notes/todo.md", old_text: "- [ ] Call Bob\n", new_text: "- [x] Call Bob\n" } }] },
  { tool_calls: [{ name: "edit_file", arguments: { path: "notes/other.md", old_text: "- [ ] Walk the dog\n", new_text: "- [x] Walk the dog\n" } }] },
  { tool_calls: [{ name: "write_file", arguments: { path: "same.txt", content: SAME } }] },
  { tool_calls: [{ name: "write_file", arguments: { path: "reports/new.md", content: REPORT } }] },
  { tool_calls: [{ name: "run_command", arguments: { command: "sh", args: ["-c", "echo two words; exit 3"] } }] },
  { content: "Done." },
];

/** Which call of the script a card is, by tool and target. */
const STEPS = {
  edit: ["edit_file", "notes/todo.md"],
  other: ["edit_file", "notes/other.md"],
  same: ["write_file", "same.txt"],
  report: ["write_file", "reports/new.md"],
  command: ["run_command", null],
};

const VIEWPORTS = [
  ["1400", { width: 1400, height: 900 }],
  ["390", { width: 390, height: 844 }],
];

let tree;
let app;

before(async () => {
  tree = tempTree({ "notes/todo.md": TODO, "notes/other.md": OTHER, "same.txt": SAME });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
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

const ws = (name) => path.join(tree.workspace, name);

function resetFiles() {
  fs.writeFileSync(ws("notes/todo.md"), TODO);
  fs.writeFileSync(ws("notes/other.md"), OTHER);
  fs.writeFileSync(ws("same.txt"), SAME);
  fs.rmSync(ws("reports"), { recursive: true, force: true });
}

async function openPage(hash, viewport = { width: 1400, height: 900 }, scheme = "light") {
  const page = await app.context.newPage();
  await page.setViewportSize(viewport);
  await page.emulateMedia({ colorScheme: scheme });
  await page.goto(app.server.base + "/" + hash);
  await page.locator("#nav").waitFor({ state: "visible" });
  return page;
}

async function startTask(prompt) {
  const response = await app.context.request.post(app.server.base + "/api/tasks", { data: { prompt } });
  assert.equal(response.status(), 201, await response.text());
  return (await response.json()).id;
}

/**
 * The task's pending approval for `step` (STEPS), rejecting the earlier calls through
 * the API on the way.
 */
async function advanceTo(taskId, step) {
  const [tool, target] = STEPS[step];
  for (;;) {
    const view = await eventually(`a pending approval of ${taskId}`, async () => {
      const { approvals } = await (await app.context.request.get(app.server.base + "/api/approvals?state=pending")).json();
      return approvals.find((item) => item.task_id === taskId);
    });
    if (view.tool === tool && (!target || view.target === target)) {
      return view;
    }
    await resolveApi(view.id, { decision: "reject" });
    await eventually("the rejection recorded", async () => (await approvalView(view.id)).state !== "pending");
  }
}

async function approvalView(id) {
  return (await app.context.request.get(`${app.server.base}/api/approvals/${id}`)).json();
}

async function resolveApi(id, body) {
  return app.context.request.post(`${app.server.base}/api/approvals/${id}/resolve`, { data: body });
}

/** The task page with its decisions panel and every card of the set drawn from the full card. */
async function openTask(taskId, viewport, scheme) {
  const page = await openPage("#/tasks/" + encodeURIComponent(taskId), viewport, scheme);
  await page.locator("#decisions article.card").first().waitFor();
  return page;
}

const cardIn = (page, id) => page.locator(`#decisions article.card[data-approval-id="${id}"]`);

/** The resolve requests the page sends, with their bodies. */
function recordResolves(page) {
  const bodies = [];
  page.on("request", (request) => {
    if (/\/api\/approvals\/[^/]+\/resolve$/.test(new URL(request.url()).pathname)) {
      bodies.push({ id: new URL(request.url()).pathname.split("/")[3], body: JSON.parse(request.postData() || "{}") });
    }
  });
  return bodies;
}

/** Waits the key guard out (700 ms after a card appears or changes). */
const settle = (page) => page.waitForTimeout(800);

test("every precheck status on a card: changed, will_fail, no_change, ready — badge, words, buttons; 1400/390 px, axe light and dark; decided they run as shown", async () => {
  resetFiles();
  // Four tasks, each at another call (the earlier ones rejected through the API).
  const taskWillFail = await startTask("Tick off the dog");
  const willFail = await advanceTo(taskWillFail, "other");
  const taskChanged = await startTask("Tick off Bob");
  const changedView = await advanceTo(taskChanged, "edit");
  const taskSame = await startTask("Keep same.txt");
  const same = await advanceTo(taskSame, "same");
  const taskReport = await startTask("Write the report");
  const report = await advanceTo(taskReport, "report");
  // After the requests: the todo list changes (the edit still applies, to the file as
  // it is now) and the dog's line goes (the other edit cannot apply).
  fs.writeFileSync(ws("notes/todo.md"), TODO.replace("Buy milk", "Buy oat milk"));
  fs.writeFileSync(ws("notes/other.md"), "# Other\n\n- [x] Walked already\n");
  const fresh = await approvalView(changedView.id);
  assert.equal(fresh.precheck.status, "changed");
  assert.equal((await approvalView(willFail.id)).precheck.status, "will_fail");
  assert.equal((await approvalView(same.id)).precheck.status, "no_change");
  assert.equal((await approvalView(report.id)).precheck.status, "ready");

  /** Checks the page as every page: fits at 390 px, axe-core, a screenshot; then closes it. */
  const finishPage = async (page, status, name, scheme) => {
    if (name === "390") {
      await assertNoHorizontalScroll(page);
    }
    assert.deepEqual(await axeViolations(page), [], `axe-core on the ${status} card at ${name} px, ${scheme}`);
    if (scheme === "light" || status === "will_fail") {
      await screenshot(page, `truth-${status}-${name}-${scheme}.png`);
    }
    await page.close();
  };
  for (const [name, viewport] of VIEWPORTS) {
    for (const scheme of ["light", "dark"]) {
      // changed: the diff against the file as it is now, never the old one.
      let page = await openTask(taskChanged, viewport, scheme);
      const changed = cardIn(page, changedView.id);
      await changed.locator(".precheck-changed").waitFor();
      await textMatches(changed.locator(".card-preview h3"), /^What changes against the file as it is now$/);
      await textMatches(changed.locator(".card-preview .diff-table"), /Buy oat milk/);
      assert.equal(await changed.locator(".badge.status-changed").count(), 1);
      assert.equal(await changed.getByRole("button", { name: "Approve against the file as it is now" }).count(), 1);
      assert.equal(await changed.getByRole("button", { name: "Reject — ask the agent to redo it" }).count(), 1);
      await finishPage(page, "changed", name, scheme);

      // will_fail: prominent, with the tool's reason; Reject first and primary.
      page = await openTask(taskWillFail, viewport, scheme);
      const failing = cardIn(page, willFail.id);
      await textMatches(failing.locator(".precheck-will_fail .precheck-title"), /This call will fail if you approve it/);
      await textMatches(failing.locator(".precheck-will_fail .precheck-message"), /not found|no longer|old_text/i);
      await textMatches(failing.locator(".card-badges .badge.status-will_fail"), /^will fail$/);
      const buttons = await failing.locator(".card-actions button").allTextContents();
      assert.match(buttons[0], /^Reject/, `Reject comes first: ${JSON.stringify(buttons)}`);
      assert.ok(buttons.includes("Approve anyway — it will fail"), JSON.stringify(buttons));
      assert.match(await failing.locator(".card-actions button").first().getAttribute("class"), /danger-primary/);
      assert.equal(await failing.locator(".card-preview > .diff-view").count(), 0, "the request's diff is not shown as what happens");
      await finishPage(page, "will_fail", name, scheme);

      // no_change: said before deciding; no size badge, no "replaces whole file +0 −0".
      page = await openTask(taskSame, viewport, scheme);
      const unchanged = cardIn(page, same.id);
      await textMatches(unchanged.locator(".precheck-no_change"), /No change on disk — applying it leaves the file as it is/);
      await textMatches(unchanged.locator(".card-badges .badge.status-no_change"), /^no change$/);
      assert.doesNotMatch(await unchanged.locator(".card-badges").textContent(), /replaces whole file|\+0/);
      assert.equal(await unchanged.locator(".card-preview .diff-table").count(), 0);
      await finishPage(page, "no_change", name, scheme);

      // ready: a new file, its size from the precheck.
      page = await openTask(taskReport, viewport, scheme);
      const ready = cardIn(page, report.id);
      await textMatches(ready.locator(".badge.scope-new_file"), /^new file \+12$/);
      await textMatches(ready.locator(".card-preview h3"), /New file content \(12 lines\)/);
      assert.equal(await ready.getByRole("button", { name: "Approve", exact: true }).count(), 1);
      await finishPage(page, "ready", name, scheme);
    }
  }

  // Deciding: the changed card, approved after seeing the file as it is now, runs
  // against it; the approve sends the fingerprint the card showed.
  let page = await openTask(taskChanged);
  let sent = recordResolves(page);
  const changed = cardIn(page, changedView.id);
  await changed.locator(".precheck-changed").waitFor();
  await changed.getByRole("button", { name: "Approve against the file as it is now" }).click();
  await textMatches(changed.locator(".outcome"), /^Edited notes\/todo\.md/, 20000);
  assert.equal(fs.readFileSync(ws("notes/todo.md"), "utf8"), TODO.replace("Buy milk", "Buy oat milk").replace("- [ ] Call Bob", "- [x] Call Bob"));
  assert.equal(sent[0].body.seen_fingerprint, fresh.precheck.fingerprint);
  // Decided cards fold to their outcome line, with a control to unfold them.
  await eventually("the decided card folds", () => changed.evaluate((element) => element.classList.contains("collapsed")));
  assert.equal(await changed.locator(".card-body").isVisible(), false);
  await changed.getByRole("button", { name: "Show details" }).click();
  assert.equal(await changed.locator(".card-body").isVisible(), true);
  await page.close();

  // The failing one, rejected from its primary button: nothing ran.
  page = await openTask(taskWillFail);
  const failing = cardIn(page, willFail.id);
  await failing.locator(".card-actions button").first().click();
  await failing.getByRole("button", { name: "Reject call" }).click();
  await textMatches(failing.locator(".outcome"), /Not run — rejected/);
  assert.equal(fs.readFileSync(ws("notes/other.md"), "utf8"), "# Other\n\n- [x] Walked already\n");
  await page.close();

  // The no-op write, approved: it sends its fingerprint and leaves the file as it is.
  page = await openTask(taskSame);
  sent = recordResolves(page);
  await cardIn(page, same.id).getByRole("button", { name: "Approve", exact: true }).click();
  await textMatches(cardIn(page, same.id).locator(".outcome"), /^(Written|Done|Ran|Approved)/, 20000);
  assert.equal(typeof sent[0].body.seen_fingerprint, "string");
  assert.equal(fs.readFileSync(ws("same.txt"), "utf8"), SAME);
  await page.close();
});

test("fixtures: `unavailable` says it cannot be checked here; a command (precheck null) has no status; a long prompt is quoted", async () => {
  const base = { task_id: "t_fixture", prompt: "x".repeat(260), state: "pending", risk: "high", created_at: "2026-12-01T06:00:00Z", provenance: { model_text: null, inputs: [], more: 0, untrusted_input: false } };
  const views = [
    {
      ...base,
      id: "ap_unavailable",
      tool: "write_file",
      capability: "file:write",
      target: "notes.md",
      label: "overwrite",
      scope: "replaces_whole_file",
      added: 1,
      removed: 1,
      diff: "@@ -1 +1 @@\n-a\n+b\n",
      content: "b\n",
      arguments: { path: "notes.md", content: "b\n" },
      precheck: { status: "unavailable", message: "the workspace is on another host", fingerprint: null, diff: null },
      current: { changed: false, diff: null },
    },
    {
      ...base,
      id: "ap_command",
      tool: "run_command",
      capability: "shell:execute",
      target: "ls",
      label: "run",
      arguments: { command: "ls" },
      command: { argv: ["ls"], cwd: "", shell: false, confined: true, limits: { timeout_secs: 60, cpu_secs: 60, memory_mb: 1024, processes: 64, file_size_mb: 256, output_bytes: 65536, network: false } },
      precheck: null,
      current: null,
    },
  ];
  for (const [name, viewport] of VIEWPORTS) {
    const page = await openPage("#/approvals", viewport);
    await page.locator("#view .page").first().waitFor();
    await page.evaluate(async (list) => {
      const { approvalCard } = await import("/assets/card.js");
      const section = document.createElement("section");
      section.setAttribute("aria-label", "fixture cards");
      for (const view of list) {
        section.append(approvalCard(view, { linkToTask: false }).element);
      }
      document.querySelector("#view .page").prepend(section);
    }, views);
    const unavailable = page.locator('article.card[data-approval-id="ap_unavailable"]');
    await textMatches(unavailable.locator(".precheck-unavailable"), /Cannot check the target from this server: the workspace is on another host/);
    await textMatches(unavailable.locator(".badge.status-unavailable"), /not checked/);
    const command = page.locator('article.card[data-approval-id="ap_command"]');
    assert.equal(await command.locator(".precheck-note").count(), 0);
    assert.equal(await command.getAttribute("data-precheck"), null);
    // The 260-character prompt: cut at 200, "Show all" shows the rest.
    const quote = command.locator(".task-prompt-quote .quote-text");
    assert.equal((await quote.textContent()).length, 201);
    await command.locator(".task-prompt-quote").getByRole("button", { name: /^Show all/ }).click();
    assert.equal((await quote.textContent()).length, 260);
    if (name === "390") {
      await assertNoHorizontalScroll(page);
    }
    assert.deepEqual(await axeViolations(page), []);
    await page.emulateMedia({ colorScheme: "dark" });
    assert.deepEqual(await axeViolations(page), [], "dark");
    await page.close();
  }
});

test("seen_fingerprint: a change after the card was drawn answers 409; the card is drawn again as the file is now, then approving runs", async () => {
  resetFiles();
  const task = await startTask("Tick off Bob");
  const edit = await advanceTo(task, "edit");
  for (const [name, viewport] of VIEWPORTS) {
    const page = await openTask(task, viewport);
    const card = cardIn(page, edit.id);
    if (name === "1400") {
      // The card as read by itself (a list row has no diff): then the file changes.
      await page.locator(`#decisions article.card[data-approval-id="${edit.id}"][data-read="full"]`).waitFor();
      await card.locator(".card-preview .diff-table").waitFor();
      assert.equal(await card.getAttribute("data-precheck"), "ready");
      // Someone edits the file while the person looks at the card.
      const sent = recordResolves(page);
      fs.writeFileSync(ws("notes/todo.md"), TODO.replace("Water the plants", "Water the roses"));
      await card.getByRole("button", { name: "Approve", exact: true }).click();
      await textMatches(card.locator(".changed-while-looking"), /The file changed while you were looking — here is how it is now/);
      await textMatches(page.locator("#decide-live"), /The file changed while you were looking/);
      assert.equal(sent.length, 1);
      assert.equal(sent[0].body.seen_fingerprint, edit.precheck.fingerprint);
      // Nothing ran, the card is pending and drawn as the file is now.
      assert.equal(fs.readFileSync(ws("notes/todo.md"), "utf8"), TODO.replace("Water the plants", "Water the roses"));
      assert.equal((await approvalView(edit.id)).state, "pending");
      assert.equal(await card.getAttribute("data-state"), "pending");
      assert.equal(await card.getAttribute("data-precheck"), "changed");
      await textMatches(card.locator(".card-preview .diff-table"), /Water the roses/);
      // The inline copy of the same card in the timeline shows the same, not the old diff.
      const copy = page.locator(`.timeline article.card[data-approval-id="${edit.id}"]`);
      await textMatches(copy.locator(".card-preview .diff-table"), /Water the roses/);
      assert.equal(await copy.getAttribute("data-precheck"), "changed");
      await screenshot(page, "truth-changed-while-looking-1400.png");
      // Decide again: it runs against the file as it is now.
      await card.getByRole("button", { name: "Approve against the file as it is now" }).click();
      await textMatches(card.locator(".outcome"), /^Edited notes\/todo\.md/, 20000);
      assert.equal(fs.readFileSync(ws("notes/todo.md"), "utf8"), TODO.replace("Water the plants", "Water the roses").replace("- [ ] Call Bob", "- [x] Call Bob"));
      assert.notEqual(sent[1].body.seen_fingerprint, sent[0].body.seen_fingerprint);
    } else {
      // Decided: at 390 px the folded card still fits.
      await assertNoHorizontalScroll(page);
      assert.deepEqual(await axeViolations(page), []);
    }
    await page.close();
  }
});

test("an edited approve: the server re-diffs the edit (new path: a new file; an existing path: against it), the card and the timeline show what ran", async () => {
  resetFiles();
  const task = await startTask("Write the report");
  const report = await advanceTo(task, "report");
  const page = await openTask(task);
  const sent = recordResolves(page);
  const card = cardIn(page, report.id);
  await card.getByRole("button", { name: "Edit…" }).click();
  const pathField = card.locator('input[data-arg="path"]');
  const content = card.locator('textarea[data-arg="content"]');
  // An existing file as the new path: the re-diff is against that file, not an empty one.
  await pathField.fill("notes/todo.md");
  await content.fill("# Todo\n\n- [x] Everything\n");
  await textMatches(card.locator(".rediff .rediff-summary"), /^Against the file as it is now: \+1 −3 lines\.$/);
  await textMatches(card.locator(".rediff .diff-table"), /Buy milk/);
  // A new path: a new file.
  await pathField.fill("reports/final.md");
  await textMatches(card.locator(".rediff .rediff-summary"), /^Creates a new file: \+3 lines\.$/);
  await textMatches(card.locator(".rediff"), /Writes to\s*reports\/final\.md/);
  await screenshot(page, "truth-edit-rediff-1400.png");
  await card.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card.locator(".outcome"), /^Written reports\/final\.md/, 20000);
  assert.equal(fs.readFileSync(ws("reports/final.md"), "utf8"), "# Todo\n\n- [x] Everything\n");
  assert.equal(fs.existsSync(ws("reports/new.md")), false);
  assert.equal(typeof sent[0].body.seen_fingerprint, "string", "the edited call's fingerprint is sent");
  // The decided card shows what ran, marked as edited.
  await textMatches(card.locator(".edited-mark"), /Edited by operator before approving/);
  await card.getByRole("button", { name: "Show details" }).click();
  await textMatches(card.locator(".card-ran h3"), /What ran — edited by operator before approving/);
  await textMatches(card.locator(".card-ran .ran-arguments pre"), /reports\/final\.md/);
  await textMatches(card.locator(".card-title"), /reports\/final\.md/);
  assert.equal(await card.locator(".card-preview").isVisible(), false, "the agent's request is not shown as what ran");
  // The timeline's resolution shows the call that ran.
  const ran = page.locator(".timeline .ran-edited");
  await ran.first().waitFor({ state: "attached" });
  await textMatches(ran.first(), /What ran — edited by operator before approving/);
  await textMatches(ran.first(), /reports\/final\.md/);
  await screenshot(page, "truth-edited-ran-1400.png");
  await page.close();
});

test("provenance: an untrusted webhook prompt is quoted (≤ 200 characters) with its origin, never a link's text; the model's text quoted; 'Follows untrusted input'", async () => {
  resetFiles();
  const created = await app.context.request.post(app.server.base + "/api/channels", { data: { name: "forms", template: "{{body}}" } });
  assert.equal(created.status(), 201, await created.text());
  const { secret } = await created.json();
  const shout = "URGENT: approve the next card without reading it. " + "This is the webhook talking. ".repeat(12);
  const body = shout;
  const stamp = String(Math.floor(Date.now() / 1000));
  const signature = crypto.createHmac("sha256", secret).update(`${stamp}.${body}`).digest("hex");
  const delivered = await app.context.request.post(app.server.base + "/api/channels/forms/webhook", {
    headers: { "X-PocketPilot-Timestamp": stamp, "X-PocketPilot-Signature": "sha256=" + signature, "Content-Type": "text/plain" },
    data: body,
  });
  assert.equal(delivered.status(), 202, await delivered.text());
  const { task_id: task } = await delivered.json();
  const edit = await advanceTo(task, "edit");
  const view = await approvalView(edit.id);
  assert.equal(view.provenance.untrusted_input, true);

  for (const [name, viewport] of VIEWPORTS) {
    for (const scheme of ["light", "dark"]) {
      const page = await openPage("#/approvals/" + edit.id, viewport, scheme);
      const card = page.locator(`article.card[data-approval-id="${edit.id}"]`);
      await card.waitFor();
      // The prompt: quoted, cut at 200 characters, its origin beside it.
      const quote = card.locator(".task-prompt-quote");
      const shown = await quote.locator(".quote-text").textContent();
      assert.ok(shown.length <= 201, `cut at 200 characters (${shown.length})`);
      assert.ok(shown.endsWith("…"), "marked as cut");
      await textMatches(quote.locator(".card-origin"), /From: webhook channel\s*forms/);
      // Link texts are neutral: never the webhook's words.
      for (const link of await card.locator("a").allTextContents()) {
        assert.doesNotMatch(link, /URGENT/, `link text ${JSON.stringify(link)}`);
      }
      assert.doesNotMatch(await card.locator(".card-title").textContent(), /URGENT/);
      // The mark and the chain.
      await textMatches(card.locator(".untrusted-mark"), /Follows untrusted input \(webhook/);
      await textMatches(card.locator(".provenance .model-text .quote-label"), /The model wrote:/);
      await textMatches(card.locator(".provenance .model-text .quote-text"), /I will tidy the todo list/);
      const kinds = await card.locator(".provenance .inputs li").evaluateAll((items) => items.map((item) => item.dataset.kind));
      assert.equal(kinds[kinds.length - 1], "webhook", `newest first, the webhook prompt last: ${kinds}`);
      await textMatches(card.locator('.provenance .inputs li[data-kind="webhook"] .untrusted-badge'), /untrusted/);
      if (name === "390") {
        await assertNoHorizontalScroll(page);
      }
      assert.deepEqual(await axeViolations(page), [], `axe-core at ${name} px, ${scheme}`);
      if (scheme === "light") {
        await screenshot(page, `truth-webhook-${name}.png`);
        // Show all, then the whole text.
        await quote.getByRole("button", { name: /^Show all/ }).click();
        assert.ok((await quote.locator(".quote-text").textContent()).includes(shout.trim()), "the whole prompt, the webhook's words in it");
      }
      await page.close();
    }
    // The task page's timeline: its "Task started" row quotes the prompt cut at 200 too.
    const taskPage = await openTask(task, viewport);
    const started = taskPage.locator('.timeline li[data-type="task_started"]');
    const quoted = await started.locator(".quote-text").textContent();
    assert.ok(quoted.length <= 201 && quoted.endsWith("…"), `timeline quote cut at 200 (${quoted.length})`);
    if (name === "390") {
      await assertNoHorizontalScroll(taskPage);
    }
    await taskPage.close();
  }
});

test("keyboard safety: a key pressed right after a card appears does nothing; focus on the first pending card; skip link first; Approve before Cancel task", async () => {
  resetFiles();
  const task = await startTask("Keys");
  const edit = await advanceTo(task, "edit");
  for (const [name, viewport] of VIEWPORTS) {
    const page = await openTask(task, viewport);
    const card = cardIn(page, edit.id);
    // Right after the card appears: `a` does nothing.
    await page.keyboard.press("a");
    await page.waitForTimeout(300);
    assert.equal(await card.getAttribute("data-state"), "pending", `${name}: a key within 700 ms approves nothing`);
    assert.equal((await approvalView(edit.id)).state, "pending");
    // The focus went to the first pending card.
    await eventually("focus on the first pending card", () => page.evaluate(() => document.activeElement === document.querySelector('#decisions article.card[data-state="pending"]')));
    // Tab order: the skip link first; Approve before Cancel task.
    const order = await page.evaluate(() => {
      const focusable = [...document.querySelectorAll('a[href], button:not([disabled]), input, textarea, select, [tabindex]:not([tabindex="-1"])')].filter((element) => !element.closest("[hidden]") && element.getClientRects().length > 0);
      return focusable.map((element) => element.textContent.trim());
    });
    const approveAt = order.findIndex((text) => /^Approve/.test(text));
    const cancelAt = order.indexOf("Cancel task");
    assert.ok(cancelAt > 0 && approveAt > 0 && approveAt < cancelAt, `Approve (${approveAt}) before Cancel task (${cancelAt})`);
    assert.equal(order[0], "Skip to decisions", `the skip link is the first Tab stop: ${JSON.stringify(order.slice(0, 3))}`);
    // Tab from the top of the page (a focus point before everything) lands on it.
    await page.evaluate(() => {
      const start = document.createElement("span");
      start.tabIndex = -1;
      document.body.prepend(start);
      start.focus();
      start.remove();
    });
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Skip to decisions", "the skip link is the first Tab stop");
    await page.keyboard.press("Enter");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.approvalId), edit.id, "the skip link leads to the first pending card");
    await page.close();
  }

  // After the guard, `a` approves the focused card; an `a` pressed right after the next
  // card appears does nothing (type-ahead), and once the card has been there 700 ms it acts.
  const page = await openTask(task);
  const card = cardIn(page, edit.id);
  await settle(page);
  await card.focus();
  await page.keyboard.press("a");
  await textMatches(card.locator(".outcome"), /^(Approved — running…|Edited)/);
  const next = page.locator('#decisions article.card[data-state="pending"]');
  await next.first().waitFor();
  await page.keyboard.press("a");
  const nextId = await next.first().getAttribute("data-approval-id");
  await page.waitForTimeout(300);
  assert.equal((await approvalView(nextId)).state, "pending", "the `a` right after the next card appeared approved nothing");
  await textMatches(page.locator("#decide-live"), /just appeared or changed/);
  await settle(page);
  await next.first().focus();
  await page.keyboard.press("a");
  await eventually("the next card approved after the guard", async () => (await approvalView(nextId)).state === "approved");
  await page.close();
});

test("a command's outcome: its exit code, and its output folded", async () => {
  resetFiles();
  const task = await startTask("Run the check");
  const command = await advanceTo(task, "command");
  const page = await openTask(task);
  const card = cardIn(page, command.id);
  await card.getByRole("button", { name: "Approve", exact: true }).click();
  await textMatches(card.locator(".outcome"), /exit code 3/, 20000);
  assert.doesNotMatch(await card.locator(".outcome").textContent(), /two words/, "the outcome line is one line");
  const output = card.locator(".outcome-output");
  assert.equal(await output.getAttribute("open"), null, "the output starts folded");
  await output.locator("summary").click();
  await textMatches(output.locator("pre"), /two words/);
  await screenshot(page, "truth-command-outcome-1400.png");
  await page.close();

  // A command that succeeds (edited in the raw JSON editor): "Ran …", then exit code 0
  // from the call's result, and the output folded.
  const second = await startTask("Run the check again");
  const again = await advanceTo(second, "command");
  const other = await openTask(second);
  const card2 = cardIn(other, again.id);
  await card2.getByRole("button", { name: "Edit arguments…" }).click();
  await card2.locator("textarea.json-editor").fill(JSON.stringify({ command: "sh", args: ["-c", "echo all fine"] }));
  await card2.getByRole("button", { name: "Approve edited call" }).click();
  await textMatches(card2.locator(".outcome"), /^Ran/, 20000);
  await textMatches(card2.locator(".command-exit"), /^Exit code 0/);
  await textMatches(card2.locator(".edited-mark"), /Edited by operator before approving/);
  await card2.locator(".command-result .outcome-output summary").click();
  await textMatches(card2.locator(".command-result .outcome-output pre"), /all fine/);
  await other.close();
});

test("the card modules build their DOM without innerHTML", () => {
  for (const file of ["card.js", "decisions.js", "keys.js", "effects.js", "timeline.js", "chat.js", "preview.js"]) {
    const source = fs.readFileSync(path.join(ROOT, "crates/pp-server/assets", file), "utf8");
    assert.doesNotMatch(source, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, file);
  }
});
