// The approval cards and change views of issue 14's effects, from fixture views: a
// rename, a move that replaces a file, a delete (size, first lines, "cannot be undone"),
// a new folder, a confined command with awkward arguments, an unconfined shell script
// ("NOT confined" in the strongest style), and the Changes on disk rows `moved`,
// `deleted`, `folder_created`. The fixtures are mounted with the console's own card.js
// and changes.js in a page of a real `pocketpilot serve` (its CSP and styles), checked
// at 390 px and 1400 px with axe-core. `effects.e2e.test.mjs` drives the real tools.
// Run with `node --test cards.test.mjs` after `cargo build -p pp-cli`.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { ROOT, SHOTS, assertNoHorizontalScroll, axeViolations, openConsole, screenshot, tempTree } from "./harness.mjs";

const LIMITS = { timeout_secs: 60, cpu_secs: 60, memory_mb: 1024, processes: 64, file_size_mb: 256, output_bytes: 65536, network: false };

/** A pending approval view as `GET /api/approvals/{id}` gives it, with `extra` fields. */
function fixture(id, tool, capability, extra) {
  return {
    id,
    task_id: "t_fixture",
    prompt: "Tidy the invoices folder",
    state: "pending",
    tool,
    capability,
    risk: "high",
    arguments: {},
    created_at: "2026-12-01T06:00:00Z",
    ...extra,
  };
}

const VIEWS = [
  fixture("ap_rename", "move_file", "file:update", {
    label: "move",
    target: "invoices/scan-0042.pdf",
    resolved: "invoices/scan-0042.pdf",
    destination: "invoices/2026-11 ACME.pdf",
    destination_resolved: "invoices/2026-11 ACME.pdf",
    revertible: true,
    arguments: { from: "invoices/scan-0042.pdf", to: "invoices/2026-11 ACME.pdf" },
  }),
  fixture("ap_move", "move_file", "file:update", {
    label: "move",
    target: "inbox/../invoices/a.pdf",
    resolved: "invoices/a.pdf",
    destination: "archive/2026/a.pdf",
    destination_resolved: "archive/2026/a.pdf",
    replaces: "archive/2026/a.pdf",
    size: 3072,
    revertible: true,
    arguments: { from: "inbox/../invoices/a.pdf", to: "archive/2026/a.pdf", overwrite: true },
  }),
  fixture("ap_delete", "delete_file", "file:delete", {
    label: "delete",
    target: "old/todo.md",
    resolved: "old/todo.md",
    size: 1536,
    content: "# Todo\n- [ ] milk\n- [ ] call Bob\n",
    revertible: false,
    arguments: { path: "old/todo.md" },
  }),
  fixture("ap_folder", "make_dir", "file:create", {
    risk: "medium",
    label: "create_folder",
    target: "reports/2026",
    resolved: "reports/2026",
    arguments: { path: "reports/2026" },
  }),
  fixture("ap_run", "run_command", "shell:execute", {
    label: "run",
    target: "python3",
    arguments: { command: "python3", args: ["sum.py", "a b", "", "x\ny"] },
    command: { argv: ["python3", "sum.py", "a b", "", "x\ny"], cwd: "data", shell: false, confined: true, limits: LIMITS, uncovered: { files: 3, bytes: 3145728 } },
  }),
  fixture("ap_shell", "run_command", "shell:execute", {
    label: "run",
    target: "sh",
    arguments: { command: "sh", args: ["-c", "ls -la\nrm -rf build/ && make > log.txt"] },
    command: {
      argv: ["sh", "-c", "ls -la\nrm -rf build/ && make > log.txt"],
      cwd: "",
      shell: true,
      confined: false,
      limits: { ...LIMITS, network: true },
      stdin_bytes: 12,
      uncovered: { files: 0, bytes: 0 },
    },
  }),
];

const CHANGES = [
  { id: "c_1", task_id: "t_fixture", approval_id: "ap_move", tool: "move_file", kind: "moved", from_path: "invoices/a.pdf", path: "archive/2026/a.pdf", root: "workspace", bytes: 3072, at: "2026-12-01T06:01:00Z", revertible: true, reverted_by: null },
  { id: "c_2", task_id: "t_fixture", approval_id: "ap_delete", tool: "delete_file", kind: "deleted", path: "old/todo.md", root: "workspace", bytes: null, at: "2026-12-01T06:02:00Z", revertible: true, reverted_by: null },
  { id: "c_3", task_id: "t_fixture", approval_id: "ap_folder", tool: "make_dir", kind: "folder_created", path: "reports/2026", root: "workspace", bytes: null, at: "2026-12-01T06:03:00Z", revertible: true, reverted_by: null },
];

