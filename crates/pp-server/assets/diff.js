// Review-grade diffs: a unified-diff parser, a line diff (Myers), word-level highlights
// and the rendering (unified or split, line numbers, expandable context).
//
// Parsing and diffing are pure functions (no DOM at import time: the node unit tests in
// e2e/diff.unit.test.mjs import this module directly); only the `render*` functions
// touch the document.

import { h } from "./dom.js";

/** Lines of context around a change, as in `diff -u`. */
export const CONTEXT = 3;

/** Splits text into lines; a final newline does not make an extra empty line. */
export function splitLines(text) {
  if (text === "") {
    return [];
  }
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") {
    lines.pop();
  }
  return lines;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

/**
 * Parses a unified diff into `{ headers, hunks }`. Each hunk is
 * `{ oldStart, oldCount, newStart, newCount, section, lines }` and each line
 * `{ kind: "context" | "add" | "del" | "note", text, old, new }` (`old`/`new` are line
 * numbers, null where the line does not exist on that side).
 *
 * `---`/`+++` are file headers only outside a hunk: inside one (while the hunk's line
 * counts are not used up) a line `--- x` is the deletion of `-- x` and `+++ y` the
 * addition of `++ y`.
 */
export function parseUnified(text) {
  const headers = [];
  const hunks = [];
  let hunk = null;
  let oldLeft = 0;
  let newLeft = 0;
  let oldNo = 0;
  let newNo = 0;
  const lines = text.replace(/\n$/, "").split("\n");
  for (const line of lines) {
    const inside = hunk !== null && (oldLeft > 0 || newLeft > 0);
    if (!inside) {
      const match = HUNK.exec(line);
      if (match) {
        oldNo = Number(match[1]);
        newNo = Number(match[3]);
        oldLeft = match[2] === undefined ? 1 : Number(match[2]);
        newLeft = match[4] === undefined ? 1 : Number(match[4]);
        // A count of 0 names the line before the change.
        if (oldLeft === 0) {
          oldNo += 1;
        }
        if (newLeft === 0) {
          newNo += 1;
        }
        hunk = {
          oldStart: oldNo,
          oldCount: oldLeft,
          newStart: newNo,
          newCount: newLeft,
          section: match[5].trim(),
          lines: [],
        };
        hunks.push(hunk);
        continue;
      }
      if (line.startsWith("\\") && hunk) {
        hunk.lines.push({ kind: "note", text: line, old: null, new: null });
        continue;
      }
      if (hunk === null || /^(---|\+\+\+|diff |index |new file|deleted file|similarity|rename |old mode|new mode|Binary )/.test(line)) {
        headers.push(line);
        continue;
      }
      // Lines past the counted end of a hunk (a diff without exact counts): keep
      // reading them as hunk lines by their first character.
    }
    if (hunk === null) {
      headers.push(line);
      continue;
    }
    const sign = line[0];
    const body = line.slice(1);
    if (sign === "+") {
      hunk.lines.push({ kind: "add", text: body, old: null, new: newNo++ });
      newLeft -= 1;
    } else if (sign === "-") {
      hunk.lines.push({ kind: "del", text: body, old: oldNo++, new: null });
      oldLeft -= 1;
    } else if (sign === "\\") {
      hunk.lines.push({ kind: "note", text: line, old: null, new: null });
    } else {
      // " x" is context; an empty line is context whose space was stripped.
      hunk.lines.push({ kind: "context", text: sign === " " ? body : line, old: oldNo++, new: newNo++ });
      oldLeft -= 1;
      newLeft -= 1;
    }
  }
  return { headers, hunks };
}

/** Lines added and removed by parsed hunks. */
export function countChanges(hunks) {
  let added = 0;
  let removed = 0;
  for (const hunk of hunks) {
    for (const line of hunk.lines) {
      added += line.kind === "add" ? 1 : 0;
      removed += line.kind === "del" ? 1 : 0;
    }
  }
  return { added, removed };
}

