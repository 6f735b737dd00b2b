// Unit tests of the console's effect helpers (crates/pp-server/assets/effects.js): the
// words of a card's label (rename vs move), the script of a shell, the limits, and when a
// card says "cannot be undone". Pure functions, no browser; the DOM parts are checked in
// cards.test.mjs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { labelWords, limitsList, parentOf, shellScript, uncoveredText, undoNote } from "../crates/pp-server/assets/effects.js";

test("a move within one folder is a rename, resolved paths decide", () => {
  assert.equal(parentOf("a/b/c.txt"), "a/b");
  assert.equal(parentOf("c.txt"), "");
  assert.equal(parentOf("a/dir/"), "a");
  assert.equal(labelWords({ label: "move", target: "a/x.txt", destination: "a/y.txt" }), "rename");
  assert.equal(labelWords({ label: "move", target: "a/x.txt", destination: "b/x.txt" }), "move");
  // `link/x.txt` resolves into `a/`: the same folder once resolved.
  assert.equal(labelWords({ label: "move", target: "a/x.txt", resolved: "a/x.txt", destination: "link/y.txt", destination_resolved: "a/y.txt" }), "rename");
  assert.equal(labelWords({ label: "create_folder" }), "create folder");
  assert.equal(labelWords({ label: "run" }), "run command");
  assert.equal(labelWords({ label: "overwrite" }), "overwrite");
});

test("a shell's script is the argument after -c; limits read as words", () => {
  assert.equal(shellScript(["bash", "-c", "echo hi", "arg0"]), "echo hi");
  assert.equal(shellScript(["python3", "x.py"]), null);
  assert.equal(shellScript(["sh", "-c"]), null);
  assert.deepEqual(limitsList({ timeout_secs: 5, cpu_secs: 6, memory_mb: 7, processes: 8, file_size_mb: 9, output_bytes: 2048, network: false }), [
    "wall-clock timeout 5 s",
    "CPU time 6 s",
    "memory 7 MiB",
    "8 processes",
    "files up to 9 MiB",
    "output up to 2.0 KB per stream",
    "no network",
  ]);
});

test("cannot be undone: every command, and a delete or move the server says is not revertible", () => {
  // A command's changes are recorded: its card's "Revert" fact says what is not covered.
  assert.equal(undoNote({ label: "run" }), null);
  assert.match(undoNote({ label: "delete", revertible: false }), /the file it deletes is too large/);
  assert.match(undoNote({ label: "move", revertible: false }), /the file it replaces is too large/);
  assert.equal(undoNote({ label: "delete", revertible: true }), null);
  assert.equal(undoNote({ label: "move" }), null);
  assert.equal(undoNote({ label: "overwrite", revertible: false }), "This call cannot be undone: the file it replaces is too large to keep a copy of.");
});

test("a command card says how much of the workspace a revert could not cover", () => {
  assert.equal(uncoveredText({ files: 0, bytes: 0 }), "a revert covers the whole workspace");
  assert.equal(
    uncoveredText({ files: 1, bytes: 2048 }),
    "a revert could not cover 1 file (2.0 KB): too large, beyond the snapshot budget, or ignored",
  );
  assert.match(uncoveredText({ files: 3, bytes: 1288490189 }), /^a revert could not cover 3 files \(1\.2 GB\)/);
});
