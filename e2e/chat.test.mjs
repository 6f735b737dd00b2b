// The console's chat page end to end: a real `pocketpilot serve` (scripted model: every
// turn replays SCRIPT) and headless Chromium. Start a chat, send a message whose turn
// needs approval, approve it inline, read the answer; the send box waits while the turn
// is busy, and the server's 409 `session_busy` is explained; accessible (axe-core: no
// serious or critical violation) and usable at 390 px.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { axeViolations, eventually, horizontalOverflow, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const ORIGINAL = "Buy milk\n";
const PROPOSED = "Buy milk\nCall Ada\n";
const ANSWER = "Added “Call Ada” to notes.txt.";

/** Every turn: one write that needs approval, then the answer. */
const SCRIPT = [
  { tool_calls: [{ name: "write_file", arguments: { path: "notes.txt", content: PROPOSED } }] },
  { content: ANSWER },
];

let tree;
let server;
let context;
let opened;

before(async () => {
  tree = tempTree({ "notes.txt": ORIGINAL });
  fs.writeFileSync(tree.script, JSON.stringify(SCRIPT));
  opened = await openConsole(tree);
  ({ server, context } = opened);
});

afterEach(() => {
  // No script errors, no CSP violations, no request that leaves the server's origin.
  assert.deepEqual(opened.problems.splice(0), []);
});

after(async () => {
  await opened?.close();
});

test("chat: start a session, a turn waits for approval, approve inline, see the answer", async () => {
  const page = await context.newPage();
  await page.goto(server.base + "/#/tasks");
  await page.locator("#nav").getByRole("link", { name: "Chat" }).click();
  await page.waitForURL(/#\/chat$/);
  await page.locator("#chat-workspace option").first().waitFor({ state: "attached" });
  await page.fill("#chat-title", "Notes");
  await page.getByRole("button", { name: "Start chat" }).click();
  await page.waitForURL(/#\/chat\/s_/);
  const sessionId = decodeURIComponent(new URL(page.url()).hash.replace("#/chat/", ""));
  await textMatches(page.locator(".chat-title"), /^Notes$/);

  await page.fill("#chat-message", "Add Call Ada to my notes");
  await page.getByRole("button", { name: "Send" }).click();
  const turn = page.locator("article.turn").first();
  const card = turn.locator("article.card");
  await card.waitFor();
  await textMatches(card, /notes\.txt/);

  // While the turn waits, the send box is disabled and says why; the API says 409.
  assert.ok(await page.locator("#chat-message").isDisabled());
  assert.ok(await page.getByRole("button", { name: "Send" }).isDisabled());
  await textMatches(page.locator("#chat-busy"), /waits for your approval/);
  const busy = await context.request.post(`${server.base}/api/sessions/${sessionId}/messages`, { data: { content: "and another" } });
  assert.equal(busy.status(), 409);
  assert.equal((await busy.json()).error.code, "session_busy");
  await page.getByRole("button", { name: "Delete chat…" }).click();
  await page.getByRole("button", { name: "Delete this chat" }).click();
  await textMatches(page.locator(".chat-actions .notice"), /Not deleted/);
  await page.getByRole("button", { name: "Keep it" }).click();

  // The tool call is folded under the message.
  const folded = turn.locator("details.turn-tools");
  assert.equal(await folded.getAttribute("open"), null, "folded by default");
  await textMatches(folded.locator("summary"), /1 tool call/);

  assert.deepEqual(await axeViolations(page), [], "the conversation with a pending card");
  await screenshot(page, "chat-waiting.png");
  await card.locator("button.approve").click();
  await textMatches(card.locator(".outcome"), /^(Approved — running…|Written|Done)/);
  // Decided, the card folds to its outcome line (one message must not make a long page),
  // with a control to unfold it.
  await eventually("the decided card folds", () => card.evaluate((element) => element.classList.contains("collapsed")));
  const foldedHeight = (await card.boundingBox()).height;
  assert.ok(foldedHeight < 260, `the folded card is short (${foldedHeight}px)`);
  await card.getByRole("button", { name: "Show details" }).click();
  assert.ok((await card.locator(".card-body").isVisible()) && (await card.boundingBox()).height > foldedHeight);
  await card.getByRole("button", { name: "Hide details" }).click();
  await textMatches(turn.locator(".bubble-model"), new RegExp(ANSWER));
  await eventually("the send box to open again", async () => !(await page.locator("#chat-message").isDisabled()));
  assert.equal(fs.readFileSync(path.join(tree.workspace, "notes.txt"), "utf8"), PROPOSED);
  await folded.locator("summary").click();
  await textMatches(folded.locator(".timeline"), /Approved/);
  assert.deepEqual(await axeViolations(page), [], "the answered turn, its tool calls unfolded");
  await screenshot(page, "chat-answered.png");

  // The second message is a second turn of the same session.
  await page.fill("#chat-message", "Thanks; check it again");
  await page.locator("#chat-message").press("Control+Enter");
  await page.locator("article.turn").nth(1).locator("article.card").waitFor();
  const session = await (await context.request.get(`${server.base}/api/sessions/${sessionId}`)).json();
  assert.deepEqual(
    session.turns.map((t) => [t.index, t.prompt, t.state]),
    [
      [1, "Add Call Ada to my notes", "completed"],
      [2, "Thanks; check it again", "waiting_approval"],
    ],
  );

  // The sessions list shows it.
  await page.goto(server.base + "/#/chat");
  await textMatches(page.locator(`.session-list li[data-session-id="${sessionId}"]`), /Notes/);
  assert.deepEqual(await axeViolations(page), [], "the chat list");
  await page.close();
});

test("chat on a narrow window: no horizontal scrolling", async () => {
  const created = await context.request.post(server.base + "/api/sessions", { data: {} });
  assert.equal(created.status(), 201);
  const { id } = await created.json();
  const sent = await context.request.post(`${server.base}/api/sessions/${id}/messages`, {
    data: { content: "A long message that must wrap on a phone: " + "word ".repeat(40) },
  });
  assert.equal(sent.status(), 202);
  const narrow = await context.newPage();
  await narrow.setViewportSize({ width: 390, height: 800 });
  await narrow.goto(`${server.base}/#/chat/${encodeURIComponent(id)}`);
  await narrow.locator("article.turn article.card").waitFor();
  await narrow.locator("details.turn-tools summary").click();
  const overflow = await horizontalOverflow(narrow);
  assert.ok(overflow <= 0, `no horizontal scrolling on a narrow window (overflow ${overflow}px)`);
  assert.deepEqual(await axeViolations(narrow), []);
  await screenshot(narrow, "chat-narrow.png");
  // Leave the session idle for whoever runs next: reject the pending call.
  const card = narrow.locator("article.card");
  await card.locator("button.reject").click();
  await card.locator("button.confirm-reject").click();
  await textMatches(card.locator(".outcome"), /Not run — rejected/);

  // Delete the chat: two steps; back to the list, where it is gone.
  await narrow.getByRole("button", { name: "Delete chat…" }).click();
  await narrow.getByRole("button", { name: "Delete this chat" }).click();
  await narrow.waitForURL(/#\/chat$/);
  await narrow.locator(".session-list, .chat-list .empty").first().waitFor();
  assert.equal(await narrow.locator(`.session-list li[data-session-id="${id}"]`).count(), 0);
  assert.equal((await context.request.get(`${server.base}/api/sessions/${id}`)).status(), 404);
  await narrow.close();
});