/**
 * The shortest edit script from `a` to `b` (Myers' O(ND) algorithm), as operations
 * `{ kind: "context" | "del" | "add", text }` in order. `equal(x, y)` compares items.
 * Above `maxCost` edits it gives up on finding the shortest script and replaces the
 * middle wholesale (still a correct, just longer, script).
 */
export function diffSequences(a, b, { maxCost = 4000 } = {}) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) {
    start += 1;
  }
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const ops = [];
  for (let i = 0; i < start; i += 1) {
    ops.push({ kind: "context", text: a[i] });
  }
  ops.push(...myers(a.slice(start, endA), b.slice(start, endB), maxCost));
  for (let i = endA; i < a.length; i += 1) {
    ops.push({ kind: "context", text: a[i] });
  }
  return ops;
}

function myers(a, b, maxCost) {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) {
    return [...a.map((text) => ({ kind: "del", text })), ...b.map((text) => ({ kind: "add", text }))];
  }
  const max = n + m;
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace = [];
  let found = false;
  for (let d = 0; d <= Math.min(max, maxCost); d += 1) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x;
      if (k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1];
      } else {
        x = v[offset + k - 1] + 1;
      }
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x += 1;
        y += 1;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
    if (found) {
      break;
    }
  }
  if (!found) {
    return [...a.map((text) => ({ kind: "del", text })), ...b.map((text) => ({ kind: "add", text }))];
  }
  // Walk the trace back from (n, m).
  const ops = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d -= 1) {
    const vd = trace[d];
    const k = x - y;
    let prevK;
    if (k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1])) {
      prevK = k + 1;
    } else {
      prevK = k - 1;
    }
    const prevX = d === 0 ? 0 : vd[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x -= 1;
      y -= 1;
      ops.push({ kind: "context", text: a[x] });
    }
    if (d > 0) {
      if (x === prevX) {
        y -= 1;
        ops.push({ kind: "add", text: b[y] });
      } else {
        x -= 1;
        ops.push({ kind: "del", text: a[x] });
      }
    }
  }
  ops.reverse();
  return ops;
}

/** Numbers the operations of a line diff: `old`/`new` line numbers (1-based). */
export function numberOps(ops) {
  let oldNo = 1;
  let newNo = 1;
  return ops.map((op) => {
    if (op.kind === "context") {
      return { ...op, old: oldNo++, new: newNo++ };
    }
    if (op.kind === "del") {
      return { ...op, old: oldNo++, new: null };
    }
    return { ...op, old: null, new: newNo++ };
  });
}

/** Puts each changed run's deletions before its additions (Myers may interleave them). */
function orderRuns(ops) {
  const out = [];
  let dels = [];
  let adds = [];
  const flush = () => {
    out.push(...dels, ...adds);
    dels = [];
    adds = [];
  };
  for (const op of ops) {
    if (op.kind === "del") {
      dels.push(op);
    } else if (op.kind === "add") {
      adds.push(op);
    } else {
      flush();
      out.push(op);
    }
  }
  flush();
  return out;
}

/**
 * The full line diff of two texts: `{ lines, added, removed }` where `lines` are every
 * line of both sides, numbered (context included, so it can be expanded).
 */
export function diffTexts(oldText, newText) {
  const lines = numberOps(orderRuns(diffSequences(splitLines(oldText), splitLines(newText))));
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    added += line.kind === "add" ? 1 : 0;
    removed += line.kind === "del" ? 1 : 0;
  }
  return { lines, added, removed };
}

