// End-to-end test of the console's MCP page: a real `pocketpilot serve` whose config
// names two MCP servers — the official "everything" server over stdio (three tools
// whitelisted: one by its explicit action, one by the server's default action, one by
// its trusted annotations; the rest never offered) and a server that cannot start —
// shown read-only with each tool's model name, capability and deciding level, the tools
// left out with why, and the failing server's error. Accessible (axe-core: no serious or
// critical violation) and usable at 390 px.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, test } from "node:test";

import { ROOT, assertNoHorizontalScroll, axeViolations, openConsole, screenshot, tempTree, textMatches } from "./harness.mjs";

const SERVERS = path.join(ROOT, "crates", "pp-mcp", "tests", "servers");
const EVERYTHING = path.join(SERVERS, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");

let tree;
let opened;

before(async () => {
  assert.ok(fs.existsSync(EVERYTHING), `run npm ci in ${SERVERS} first (scripts/test.sh does)`);
  tree = tempTree({ "notes.txt": "hi\n" });
  fs.writeFileSync(tree.script, JSON.stringify([{ content: "nothing to do" }]));
  fs.mkdirSync(path.join(tree.config, "pocketpilot"), { recursive: true });
  fs.writeFileSync(
    path.join(tree.config, "pocketpilot", "pocketpilot.toml"),
    [
      "[[mcp.server]]",
      'name = "everything"',
      `command = ${JSON.stringify(process.execPath)}`,
      `args = [${JSON.stringify(EVERYTHING)}, "stdio"]`,
      'allow = ["echo", "get-sum"]',
      "trust_annotations = true",
      "[mcp.server.tools.echo]",
      'action = "read"',
      "[mcp.server.tools.get-tiny-image]",
      "",
      "[[mcp.server]]",
      'name = "broken"',
      'command = "/nonexistent/mcp-server"',
      'default_action = "read"',
      'allow = ["*"]',
      "",
    ].join("\n"),
  );
  opened = await openConsole(tree);
});

afterEach(() => {
  assert.deepEqual(opened.problems.splice(0), []);
});

after(async () => {
  await opened?.close();
  if (tree && !process.env.KEEP_E2E_TREE) {
    fs.rmSync(tree.root, { recursive: true, force: true });
  }
});

test("MCP page: tools with model name, capability and level; left-out tools with why; a broken server's error", async () => {
  const page = await opened.context.newPage();
  await page.goto(opened.server.base + "/#/mcp");
  await page.locator(".mcp-servers:not([aria-busy])").waitFor({ timeout: 30000 });
  assert.equal(await page.locator('#nav a[data-route="mcp"]').getAttribute("aria-current"), "page");

  const everything = page.locator('section.mcp-server[data-server="everything"]');
  await textMatches(everything.locator("h2"), /everything\s*stdio/);
  const echo = everything.locator('tr[data-tool="echo"]');
  await textMatches(echo, /everything__echo/);
  await textMatches(echo.locator(".capability"), /^mcp:everything:echo:read$/);
  await textMatches(echo, /runs at once/);
  await textMatches(echo, /P0/);
  // get-sum is whitelisted without an action: its annotations decide (trusted).
  const sum = everything.locator('tr[data-tool="get-sum"]');
  await textMatches(sum, /P2/);
  // A tool the config does not allow is never offered, and the page says why.
  const left = everything.locator(".mcp-unregistered li");
  assert.ok((await left.count()) > 0, "the other tools of the everything server are listed as not offered");
  await textMatches(everything.locator('.mcp-unregistered li[data-tool="toggle-simulated-logging"]'), /not in the whitelist/);
  // A stdio server's sandbox, with its defaults filled in (get-sum may write: workspace write).
  await textMatches(everything.locator(".mcp-sandbox"), /^Sandbox: workspace write, no network$/);

  const broken = page.locator('section.mcp-server[data-server="broken"]');
  await textMatches(broken.locator(".notice"), /broken/);
  assert.equal(await broken.locator("table").count(), 0);

  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "mcp.png");
  await page.setViewportSize({ width: 390, height: 844 });
  await assertNoHorizontalScroll(page);
  assert.deepEqual(await axeViolations(page), []);
  await screenshot(page, "mcp-390.png");
  await page.close();
});
