// @ts-check
// Paths and targets written by the model may hide characters that change what a person
// reads: bidirectional overrides (U+202E turns `txt.exe` around), zero-width characters,
// line breaks and other controls. `visible()` shows every such character as a visible
// escape (`\u{202e}`) in its own style, so what the card shows is what will be touched.

/**
 * Characters shown as escapes: C0 and C1 controls (newline and tab included), DEL, the
 * soft hyphen, the Arabic letter mark, Hangul fillers, Mongolian separators, zero-width
 * and directional marks, line and paragraph separators, bidi embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069), invisible operators, the byte-order mark,
 * interlinear annotation characters and tag characters.
 */
const INVISIBLE =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\ufff9-\ufffb]|[\u{e0000}-\u{e007f}]/u;

const INVISIBLE_ALL = new RegExp(INVISIBLE.source, "gu");

/** Names of the characters most likely to be used to mislead. */
const NAMES = {
  0x09: "tab",
  0x0a: "line feed",
  0x0d: "carriage return",
  0x200b: "zero width space",
  0x200c: "zero width non-joiner",
  0x200d: "zero width joiner",
  0x200e: "left-to-right mark",
  0x200f: "right-to-left mark",
  0x202a: "left-to-right embedding",
  0x202b: "right-to-left embedding",
  0x202c: "pop directional formatting",
  0x202d: "left-to-right override",
  0x202e: "right-to-left override",
  0x2066: "left-to-right isolate",
  0x2067: "right-to-left isolate",
  0x2068: "first strong isolate",
  0x2069: "pop directional isolate",
  0x2060: "word joiner",
  0xfeff: "zero width no-break space",
};

/**
 * The escape shown for one character, like `\u{202e}`.
 * @param {string} char
 * @returns {string}
 */
export function escapeChar(char) {
  const code = char.codePointAt(0) ?? 0;
  return "\\u{" + code.toString(16) + "}";
}

/**
 * Whether `text` holds any character `visible()` would escape.
 * @param {string} text
 * @returns {boolean}
 */
export function hasInvisible(text) {
  return INVISIBLE.test(text);
}

/**
 * `text` with every invisible or control character replaced by its escape (for titles,
 * labels and other plain-text places).
 * @param {string} text
 * @returns {string}
 */
export function escapeInvisible(text) {
  return String(text).replace(INVISIBLE_ALL, escapeChar);
}

/**
 * A `<code>` element showing `text` with every invisible or control character as a
 * styled escape (`<span class="invisible-char">\u{202e}</span>`, its name in the
 * title). The element is isolated from the surrounding text direction. When anything
 * was escaped, it gets the class `has-invisible` and a warning title.
 * @param {string} text
 * @param {string} [className]
 * @returns {HTMLElement}
 */
export function visibleCode(text, className) {
  const element = document.createElement("code");
  element.className = ["visible-text", className].filter(Boolean).join(" ");
  element.setAttribute("dir", "ltr");
  appendVisible(element, String(text));
  if (element.querySelector(".invisible-char")) {
    element.classList.add("has-invisible");
    element.title = "Contains invisible or control characters, shown as \\u{…}: " + escapeInvisible(text);
  }
  return element;
}

/**
 * Pretty-printed JSON with invisible characters escaped. `JSON.stringify` already
 * escapes controls inside strings, so the only raw controls left are the layout's line
 * breaks, which stay.
 * @param {string} json
 * @returns {string}
 */
export function escapeInvisibleJson(json) {
  return String(json).replace(INVISIBLE_ALL, (char) => (char === "\n" ? char : escapeChar(char)));
}

/**
 * A "resolves to notes.txt" line when the path the model wrote (`drafts/../notes.txt`,
 * a link inside the workspace) is not the workspace-relative file that will be touched;
 * `null` when they are the same or nothing was resolved.
 * @param {string | undefined | null} target
 * @param {string | undefined | null} resolved
 * @returns {HTMLElement | null}
 */
export function resolvesTo(target, resolved) {
  if (!resolved || !target || resolved === target) {
    return null;
  }
  const line = document.createElement("p");
  line.className = "resolves-to";
  const label = document.createElement("span");
  label.className = "muted";
  label.textContent = "resolves to ";
  line.append(label, visibleCode(resolved, "resolved"));
  return line;
}

/**
 * Appends `text` to `parent` as text nodes, with each invisible or control character
 * as a styled escape.
 * @param {HTMLElement} parent
 * @param {string} text
 */
function appendVisible(parent, text) {
  let start = 0;
  for (const match of text.matchAll(INVISIBLE_ALL)) {
    const index = match.index ?? 0;
    if (index > start) {
      parent.append(document.createTextNode(text.slice(start, index)));
    }
    const char = match[0];
    const code = char.codePointAt(0) ?? 0;
    const span = document.createElement("span");
    span.className = "invisible-char";
    span.textContent = escapeChar(char);
    span.title = NAMES[/** @type {keyof typeof NAMES} */ (code)] || "invisible or control character";
    parent.append(span);
    start = index + char.length;
  }
  if (start < text.length) {
    parent.append(document.createTextNode(text.slice(start)));
  }
}
