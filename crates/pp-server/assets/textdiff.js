// @ts-check
// A small line diff for the upload-over-existing prompt (files.js): the unified diff from
// the file now to the uploaded one, in the text form `renderDiff` draws. The common
// prefix and suffix are cut first; the middle is compared with a longest-common-
// subsequence table, capped so a huge file never freezes the page.

/** Bigger texts are not decoded for comparison. */
const MAX_BYTES = 1024 * 1024;
/** Cells of the comparison table (changed lines before × after). */
const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

/**
 * The UTF-8 text in `buffer`, or null when it is binary (not UTF-8, or has NUL bytes) or
 * larger than 1 MiB.
 * @param {ArrayBuffer} buffer
 * @returns {string | null}
 */
export function readText(buffer) {
  if (buffer.byteLength > MAX_BYTES) {
    return null;
  }
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(buffer);
    return text.includes("\u0000") ? null : text;
  } catch {
    return null;
  }
}

/**
 * @param {string} text
 * @returns {string[]}
 */
function lines(text) {
  if (text === "") {
    return [];
  }
  return text.replace(/\n$/, "").split("\n");
}

/**
 * The unified diff from `before` to `after` (`--- a/name`, `+++ b/name`, hunks with three
 * lines of context); "" when they are equal; null when they are too large to compare.
 * @param {string} before
 * @param {string} after
 * @param {string} name
 * @returns {string | null}
 */
export function unifiedDiff(before, after, name) {
  const a = lines(before);
  const b = lines(after);
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
  const n = endA - start;
  const m = endB - start;
  if ((n + 1) * (m + 1) > MAX_CELLS) {
    return null;
  }
  // lcs[i][j]: the longest common subsequence of a[start+i..endA] and b[start+j..endB].
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      lcs[i * width + j] =
        a[start + i] === b[start + j] ? lcs[(i + 1) * width + j + 1] + 1 : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  /** @type {{ kind: " " | "-" | "+", text: string, lineA: number, lineB: number }[]} */
  const ops = [];
  for (let i = 0; i < start; i += 1) {
    ops.push({ kind: " ", text: a[i], lineA: i, lineB: i });
  }
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[start + i] === b[start + j]) {
      ops.push({ kind: " ", text: a[start + i], lineA: start + i, lineB: start + j });
      i += 1;
      j += 1;
    } else if (i < n && (j === m || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) {
      ops.push({ kind: "-", text: a[start + i], lineA: start + i, lineB: start + j });
      i += 1;
    } else {
      ops.push({ kind: "+", text: b[start + j], lineA: start + i, lineB: start + j });
      j += 1;
    }
  }
  for (let k = 0; k < a.length - endA; k += 1) {
    ops.push({ kind: " ", text: a[endA + k], lineA: endA + k, lineB: endB + k });
  }
  const changed = ops.map((op, index) => (op.kind === " " ? -1 : index)).filter((index) => index >= 0);
  if (changed.length === 0) {
    return "";
  }
  // Group changes whose context overlaps into hunks.
  const out = [`--- a/${name}`, `+++ b/${name}`];
  let hunkStart = Math.max(0, changed[0] - CONTEXT);
  let hunkEnd = Math.min(ops.length, changed[0] + CONTEXT + 1);
  const flush = () => {
    const slice = ops.slice(hunkStart, hunkEnd);
    const countA = slice.filter((op) => op.kind !== "+").length;
    const countB = slice.filter((op) => op.kind !== "-").length;
    const first = slice[0];
    out.push(`@@ -${first.lineA + (countA ? 1 : 0)},${countA} +${first.lineB + (countB ? 1 : 0)},${countB} @@`);
    for (const op of slice) {
      out.push(op.kind + op.text);
    }
  };
  for (const index of changed.slice(1)) {
    if (index - CONTEXT <= hunkEnd) {
      hunkEnd = Math.min(ops.length, index + CONTEXT + 1);
    } else {
      flush();
      hunkStart = index - CONTEXT;
      hunkEnd = Math.min(ops.length, index + CONTEXT + 1);
    }
  }
  flush();
  return out.join("\n") + "\n";
}
