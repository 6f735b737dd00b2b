// @ts-check
// Markdown for the file preview, rendered safely: the text is parsed line by line into a
// small subset (headings, paragraphs, lists, block quotes, rules, fenced code, inline
// code, emphasis, strong, links) and built with the element builder. Nothing is ever
// parsed as HTML: raw HTML in the file shows as text. Links keep only http(s) and mailto
// targets; anything else (javascript:, data:, relative paths) is shown as plain text.

import { h } from "./dom.js";

/**
 * A link target the preview may follow, or null.
 * @param {string} href
 * @returns {string | null}
 */
export function safeHref(href) {
  const trimmed = href.trim();
  return /^(https?:\/\/|mailto:)[^\s]*$/i.test(trimmed) ? trimmed : null;
}

/** Inline syntax: code spans, links, strong, emphasis (first match wins). */
const INLINE = /`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/;

/**
 * Inline Markdown as nodes.
 * @param {string} text
 * @returns {(Node | string)[]}
 */
export function inline(text) {
  /** @type {(Node | string)[]} */
  const out = [];
  let rest = text;
  while (rest) {
    const match = INLINE.exec(rest);
    if (!match) {
      out.push(rest);
      break;
    }
    if (match.index > 0) {
      out.push(rest.slice(0, match.index));
    }
    const [whole, code, label, href, strong1, strong2, em1, em2] = match;
    if (code !== undefined) {
      out.push(h("code", { text: code }));
    } else if (label !== undefined) {
      const safe = safeHref(href);
      out.push(safe ? h("a", { href: safe, rel: "noopener noreferrer", target: "_blank" }, inline(label)) : whole);
    } else if (strong1 !== undefined || strong2 !== undefined) {
      out.push(h("strong", {}, inline(strong1 ?? strong2)));
    } else {
      out.push(h("em", {}, inline(em1 ?? em2)));
    }
    rest = rest.slice(match.index + whole.length);
  }
  return out;
}

/**
 * Renders Markdown text into a `<div class="markdown">`.
 * @param {string} source
 * @returns {HTMLElement}
 */
export function renderMarkdown(source) {
  const root = h("div", { class: "markdown" });
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  /** @type {string[]} */
  let paragraph = [];
  /** @type {HTMLElement | null} */
  let list = null;
  let listOrdered = false;

  const flushParagraph = () => {
    if (paragraph.length) {
      root.append(h("p", {}, inline(paragraph.join(" "))));
      paragraph = [];
    }
  };
  const closeList = () => {
    list = null;
  };

  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index];
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      flushParagraph();
      closeList();
      const body = [];
      index += 1;
      while (index < lines.length && !lines[index].trimStart().startsWith(fence[1])) {
        body.push(lines[index]);
        index += 1;
      }
      root.append(h("pre", { class: "code", dataset: fence[2] ? { lang: fence[2] } : undefined }, h("code", { text: body.join("\n") })));
      continue;
    }
    if (/^\s*$/.test(line)) {
      flushParagraph();
      closeList();
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flushParagraph();
      closeList();
      // The page's own h1 is the file name: document headings start one level lower.
      const level = Math.min(6, heading[1].length + 1);
      root.append(h("h" + level, {}, inline(heading[2])));
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushParagraph();
      closeList();
      root.append(h("hr"));
      continue;
    }
    const quote = /^\s{0,3}>\s?(.*)$/.exec(line);
    if (quote) {
      flushParagraph();
      closeList();
      const last = root.lastElementChild;
      if (last && last.tagName === "BLOCKQUOTE") {
        last.append(" ", ...inline(quote[1]));
      } else {
        root.append(h("blockquote", {}, inline(quote[1])));
      }
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flushParagraph();
      const ordered = /\d/.test(item[1]);
      if (!list || listOrdered !== ordered) {
        list = h(ordered ? "ol" : "ul");
        listOrdered = ordered;
        root.append(list);
      }
      const task = /^\[([ xX])\]\s+(.*)$/.exec(item[2]);
      list.append(
        task
          ? h("li", { class: "task-item" }, h("span", { "aria-hidden": "true", text: task[1] === " " ? "☐ " : "☑ " }), inline(task[2]))
          : h("li", {}, inline(item[2])),
      );
      continue;
    }
    if (list && /^\s{2,}\S/.test(line) && list.lastElementChild) {
      list.lastElementChild.append(" ", ...inline(line.trim()));
      continue;
    }
    closeList();
    paragraph.push(line.trim());
  }
  flushParagraph();
  return root;
}

/**
 * Plain text with its `code spans` as `<code>` elements (nothing else is interpreted:
 * a model's `*` and `_` stay as they are). Built with DOM APIs only.
 * @param {string} text
 * @returns {(Node | string)[]}
 */
export function codeSpans(text) {
  /** @type {(Node | string)[]} */
  const out = [];
  const pattern = /`([^`\n]+)`/g;
  let at = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match.index > at) {
      out.push(text.slice(at, match.index));
    }
    out.push(h("code", { class: "code-span", text: match[1] }));
    at = match.index + match[0].length;
  }
  if (at < text.length) {
    out.push(text.slice(at));
  }
  return out;
}

/**
 * Turns the code spans of a text-only element (a model message, a final answer) into
 * `<code>` in place; an element that already has child elements is left alone. Returns
 * whether it changed anything.
 * @param {Element} element
 * @returns {boolean}
 */
export function renderCodeSpans(element) {
  const text = element.textContent || "";
  if (element.childElementCount > 0 || !/`[^`\n]+`/.test(text)) {
    return false;
  }
  element.replaceChildren(...codeSpans(text));
  return true;
}
