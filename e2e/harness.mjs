// Test harness: a real `pocketpilot serve` on a free loopback port with a scripted model,
// Debian's Chromium driven by playwright-core, and small polling assertions.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const BIN = process.env.POCKETPILOT_BIN || path.join(ROOT, "target", "debug", "pocketpilot");
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
export const SHOTS = path.join(ROOT, "target", "e2e-screenshots");

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A fresh temp tree: `home/` (data dir), `config/` (empty XDG_CONFIG_HOME), `ws/`. */
export function tempTree(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pp-e2e-"));
  const tree = {
    root,
    home: path.join(root, "home"),
    config: path.join(root, "config"),
    workspace: path.join(root, "ws"),
    script: path.join(root, "script.json"),
  };
  for (const dir of [tree.home, tree.config, tree.workspace]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tree.workspace, name)), { recursive: true });
    fs.writeFileSync(path.join(tree.workspace, name), content);
  }
  return tree;
}

/** The environment for every `pocketpilot` process: nothing of the user's leaks in. */
export function env(tree) {
  return {
    ...process.env,
    POCKETPILOT_HOME: tree.home,
    XDG_CONFIG_HOME: tree.config,
    XDG_DATA_HOME: path.join(tree.root, "data"),
    HOME: tree.root,
    NO_COLOR: "1",
  };
}

/**
 * Starts `pocketpilot serve` (port 0 unless given) and resolves once it printed its
 * login link. Returns `{ base, loginUrl, port, stop() }`.
 */
export function startServer(tree, { port = 0 } = {}) {
  const child = spawn(
    BIN,
    [
      "serve",
      "--port",
      String(port),
      "--home",
      tree.home,
      "--workspace",
      tree.workspace,
      "--script",
      tree.script,
    ],
    { env: env(tree), stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`pocketpilot serve printed no login link within 20 s\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, 20000);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${BIN} (build it with \`cargo build -p pp-cli\`): ${error.message}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`pocketpilot serve exited early (${code ?? signal})\nstdout: ${stdout}\nstderr: ${stderr}`));
    });
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const match = /PocketPilot console: (http:\/\/127\.0\.0\.1:(\d+))\/login\?token=(\S+)/.exec(stdout);
      if (!match) {
        return;
      }
      clearTimeout(timer);
      resolve({
        base: match[1],
        port: Number(match[2]),
        loginUrl: `${match[1]}/login?token=${match[3]}`,
        stderr: () => stderr,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill("SIGTERM");
            const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
            await exited;
            clearTimeout(killer);
          }
        },
      });
    });
  });
}

/** Runs the `pocketpilot` CLI against the tree's data directory. */
export function cli(tree, args) {
  const result = spawnSync(BIN, ["--home", tree.home, ...args], {
    env: env(tree),
    encoding: "utf8",
    timeout: 30000,
  });
  return result;
}

/** Launches Debian's Chromium (headless, a fresh profile). */
export async function launchBrowser() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Watches a page for script errors, console errors (CSP violations show up there) and
 * requests that leave the server's origin; each is pushed onto `problems` (returned).
 */
export function watchPage(page, base, problems = []) {
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // "Failed to load resource" lines are HTTP errors the console handles (401, 409,
    // 422) and refused connections while a test restarts the server; CSP violations
    // and script errors read differently.
    if (message.type() === "error" && !/^Failed to load resource/.test(message.text())) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  page.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(base + "/") && !url.startsWith("data:") && !url.startsWith("blob:")) {
      problems.push(`external request: ${url}`);
    }
  });
  return problems;
}

/** Polls `probe()` until it returns a truthy value; fails with `what` after `timeout`. */
export async function eventually(what, probe, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) {
        return value;
      }
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the locator's text matches `pattern`; returns the text. */
export async function textMatches(locator, pattern, timeout) {
  let text = "";
  return eventually(
    `text matching ${pattern}`,
    async () => {
      text = (await locator.first().textContent({ timeout: 1000 })) ?? "";
      return pattern.test(text) ? text : null;
    },
    timeout,
  ).catch((error) => {
    throw new Error(`${error.message}; text was ${JSON.stringify(text)}`);
  });
}

/** The approval count in the navigation (0 when the badge is hidden). */
export async function badgeCount(page) {
  return Number(await page.locator("#approval-count").getAttribute("data-count"));
}

export async function screenshot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, name);
  // A sticky header would otherwise be painted where the page happens to be scrolled.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * A logged-in console for a test file: `pocketpilot serve` on `tree`, Chromium and one
 * browser context (one person's cookies) whose pages are all watched (`problems`).
 * Returns `{ server, browser, context, problems, close() }`.
 */
export async function openConsole(tree) {
  const server = await startServer(tree);
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  context.setDefaultTimeout(10000);
  const problems = [];
  context.on("page", (page) => watchPage(page, server.base, problems));
  const page = await context.newPage();
  await page.goto(server.loginUrl);
  await page.locator("#nav").waitFor({ state: "visible" });
  await page.close();
  return {
    server,
    browser,
    context,
    problems,
    async close() {
      await browser.close();
      await server.stop();
      if (!process.env.KEEP_E2E_TREE) {
        fs.rmSync(tree.root, { recursive: true, force: true });
      }
    },
  };
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations on the page as it is now. */
export async function axeViolations(page) {
  // Evaluated through the DevTools protocol, so the page's CSP (no inline scripts) stays.
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** How far the page scrolls sideways (0 when it fits the window). */
export async function horizontalOverflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** Fails unless the page fits its window's width (no horizontal scrolling). */
export async function assertNoHorizontalScroll(page) {
  const overflow = await horizontalOverflow(page);
  assert.ok(overflow <= 0, `no horizontal scrolling (overflow ${overflow}px)`);
}
