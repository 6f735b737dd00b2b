// End-to-end test of the console's skills page: list (valid and invalid, with why), view,
// edit SKILL.md (an invalid one is refused with the reason), create, remove; accessible
// (axe-core: no serious or critical violation) and usable at 390 px.

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

const NOTES = `---
name: notes-sync
description: Sync a folder of Markdown notes.
metadata: { "openclaw": { "emoji": "x", "requires": { "bins": ["rsync"] } } }
allowed-tools: ["Write"]
---
# Notes sync
Run rsync.
`;

let tree;
let server;
let context;
let opened;

function writeSkill(name, files) {
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(tree.home, "skills", name, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, content);
  }
}

before(async () => {
  tree = tempTree({ "notes.txt": "hi\n" });
  fs.writeFileSync(tree.script, JSON.stringify([{ content: "done" }]));
  writeSkill("notes-sync", { "SKILL.md": NOTES, "references/options.md": "-a\n" });
  writeSkill("plain", { "SKILL.md": "# No front matter\n" });
  opened = await openConsole(tree);
  ({ server, context } = opened);
});

afterEach(() => {
  assert.deepEqual(opened.problems.splice(0), []);
});

after(async () => {
  await opened?.close();
});

async function apiSkill(name) {
  const response = await context.request.get(`${server.base}/api/skills/${name}`);
  return { status: response.status(), body: await response.json() };
}

test("skills: list with reasons, view, refused and saved edits, create, remove", async () => {
  const page = await context.newPage();
  await page.goto(server.base + "/#/skills");
  const valid = page.locator('tr[data-skill="notes-sync"]');
  const invalid = page.locator('tr[data-skill="plain"]');
  await valid.waitFor();
  await textMatches(valid, /valid.*home.*Sync a folder of Markdown notes/);
  await textMatches(invalid, /invalid.*no front matter: SKILL\.md must start with a `---` line/);
  assert.equal(await page.locator('#nav a[data-route="skills"]').getAttribute("aria-current"), "page");
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "skills-list.png");

  // View: files, ignored fields, the SKILL.md in an editor.
  await valid.getByRole("link").click();
  await page.waitForURL(/#\/skills\/notes-sync$/);
  await textMatches(page.locator(".skill-files"), /references\/options\.md/);
  await textMatches(page.locator("main"), /Ignored front matter fields.*metadata, allowed-tools/);
  assert.equal(await page.locator("#skill-md").inputValue(), NOTES);
  assert.deepEqual(await axeViolations(page), []);

  // An invalid SKILL.md is refused with the reason; nothing changes on disk.
  await page.fill("#skill-md", "---\nname: other\ndescription: d\n---\n");
  await page.getByRole("button", { name: "Save SKILL.md" }).click();
  await textMatches(page.locator(".notice-error"), /Not saved: invalid skill `notes-sync`: name `other` does not match its folder/);
  assert.equal(fs.readFileSync(path.join(tree.home, "skills/notes-sync/SKILL.md"), "utf8"), NOTES);

  // A valid edit is saved and audited as the operator.
  const edited = NOTES.replace("Sync a folder of Markdown notes.", "Sync notes, edited in the console.");
  await page.fill("#skill-md", edited);
  await page.getByRole("button", { name: "Save SKILL.md" }).click();
  await textMatches(page.locator(".notice-ok"), /Saved/);
  await textMatches(page.locator(".skill-description"), /edited in the console/);
  assert.equal((await apiSkill("notes-sync")).body.description, "Sync notes, edited in the console.");
  const audit = await (await context.request.get(`${server.base}/api/audit?action=skill_updated`)).json();
  assert.equal(audit.entries[0].actor, "operator");
  assert.equal(audit.entries[0].target, "notes-sync/SKILL.md");

  // The invalid one says why on its own page.
  await page.goto(server.base + "/#/skills/plain");
  await textMatches(page.locator(".notice-warn"), /Invalid, never offered to the model: no front matter/);

  // Create a new skill from the list's form.
  await page.goto(server.base + "/#/skills");
  await page.fill("#new-skill-name", "tidy-notes");
  await page.getByRole("button", { name: "Write its SKILL.md" }).click();
  await page.waitForURL(/#\/skills\/tidy-notes\?new=1$/);
  await eventually("the template in the editor", async () => /name: tidy-notes/.test(await page.locator("#skill-md").inputValue()));
  await page.getByRole("button", { name: "Create skill" }).click();
  await page.waitForURL(/#\/skills\/tidy-notes$/);
  await textMatches(page.locator(".task-facts"), /valid/);
  assert.equal((await apiSkill("tidy-notes")).status, 200);

  // Remove it (after confirming).
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Remove skill" }).click();
  await page.waitForURL(/#\/skills$/);
  await eventually("tidy-notes gone", async () => (await apiSkill("tidy-notes")).status === 404);
  assert.ok(!fs.existsSync(path.join(tree.home, "skills/tidy-notes")));
  await page.close();
});

test("skills at 390 px: no horizontal scrolling, still accessible", async () => {
  const page = await context.newPage();
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(server.base + "/#/skills");
  await page.locator('tr[data-skill="plain"]').waitFor();
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "skills-narrow.png");
  await page.goto(server.base + "/#/skills/notes-sync");
  await page.locator("#skill-md").waitFor();
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "skill-narrow.png");
  await page.close();
});