/** Groups numbered lines into hunks with `context` lines around each change. */
export function toHunks(lines, context = CONTEXT) {
  const hunks = [];
  let current = null;
  let lastChange = -Infinity;
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i].kind === "context") {
      continue;
    }
    const from = Math.max(0, i - context);
    if (current && from <= lastChange + context + 1) {
      current.end = i + 1;
    } else {
      if (current) {
        hunks.push(current);
      }
      current = { start: from, end: i + 1 };
    }
    lastChange = i;
  }
  if (current) {
    hunks.push(current);
  }
  return hunks.map(({ start, end }) => {
    const stop = Math.min(lines.length, end + context);
    const slice = lines.slice(start, stop);
    const oldLines = slice.filter((line) => line.kind !== "add");
    const newLines = slice.filter((line) => line.kind !== "del");
    const firstOld = oldLines.length ? oldLines[0].old : (lines.slice(0, start).filter((l) => l.kind !== "add").length);
    const firstNew = newLines.length ? newLines[0].new : (lines.slice(0, start).filter((l) => l.kind !== "del").length);
    return {
      oldStart: firstOld,
      oldCount: oldLines.length,
      newStart: firstNew,
      newCount: newLines.length,
      section: "",
      lines: slice,
      from: start,
      to: stop,
    };
  });
}

/** A unified diff text (`--- a`, `+++ b`, hunks) of two texts. */
export function unifiedDiff(oldText, newText, oldName = "a", newName = "b") {
  const { lines } = diffTexts(oldText, newText);
  const out = [`--- ${oldName}`, `+++ ${newName}`];
  for (const hunk of toHunks(lines)) {
    out.push(`@@ -${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@`);
    for (const line of hunk.lines) {
      out.push((line.kind === "add" ? "+" : line.kind === "del" ? "-" : " ") + line.text);
    }
  }
  return out.length > 2 ? out.join("\n") + "\n" : "";
}

/**
 * Undoes a diff: given the new text and the unified diff that produced it, the old text;
 * null when the diff does not fit the text. (A preview's diff plus the call's full new
 * content give back the whole current file, so context can be expanded.)
 */
export function reverseApply(newText, diffText) {
  const { hunks } = parseUnified(diffText);
  const newLines = splitLines(newText);
  const out = [];
  let at = 0;
  for (const hunk of hunks) {
    const start = hunk.newStart - 1;
    if (start < at) {
      return null;
    }
    out.push(...newLines.slice(at, start));
    at = start;
    for (const line of hunk.lines) {
      if (line.kind === "context") {
        if (newLines[at] !== line.text) {
          return null;
        }
        out.push(line.text);
        at += 1;
      } else if (line.kind === "add") {
        if (newLines[at] !== line.text) {
          return null;
        }
        at += 1;
      } else if (line.kind === "del") {
        out.push(line.text);
      }
    }
  }
  out.push(...newLines.slice(at));
  return out.length ? out.join("\n") + "\n" : "";
}

/** Words, runs of spaces and single punctuation marks: the units of a word diff. */
export function tokenize(text) {
  return text.match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) || [];
}

/**
 * Word-level highlights for a removed and an added line: `{ old, new }`, each a list of
 * `{ text, changed }` pieces. When the lines share no word the whole lines differ and
 * nothing is highlighted inside them (null).
 */
export function wordDiff(oldLine, newLine) {
  const a = tokenize(oldLine);
  const b = tokenize(newLine);
  const ops = diffSequences(a, b, { maxCost: 400 });
  const shared = ops.filter((op) => op.kind === "context" && /\S/.test(op.text)).length;
  if (shared === 0) {
    return null;
  }
  const left = [];
  const right = [];
  const push = (list, text, changed) => {
    const last = list[list.length - 1];
    if (last && last.changed === changed) {
      last.text += text;
    } else {
      list.push({ text, changed });
    }
  };
  for (const op of ops) {
    if (op.kind === "context") {
      push(left, op.text, false);
      push(right, op.text, false);
    } else if (op.kind === "del") {
      push(left, op.text, true);
    } else {
      push(right, op.text, true);
    }
  }
  return { old: left, new: right };
}

/**
 * Pairs each run of removed lines with the added lines that follow it (first with
 * first), and attaches word highlights: sets `words` on paired lines.
 */
export function highlightWords(lines) {
  let i = 0;
  while (i < lines.length) {
    if (lines[i].kind !== "del") {
      i += 1;
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j].kind === "del") {
      j += 1;
    }
    let k = j;
    while (k < lines.length && lines[k].kind === "add") {
      k += 1;
    }
    const pairs = Math.min(j - i, k - j);
    for (let p = 0; p < pairs; p += 1) {
      const words = wordDiff(lines[i + p].text, lines[j + p].text);
      if (words) {
        lines[i + p].words = words.old;
        lines[j + p].words = words.new;
      }
    }
    i = k;
  }
  return lines;
}

