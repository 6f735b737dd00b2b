// Unit tests of what the console's card says for a call to an MCP server's tool
// (crates/pp-server/assets/effects.js, `mcp` on the approval): the badge names the
// resolved action, and the call cannot be undone (PocketPilot does not see what the
// server changes). Pure functions, no browser.

import assert from "node:assert/strict";
import { test } from "node:test";

import { labelWords, undoNote } from "../crates/pp-server/assets/effects.js";

const mcp = { label: "run", target: "notes/a.txt", mcp: { server: "fs", tool: "write_file", action: "write" } };

test("an MCP call's badge names the resolved action, not a command", () => {
  assert.equal(labelWords(mcp), "MCP write");
  assert.equal(labelWords({ ...mcp, mcp: { ...mcp.mcp, action: "network" } }), "MCP network");
  assert.equal(labelWords({ label: "run" }), "run command");
});

test("an MCP call cannot be undone, and says why", () => {
  assert.equal(undoNote(mcp), "This call cannot be undone: PocketPilot does not see what an MCP server changes.");
});
