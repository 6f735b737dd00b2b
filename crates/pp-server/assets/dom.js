// DOM helpers. Every piece of data reaches the page as a text node or an attribute
// value set through the DOM API; nothing is ever parsed as HTML.

/**
 * Creates an element. `attrs` keys: `class`, `text`, `on<event>` (listeners), `dataset`
 * (object), boolean attributes (true/false), anything else as an attribute string.
 * Children are nodes, strings (become text nodes), arrays, or null/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (key === "class") {
      element.className = value;
    } else if (key === "text") {
      element.textContent = String(value);
    } else if (key === "dataset") {
      Object.assign(element.dataset, value);
    } else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else if (value === true) {
      element.setAttribute(key, "");
    } else {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends children (see `h`) to `parent`. */
export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces every child of `parent`. */
export function replace(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

/** A local date and time for an RFC 3339 timestamp. */
export function formatTime(stamp) {
  if (!stamp) {
    return "";
  }
  const date = new Date(stamp);
  if (Number.isNaN(date.getTime())) {
    return String(stamp);
  }
  return date.toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** Just the clock time, for timeline rows. */
export function formatClock(stamp) {
  const date = new Date(stamp);
  if (Number.isNaN(date.getTime())) {
    return "";
  }
  return date.toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** `<time>` element with the full timestamp as its machine value. */
export function timeElement(stamp, clockOnly) {
  return h("time", {
    datetime: stamp,
    title: stamp,
    text: clockOnly ? formatClock(stamp) : formatTime(stamp),
  });
}

/** Human words for a task state. */
/** Who can start a task (`created_by`), as the console names them. */
export const STARTED_BY = {
  operator: "You (console or CLI)",
  scheduler: "A schedule",
  webhook: "A webhook",
  mcp_client: "An MCP client",
};

export const STATE_LABELS = {
  queued: "queued",
  running: "running",
  waiting_approval: "waiting for approval",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  timed_out: "timed out",
  interrupted: "interrupted",
  pending: "pending",
  approved: "approved",
  rejected: "rejected",
  stale: "stale",
};

/** A state badge (task or approval state). */
export function stateBadge(state) {
  return h("span", {
    class: "badge state-" + state,
    dataset: { state },
    text: STATE_LABELS[state] || state,
  });
}

/** Pretty JSON text of a value, or of a JSON string when it parses. */
export function prettyJson(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

/** Whether a text block is long enough to start collapsed. */
export function isLong(text) {
  return text.length > 400 || text.split("\n").length > 8;
}

/**
 * A `<pre>` block, wrapped in a collapsed `<details>` when the text is long.
 * `summary` names the block in the collapsed state.
 */
export function block(text, summary, className) {
  const pre = h("pre", { class: className || "" , text });
  if (!isLong(text)) {
    return pre;
  }
  const lines = text.split("\n").length;
  return h(
    "details",
    { class: "long" },
    h("summary", { text: `${summary} (${lines} lines, ${text.length} characters)` }),
    pre,
  );
}

/** A short status line: `kind` is `info`, `ok`, `error` or `warn`. */
export function notice(kind, text) {
  return h("p", {
    class: "notice notice-" + kind,
    role: kind === "error" ? "alert" : "status",
    text,
  });
}

/** Parses the query string that follows the route in the hash (`#/files?path=a`). */
export function hashQuery() {
  const hash = location.hash || "";
  const index = hash.indexOf("?");
  return new URLSearchParams(index === -1 ? "" : hash.slice(index + 1));
}

/** A hash link to `route` with the given query (empty values left out). */
export function hashLink(route, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") {
      params.set(key, value);
    }
  }
  const text = params.toString();
  return "#" + route + (text ? "?" + text : "");
}

/** Calls `fn` at most once per `wait` ms, at the end of a burst. */
export function debounce(fn, wait) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn(...args);
    }, wait);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}