// Rendering (DOM).

/** Whether the split view fits (wide windows only; narrow ones show unified). */
function splitFits() {
  return typeof matchMedia !== "function" || !matchMedia("(max-width: 640px)").matches;
}

function codeCell(line, side) {
  const cell = h("td", { class: "diff-code" });
  const sign = line.kind === "add" ? "+" : line.kind === "del" ? "-" : line.kind === "context" ? " " : "";
  cell.append(h("span", { class: "diff-sign", "aria-hidden": "true", text: sign }));
  if (line.words) {
    for (const piece of line.words) {
      cell.append(piece.changed ? h(side === "old" ? "del" : "ins", { class: "diff-word", text: piece.text }) : document.createTextNode(piece.text));
    }
  } else {
    cell.append(document.createTextNode(line.text));
  }
  return cell;
}

function numberCell(value, label) {
  return h("td", { class: "diff-ln", "aria-label": value ? `${label} ${value}` : null, text: value ?? "" });
}

function unifiedRow(line) {
  if (line.kind === "note") {
    return h("tr", { class: "diff-row diff-note" }, h("td", { class: "diff-ln" }), h("td", { class: "diff-ln" }), h("td", { class: "diff-code", text: line.text }));
  }
  return h(
    "tr",
    { class: "diff-row diff-" + line.kind },
    numberCell(line.old, "old line"),
    numberCell(line.new, "new line"),
    codeCell(line, line.kind === "add" ? "new" : "old"),
  );
}

function emptyCells() {
  return [h("td", { class: "diff-ln diff-empty" }), h("td", { class: "diff-code diff-empty" })];
}

/** Split rows: context side by side, each removed line next to its added partner. */
function splitRows(lines) {
  const rows = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.kind === "context" || line.kind === "note") {
      rows.push(
        h(
          "tr",
          { class: "diff-row diff-" + line.kind },
          numberCell(line.old, "old line"),
          line.kind === "note" ? h("td", { class: "diff-code", text: line.text }) : codeCell(line, "old"),
          numberCell(line.new, "new line"),
          line.kind === "note" ? h("td", { class: "diff-code" }) : codeCell(line, "new"),
        ),
      );
      i += 1;
      continue;
    }
    const dels = [];
    const adds = [];
    while (i < lines.length && lines[i].kind === "del") {
      dels.push(lines[i++]);
    }
    while (i < lines.length && lines[i].kind === "add") {
      adds.push(lines[i++]);
    }
    for (let p = 0; p < Math.max(dels.length, adds.length); p += 1) {
      const del = dels[p];
      const add = adds[p];
      const row = h("tr", { class: "diff-row diff-pair" });
      if (del) {
        const code = codeCell(del, "old");
        code.classList.add("diff-del");
        row.append(numberCell(del.old, "old line"), code);
      } else {
        row.append(...emptyCells());
      }
      if (add) {
        const code = codeCell(add, "new");
        code.classList.add("diff-add");
        row.append(numberCell(add.new, "new line"), code);
      } else {
        row.append(...emptyCells());
      }
      rows.push(row);
    }
  }
  return rows;
}

function rowsFor(lines, mode) {
  return mode === "split" ? splitRows(lines) : lines.map(unifiedRow);
}

function gapRow(mode, text, onExpand) {
  const cell = h("td", { class: "diff-gap-cell", colspan: mode === "split" ? 4 : 3 });
  if (onExpand) {
    cell.append(h("button", { type: "button", class: "diff-expand", onclick: onExpand, text }));
  } else {
    cell.append(h("span", { text }));
  }
  return h("tr", { class: "diff-row diff-hunk" }, cell);
}

