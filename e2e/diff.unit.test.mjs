// Unit tests of the console's diff module (crates/pp-server/assets/diff.js): parsing,
// the line diff, word highlights and reverse application. Pure functions, no browser.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  diffSequences,
  diffTexts,
  highlightWords,
  parseUnified,
  reverseApply,
  toHunks,
  unifiedDiff,
  wordDiff,
} from "../crates/pp-server/assets/diff.js";

const kinds = (lines) => lines.map((line) => line.kind);

test("--- and +++ inside a hunk are a deletion and an addition, not file headers", () => {
  const diff = [
    "--- a/notes.md",
    "+++ b/notes.md",
    "@@ -1,4 +1,4 @@",
    " # Title",
    "----",
    "+++ added",
    " body",
    "--- old front matter",
    "+new",
  ].join("\n");
  const { headers, hunks } = parseUnified(diff);
  assert.deepEqual(headers, ["--- a/notes.md", "+++ b/notes.md"]);
  assert.equal(hunks.length, 1);
  assert.deepEqual(kinds(hunks[0].lines), ["context", "del", "add", "context", "del", "add"]);
  assert.equal(hunks[0].lines[1].text, "---");
  assert.equal(hunks[0].lines[2].text, "++ added");
  assert.equal(hunks[0].lines[4].text, "-- old front matter");
});

test("line numbers follow the hunk header on both sides", () => {
  const { hunks } = parseUnified("@@ -10,3 +10,4 @@ fn main\n a\n-b\n+B\n+C\n c\n");
  const [hunk] = hunks;
  assert.equal(hunk.section, "fn main");
  assert.deepEqual(
    hunk.lines.map((line) => [line.kind, line.old, line.new]),
    [
      ["context", 10, 10],
      ["del", 11, null],
      ["add", null, 11],
      ["add", null, 12],
      ["context", 12, 13],
    ],
  );
});

test("a second file's headers after a finished hunk are headers again", () => {
  const diff = "--- a\n+++ a\n@@ -1 +1 @@\n-x\n+y\n--- b\n+++ b\n@@ -1 +1 @@\n-p\n+q\n";
  const { headers, hunks } = parseUnified(diff);
  assert.deepEqual(headers, ["--- a", "+++ a", "--- b", "+++ b"]);
  assert.equal(hunks.length, 2);
  assert.deepEqual(kinds(hunks[1].lines), ["del", "add"]);
});

test("no-newline notes are notes", () => {
  const { hunks } = parseUnified("@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n");
  assert.deepEqual(kinds(hunks[0].lines), ["del", "note", "add"]);
});

test("the line diff is minimal and keeps both texts", () => {
  const a = ["a", "b", "c", "d", "e"];
  const b = ["a", "c", "d", "x", "e", "f"];
  const ops = diffSequences(a, b);
  assert.deepEqual(ops.filter((op) => op.kind !== "add").map((op) => op.text), a);
  assert.deepEqual(ops.filter((op) => op.kind !== "del").map((op) => op.text), b);
  assert.equal(ops.filter((op) => op.kind !== "context").length, 3, JSON.stringify(ops));
});

test("diffTexts counts lines and numbers them", () => {
  const { lines, added, removed } = diffTexts("Buy milk\nCall Bob\n", "Buy milk\nCall Ada\nShip the release\n");
  assert.equal(added, 2);
  assert.equal(removed, 1);
  assert.deepEqual(
    lines.map((line) => [line.kind, line.old, line.new, line.text]),
    [
      ["context", 1, 1, "Buy milk"],
      ["del", 2, null, "Call Bob"],
      ["add", null, 2, "Call Ada"],
      ["add", null, 3, "Ship the release"],
    ],
  );
  assert.deepEqual(diffTexts("", "one\ntwo\n").lines.map((line) => line.kind), ["add", "add"]);
});

test("hunks keep three lines of context and merge close changes", () => {
  const old = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
  const changed = old.replace("line 5\n", "line five\n").replace("line 8\n", "line eight\n").replace("line 25\n", "");
  const hunks = toHunks(diffTexts(old, changed).lines);
  assert.equal(hunks.length, 2);
  assert.equal(hunks[0].oldStart, 2);
  assert.equal(hunks[1].oldStart, 22);
  assert.equal(hunks[1].oldCount, 7);
  assert.equal(hunks[1].newCount, 6);
});

test("unifiedDiff then reverseApply gives back the old text", () => {
  const old = "# Todo\n---\nBuy milk\nCall Bob\n\nmore\nlines\nhere\nend\n";
  const next = "# Todo\n---\nBuy milk\nCall Ada\n\nmore\nlines\nhere\nend\nnew last\n";
  const diff = unifiedDiff(old, next, "a/todo.md", "b/todo.md");
  assert.match(diff, /^--- a\/todo\.md\n\+\+\+ b\/todo\.md\n@@ -1,9 \+1,10 @@/);
  assert.equal(reverseApply(next, diff), old);
  assert.equal(reverseApply("something else\n", diff), null, "a diff that does not fit is refused");
  assert.equal(unifiedDiff("same\n", "same\n"), "");
});

test("word highlights mark only the words that differ", () => {
  const words = wordDiff("Call Bob today", "Call Ada today");
  assert.deepEqual(words.old, [
    { text: "Call ", changed: false },
    { text: "Bob", changed: true },
    { text: " today", changed: false },
  ]);
  assert.deepEqual(words.new.filter((piece) => piece.changed).map((piece) => piece.text), ["Ada"]);
  assert.equal(wordDiff("alpha", "omega"), null, "nothing in common: no highlight");
  const lines = highlightWords([
    { kind: "del", text: "port = 8080" },
    { kind: "add", text: "port = 9090" },
    { kind: "add", text: "host = x" },
  ]);
  assert.deepEqual(lines[1].words.filter((piece) => piece.changed).map((piece) => piece.text), ["9090"]);
  assert.equal(lines[2].words, undefined);
});