let tree;
let app;

before(async () => {
  tree = tempTree({});
  fs.writeFileSync(tree.script, JSON.stringify([{ content: "Nothing to do." }]));
  app = await openConsole(tree);
});

afterEach(() => {
  assert.deepEqual(app.problems.splice(0), []);
});

after(async () => {
  await app?.close();
});

/**
 * A console page with the fixture cards mounted by card.js at the top of the inbox page,
 * and the Changes on disk panel (changes.js) fed the fixture change log.
 */
async function fixturePage(viewport) {
  const page = await app.context.newPage();
  await page.setViewportSize(viewport);
  await page.route("**/api/tasks/t_fixture", (route) => route.fulfill({ json: { id: "t_fixture", workspace: tree.workspace, state: "completed" } }));
  await page.route("**/api/tasks/t_fixture/changes", (route) => route.fulfill({ json: { changes: CHANGES } }));
  await page.goto(app.server.base + "/#/approvals");
  await page.locator("#nav").waitFor({ state: "visible" });
  await page.locator("#view .page").first().waitFor();
  await page.evaluate(async (views) => {
    const { approvalCard } = await import("/assets/card.js");
    const { changesPanel } = await import("/assets/changes.js");
    const list = document.createElement("section");
    list.className = "fixture-cards";
    list.setAttribute("aria-label", "fixture cards");
    for (const view of views) {
      list.append(approvalCard(view).element);
    }
    const changes = document.createElement("div");
    document.querySelector("#view .page").prepend(list, changes);
    changesPanel(changes, "t_fixture");
  }, VIEWS);
  await page.locator("li.change").nth(2).waitFor();
  return page;
}

const card = (page, id) => page.locator(`article.card[data-approval-id="${id}"]`);

test("move cards: rename within a folder, move elsewhere with the replaced file and its size", async () => {
  const page = await fixturePage({ width: 1400, height: 900 });
  const rename = card(page, "ap_rename");
  assert.equal(await rename.locator(".badge.label-move").textContent(), "rename");
  assert.equal((await rename.locator(".effect-move .effect-line").textContent()).trim(), "Rename invoices/scan-0042.pdf → invoices/2026-11 ACME.pdf");
  assert.equal(await rename.locator(".effect-replaces").count(), 0);
  assert.equal(await rename.locator(".irreversible-note").count(), 0, "a revertible move says nothing about undo");

  const move = card(page, "ap_move");
  assert.equal(await move.locator(".badge.label-move").textContent(), "move");
  assert.equal(
    (await move.locator(".effect-move .effect-line").textContent()).trim(),
    "Move inbox/../invoices/a.pdf (resolves to invoices/a.pdf) → archive/2026/a.pdf",
  );
  assert.equal(await move.locator(".effect-replaces").textContent(), "Replaces archive/2026/a.pdf (3.0 KB): the file there now is overwritten by the moved one.");
  assert.equal(await move.locator(".effect-replaces code").textContent(), "archive/2026/a.pdf");
  await page.close();
});

test("delete and folder cards: size, the first lines as removed lines, cannot be undone; create folder", async () => {
  const page = await fixturePage({ width: 1400, height: 900 });
  const del = card(page, "ap_delete");
  assert.equal((await del.locator(".effect-delete .effect-line").textContent()).trim(), "Delete old/todo.md (1.5 KB)");
  assert.equal(await del.locator(".card-preview h3").textContent(), "First lines of the file (3 lines shown)");
  const removed = await del.locator(".diff-row.diff-del .diff-code").allTextContents();
  assert.deepEqual(removed.map((line) => line.replace(/^-/, "")), ["# Todo", "- [ ] milk", "- [ ] call Bob"]);
  assert.equal(await del.locator(".badge.irreversible").textContent(), "cannot be undone");
  assert.match(await del.locator(".irreversible-note").textContent(), /cannot be undone: the file it deletes is too large/);

  const folder = card(page, "ap_folder");
  assert.equal(await folder.locator(".badge.label-create_folder").textContent(), "create folder");
  assert.equal((await folder.locator(".effect-create_folder .effect-line").textContent()).trim(), "Create folder reports/2026");
  await page.close();
});