/**
 * Renders a diff. `source` is either `{ text }` (a unified diff from the server: hunks
 * as given) or `{ lines }` (a full numbered line diff from `diffTexts`: unchanged runs
 * fold into "Show N unchanged lines" buttons). Returns a `<div class="diff-view">` with
 * a unified/split toggle and the table in a scrolling, capped-height box.
 */
export function renderDiffView(source, { label = "diff of the change", toggle = true } = {}) {
  let mode = "unified";
  const expanded = new Set();
  const table = h("table", { class: "diff diff-table", "aria-label": label });
  const box = h("div", { class: "diff-box", tabindex: "0", role: "region", "aria-label": label }, table);
  const parsed = source.text !== undefined ? parseUnified(source.text) : null;
  const lines = parsed ? null : highlightWords(source.lines.map((line) => ({ ...line })));
  if (parsed) {
    for (const hunk of parsed.hunks) {
      highlightWords(hunk.lines);
    }
  }
  const note = h("p", { class: "muted small diff-note-line", hidden: true });

  const draw = () => {
    const effective = mode === "split" && !splitFits() ? "unified" : mode;
    note.hidden = effective === mode;
    note.textContent = note.hidden ? "" : "This window is too narrow for side by side; showing one column.";
    table.className = "diff diff-table diff-" + effective;
    const body = h("tbody");
    if (parsed) {
      for (const header of parsed.headers) {
        if (/^(---|\+\+\+) /.test(header)) {
          continue;
        }
        body.append(h("tr", { class: "diff-row diff-file" }, h("td", { colspan: effective === "split" ? 4 : 3, text: header })));
      }
      for (const hunk of parsed.hunks) {
        const where = `@@ −${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@ ${hunk.section}`.trim();
        body.append(gapRow(effective, where, null));
        body.append(...rowsFor(hunk.lines, effective));
      }
    } else {
      const hunks = toHunks(lines);
      let at = 0;
      const gap = (from, to) => {
        if (to <= from) {
          return;
        }
        const key = from;
        if (expanded.has(key) || to - from <= 1) {
          body.append(...rowsFor(lines.slice(from, to), effective));
          return;
        }
        const count = to - from;
        body.append(
          gapRow(effective, `Show ${count} unchanged line${count === 1 ? "" : "s"}`, () => {
            expanded.add(key);
            draw();
          }),
        );
      };
      for (const hunk of hunks) {
        gap(at, hunk.from);
        body.append(...rowsFor(lines.slice(hunk.from, hunk.to), effective));
        at = hunk.to;
      }
      gap(at, lines.length);
    }
    // Fixed layout takes its widths from the columns (the first row may be a hunk
    // header spanning all of them).
    const cols = effective === "split" ? ["ln", "code", "ln", "code"] : ["ln", "ln", "code"];
    table.replaceChildren(h("colgroup", {}, cols.map((kind) => h("col", { class: "diff-col-" + kind }))), body);
  };

  const view = h("div", { class: "diff-view" });
  if (toggle) {
    const unifiedButton = h("button", { type: "button", class: "seg", "aria-pressed": "true", text: "Unified" });
    const splitButton = h("button", { type: "button", class: "seg", "aria-pressed": "false", text: "Split" });
    const choose = (next) => {
      mode = next;
      unifiedButton.setAttribute("aria-pressed", String(next === "unified"));
      splitButton.setAttribute("aria-pressed", String(next === "split"));
      draw();
    };
    unifiedButton.addEventListener("click", () => choose("unified"));
    splitButton.addEventListener("click", () => choose("split"));
    view.append(h("div", { class: "diff-toolbar", role: "group", "aria-label": "Diff layout" }, unifiedButton, splitButton), note);
  }
  view.append(box);
  draw();
  return view;
}

/** New-file content: every line added, numbered, in the same capped scrolling box. */
export function renderNewContent(content, label = "new file content") {
  return renderDiffView({ lines: diffTexts("", content).lines }, { label, toggle: false });
}

/** Compatibility with the old `renderDiff(diffText)` of dom.js. */
export function renderDiff(text) {
  return renderDiffView({ text });
}
