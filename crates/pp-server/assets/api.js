// The HTTP API from the console: JSON requests with the session cookie, errors as
// `ApiError`, and live event streams that resume after a dropped connection.

/** An error answer from the API: `{"error": {"code", "message"}}` plus the status. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let unauthorizedHandler = () => {};

/** Sets what happens when the API says the session is missing or expired. */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

/**
 * Calls the API. `options.body` is sent as JSON unless `options.raw` is set (then it is
 * sent as is); `options.headers` adds request headers (`If-Match`). Resolves to the parsed JSON answer (or null for an empty body).
 */
export async function api(path, options = {}) {
  const init = {
    method: options.method || "GET",
    credentials: "same-origin",
    // The server sends `Referrer-Policy: same-origin`; set it here too. Under
    // `no-referrer` the Fetch standard has browsers send `Origin: null` on a same-origin
    // POST or PUT, which the server refuses as cross-origin. `same-origin` keeps the real
    // Origin, and no referrer goes anywhere else because every request stays here.
    referrerPolicy: "same-origin",
    headers: { Accept: "application/json" },
  };
  if (options.raw !== undefined) {
    init.body = options.raw;
    init.headers["Content-Type"] = "application/octet-stream";
  } else if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    init.headers["Content-Type"] = "application/json";
  }
  if (options.headers) {
    Object.assign(init.headers, options.headers);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, "network", "cannot reach the PocketPilot server (is `pocketpilot serve` still running?)");
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = data && data.error ? data.error : {};
    const apiError = new ApiError(
      response.status,
      error.code || "http_" + response.status,
      error.message || `the server answered ${response.status} ${response.statusText}`,
    );
    // The whole answer, for errors that carry more than the message (409 `changed_since`
    // has the diff).
    apiError.body = data;
    if (response.status === 401) {
      unauthorizedHandler(apiError);
    }
    throw apiError;
  }
  return data;
}

/** `?a=b&…` for the given values (empty ones left out). */
export function query(values) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== "") {
      params.set(key, value);
    }
  }
  const text = params.toString();
  return text ? "?" + text : "";
}

/** Listeners that also get every event of the all-tasks stream (`/api/events`). */
const allEventsListeners = new Set();

/**
 * Calls `listener(stored)` for every event the shell's all-tasks stream delivers, and
 * `listener({ type: "resync" })` each time it (re)connects, so pages can share that
 * one connection instead of opening their own. Returns `unsubscribe()`.
 */
export function onAllEvents(listener) {
  allEventsListeners.add(listener);
  return () => allEventsListeners.delete(listener);
}

/**
 * Follows an SSE stream of stored events. `onEvent(stored)` is called once per event
 * sequence number, in order: a reconnect (automatic, with `Last-Event-ID`, or ours, with
 * `?after=` when the browser gave up) never delivers an event twice.
 * `onStatus("live" | "reconnecting")` reports the connection. Returns `close()`.
 */
export function followEvents(path, { after = null, onEvent, onStatus = () => {} }) {
  let lastSeq = after;
  let source = null;
  let closed = false;
  let retryTimer = null;
  let retryDelay = 1000;

  const handle = (message) => {
    let stored;
    try {
      stored = JSON.parse(message.data);
    } catch {
      return;
    }
    const seq = Number(stored.seq ?? message.lastEventId);
    if (lastSeq !== null && seq <= lastSeq) {
      return;
    }
    lastSeq = seq;
    onEvent(stored);
    if (path === "/api/events") {
      for (const listener of [...allEventsListeners]) {
        listener(stored);
      }
    }
  };

  const open = () => {
    if (closed) {
      return;
    }
    const separator = path.includes("?") ? "&" : "?";
    const url = lastSeq === null ? path : `${path}${separator}after=${lastSeq}`;
    source = new EventSource(url, { withCredentials: true });
    source.onopen = () => {
      retryDelay = 1000;
      onStatus("live");
      if (path === "/api/events") {
        for (const listener of [...allEventsListeners]) {
          listener({ type: "resync" });
        }
      }
    };
    source.onmessage = handle;
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, handle);
    }
    source.onerror = () => {
      if (closed) {
        return;
      }
      onStatus("reconnecting");
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status such as 401, or the server went away
        // for good): check the session and try again ourselves, resuming after the
        // last event we showed.
        source = null;
        retryTimer = setTimeout(async () => {
          try {
            await api("/api/workspaces");
          } catch (error) {
            if (error.status === 401) {
              return;
            }
          }
          open();
        }, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 15000);
      }
    };
  };

  open();
  return {
    close() {
      closed = true;
      clearTimeout(retryTimer);
      if (source) {
        source.close();
      }
    },
    lastSeq: () => lastSeq,
  };
}

/** Every event type the server sends (SSE `event:` names). */
export const EVENT_TYPES = [
  "task_started",
  "model_request",
  "context_trimmed",
  "assistant_message",
  "tool_call",
  "tool_result",
  "tool_error",
  "tool_denied",
  "approval_required",
  "approval_resolved",
  "approval_edit_rejected",
  "task_completed",
  "task_cancelled",
  "task_interrupted",
  "task_retried",
  "session_summarised",
  "task_failed",
];