test("command cards: each argument in its own box with controls escaped, cwd, limits; a shell script; NOT confined", async () => {
  const page = await fixturePage({ width: 1400, height: 900 });
  const run = card(page, "ap_run");
  const args = await run.locator(".argv .arg").allTextContents();
  assert.deepEqual(args, ["0python3", "1sum.py", "2a b", "3(empty argument)", "4x\\u{a}y"]);
  assert.equal(await run.locator(".argv .arg-empty").count(), 1);
  assert.equal(await run.locator(".argv .invisible-char").textContent(), "\\u{a}");
  const facts = await run.locator(".command-facts").textContent();
  assert.match(facts, /Working directorydata/);
  assert.match(facts, /Sandboxconfined \(Landlock\)/);
  assert.match(facts, /wall-clock timeout 60 s.*CPU time 60 s.*memory 1024 MiB.*64 processes.*files up to 256 MiB.*output up to 64 KB per stream.*no network/);
  assert.equal(await run.locator(".unconfined-banner").count(), 0);
  assert.equal(await run.locator(".shell-note").count(), 0);
  // What it changes is recorded; the card says how much a revert could not cover.
  assert.match(facts, /Reverta revert could not cover 3 files \(3(\.0)? MB\): too large, beyond the snapshot budget, or ignored/);
  assert.equal(await run.locator(".irreversible-note").count(), 0);
  assert.match(await card(page, "ap_shell").locator(".command-facts").textContent(), /Reverta revert covers the whole workspace/);

  const shell = card(page, "ap_shell");
  const banner = shell.locator(".unconfined-banner");
  assert.equal(await banner.locator(".unconfined-title").textContent(), "NOT confined");
  assert.match(await banner.textContent(), /all of your user's rights: every file your user can reach, the network, PocketPilot's data directory/);
  // The banner comes first in the card, in white on deep red; the card has the heaviest border.
  assert.equal(await shell.evaluate((element) => element.firstElementChild.className), "unconfined-banner");
  const style = await banner.evaluate((element) => {
    const css = getComputedStyle(element);
    return { background: css.backgroundColor, color: css.color };
  });
  assert.deepEqual(style, { background: "rgb(179, 38, 30)", color: "rgb(255, 255, 255)" });
  assert.equal(await shell.locator(".badge.unconfined-badge").textContent(), "NOT confined");
  assert.match(await shell.getAttribute("class"), /\bunconfined\b/);
  assert.match(await shell.locator(".shell-note").textContent(), /^Runs a shell script \(sh -c\)/);
  assert.deepEqual(await shell.locator(".script-lines li").allTextContents(), ["ls -la", "rm -rf build/ && make > log.txt"]);
  const facts2 = await shell.locator(".command-facts").textContent();
  assert.match(facts2, /Working directorythe workspace's root/);
  assert.match(facts2, /SandboxNOT confined/);
  assert.match(facts2, /network allowed/);
  assert.match(facts2, /Standard input12 B/);
  await screenshot(page, "cards-effects-1400.png");
  // docs/img/console-card-unconfined.png
  await shell.screenshot({ path: path.join(SHOTS, "docs-console-card-unconfined.png") });
  await page.close();
});

test("change views: moved as old → new, deleted, folder created, with their revert prompts", async () => {
  const page = await fixturePage({ width: 1400, height: 900 });
  const rows = page.locator("li.change");
  const moved = rows.nth(0);
  assert.equal(await moved.locator(".change-kind").textContent(), "moved");
  assert.equal(await moved.locator(".change-move").textContent(), "invoices/a.pdf → archive/2026/a.pdf");
  assert.equal(await moved.locator("a.change-path").textContent(), "archive/2026/a.pdf", "only the new path is a link");
  await moved.locator("button.revert").click();
  assert.equal(await moved.locator(".revert-confirm p").textContent(), "Revert moves archive/2026/a.pdf back to invoices/a.pdf (and puts back a file the move replaced).");
  await moved.getByRole("button", { name: "Keep it" }).click();

  const deleted = rows.nth(1);
  assert.equal(await deleted.locator(".change-kind").textContent(), "deleted");
  assert.equal(await deleted.locator("a").count(), 0, "a deleted file is not a link");
  assert.equal(await deleted.locator("code.change-path").textContent(), "old/todo.md");
  await deleted.locator("button.revert").click();
  assert.equal(await deleted.locator(".revert-confirm p").textContent(), "Revert restores old/todo.md, which this task deleted.");

  const folder = rows.nth(2);
  assert.equal(await folder.locator(".change-kind").textContent(), "folder created");
  assert.equal(await folder.locator("code.change-path").textContent(), "reports/2026");

  const counts = await page.evaluate(async () => {
    const { countsText } = await import("/assets/changes.js");
    return [countsText({ moved: 2, deleted: 1, folder_created: 1 }), countsText({ folder_created: 3, effects_unknown: 1 })];
  });
  assert.deepEqual(counts, ["2 moved · 1 deleted · 1 folder created", "3 folders created · 1 unknown effects"]);
  await page.close();
});

test("390 px and 1400 px (and dark mode): the fixture cards and change rows fit, axe-core finds nothing serious", async () => {
  for (const [name, viewport] of [
    ["390", { width: 390, height: 844 }],
    ["1400", { width: 1400, height: 900 }],
  ]) {
    const page = await fixturePage(viewport);
    await assertNoHorizontalScroll(page);
    assert.deepEqual(await axeViolations(page), [], `axe-core at ${name} px`);
    if (name === "390") {
      await screenshot(page, "cards-effects-390.png");
    }
    await page.close();
  }
  // Dark mode keeps the contrast (the banner's colours are fixed in both schemes).
  const dark = await fixturePage({ width: 390, height: 844 });
  await dark.emulateMedia({ colorScheme: "dark" });
  assert.deepEqual(await axeViolations(dark), [], "axe-core in dark mode");
  await screenshot(dark, "cards-effects-dark-390.png");
  await dark.close();
});

test("an MCP write over an existing file: the precheck's label and diff, never “New file content”", async () => {
  const mcp = { server: "files", tool: "write_file", action: "write" };
  const views = [
    // The request looked like a new file; the precheck says the file exists: its diff.
    fixture("ap_mcp_diff", "mcp__files__write_file", "file:write", {
      target: "notes/plan.md",
      mcp,
      scope: "new_file",
      added: 2,
      content: "# Plan\nShip it\n",
      arguments: { path: "notes/plan.md", content: "# Plan\nShip it\n" },
      precheck: { status: "ready", message: null, fingerprint: "fp1", diff: "@@ -1,2 +1,2 @@\n # Plan\n-Draft\n+Ship it\n", label: "overwrite", scope: "replaces_whole_file", added: 1, removed: 1 },
      current: { changed: false, diff: null },
    }),
    // No diff possible: still named as replacing the existing file.
    fixture("ap_mcp_nodiff", "mcp__files__write_file", "file:write", {
      target: "notes/plan.md",
      mcp,
      scope: "new_file",
      content: "# Plan\n",
      arguments: { path: "notes/plan.md", content: "# Plan\n" },
      precheck: { status: "ready", message: null, fingerprint: "fp2", diff: null, label: "overwrite" },
      current: { changed: false, diff: null },
    }),
  ];
  const page = await app.context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(app.server.base + "/#/approvals");
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
  const withDiff = card(page, "ap_mcp_diff");
  assert.equal(await withDiff.locator(".card-preview h3").textContent(), "What changes on disk");
  assert.equal(await withDiff.locator(".badge.scope-replaces_whole_file").textContent(), "replaces whole file +1 −1");
  assert.doesNotMatch(await withDiff.textContent(), /New file content|new file \+/);
  const noDiff = card(page, "ap_mcp_nodiff");
  assert.match(await noDiff.locator(".card-preview h3").textContent(), /replaces the existing file/);
  assert.doesNotMatch(await noDiff.textContent(), /New file content/);
  assert.deepEqual(await axeViolations(page), []);
  await page.close();
});

test("an MCP card shows the server's sandbox when wider than the default, and NOT confined in the strong style", async () => {
  const wide = { server: "web", tool: "fetch", action: "network", sandbox: { confined: true, workspace: "none", read: [], write: ["/var/cache/web"], network: true } };
  const loose = { server: "loose", tool: "run", action: "execute", sandbox: { confined: false, workspace: "write", read: [], write: [], network: false } };
  const plain = { server: "files", tool: "read_text_file", action: "write" };
  const views = [
    fixture("ap_mcp_wide", "web__fetch", "mcp:web:fetch:network", { mcp: wide, arguments: { url: "https://example.com" } }),
    fixture("ap_mcp_loose", "loose__run", "mcp:loose:run:execute", { mcp: loose, arguments: { what: "x" } }),
    fixture("ap_mcp_plain", "files__read_text_file", "mcp:files:read_text_file:write", { mcp: plain, arguments: { path: "a.txt" } }),
  ];
  const page = await app.context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(app.server.base + "/#/approvals");
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
  const wideCard = card(page, "ap_mcp_wide");
  assert.equal(await wideCard.locator(".mcp-sandbox").textContent(), "Sandbox workspace none, network, writes /var/cache/web");
  assert.equal(await wideCard.locator(".unconfined-banner").count(), 0);
  const looseCard = card(page, "ap_mcp_loose");
  assert.match(await looseCard.locator(".unconfined-banner").textContent(), /^NOT confined This MCP server's process runs with all of your user's rights/);
  assert.match(await looseCard.locator(".mcp-limit").textContent(), /NOT confined/);
  const plainCard = card(page, "ap_mcp_plain");
  assert.equal(await plainCard.locator(".mcp-sandbox").count(), 0, "the default sandbox is not repeated");
  assert.match(await plainCard.locator(".mcp-limit").textContent(), /in its sandbox/);
  assert.deepEqual(await axeViolations(page), []);
  await page.close();
});

test("a card asking again a call that may already have run: the notice, the target before the call against now", async () => {
  const views = [
    fixture("ap_cut", "write_file", "file:write", {
      target: "reports/<img src=x onerror=alert(1)>.md",
      scope: "new_file",
      content: "one\n",
      arguments: { path: "reports/<img src=x onerror=alert(1)>.md", content: "one\n" },
      precheck: { status: "ready", message: null, fingerprint: "fp3", diff: null, label: "overwrite" },
      current: { changed: false, diff: null },
      may_have_run: {
        message: "this call may already have run: the process stopped after `write_file` started (2026-12-01T06:00:00Z) and before its result was recorded",
        approval_id: "a_earlier",
        started_at: "2026-12-01T06:00:00Z",
        targets: [
          {
            path: "reports/<img src=x onerror=alert(1)>.md",
            root: "workspace",
            before: "absent",
            before_size: null,
            now: "file",
            now_size: 4,
            changed: true,
            diff: "--- before the call/x.md\n+++ now/x.md\n@@ -0,0 +1 @@\n+one\n",
          },
        ],
      },
    }),
    fixture("ap_plain", "write_file", "file:write", { target: "a.md", content: "a\n", arguments: { path: "a.md", content: "a\n" }, may_have_run: null }),
  ];
  const page = await app.context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(app.server.base + "/#/approvals");
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
  const cut = card(page, "ap_cut");
  const block = cut.locator(".may-have-run");
  assert.equal(await block.locator("strong").textContent(), "This call may already have run");
  assert.match(await block.locator(".may-have-run-message").textContent(), /^this call may already have run: /);
  const line = await block.locator(".may-have-run-target p").first().textContent();
  assert.match(line, /before the call nothing, now a file \(4 B\) — changed since the call started/);
  // The model-chosen path is text, never markup.
  assert.equal(await block.locator("img").count(), 0);
  assert.match(line, /<img src=x onerror=alert\(1\)>/);
  assert.equal(await block.locator(".diff-box").count(), 1);
  assert.equal(await card(page, "ap_plain").locator(".may-have-run").count(), 0);
  assert.deepEqual(await axeViolations(page), []);
  await page.close();
});

test("the new console modules build their DOM without innerHTML", () => {
  for (const file of ["card.js", "effects.js", "changes.js"]) {
    const source = fs.readFileSync(path.join(ROOT, "crates/pp-server/assets", file), "utf8");
    assert.doesNotMatch(source, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, file);
  }
});
