// #/chat: the chat sessions and a "new chat" form. #/chat/ID: one conversation.
//
// Each turn is a task: the person's message, the turn's tool calls folded under it (the
// task timeline's rows in a <details>), its approval cards inline (card.js, the one card
// component), and the answer. The send box is disabled while the last turn is queued,
// running or waiting for approval; a 409 `session_busy` (another tab or the CLI sent
// first) says the same. Live updates come from the all-tasks event stream (app.js).

import { api } from "./api.js";
import { approvalCard } from "./card.js";
import { debounce, h, notice, replace, stateBadge, timeElement } from "./dom.js";
import { fillWorkspaces } from "./tasks.js";
import { eventRow } from "./timeline.js";

const ACTIVE = new Set(["queued", "running", "waiting_approval"]);

/** Events folded under a turn: what the agent did on the way to its answer. */
const FOLDED = new Set([
  "context_trimmed",
  "session_summarised",
  "tool_call",
  "tool_result",
  "tool_error",
  "tool_denied",
  "approval_required",
  "approval_resolved",
  "approval_edit_rejected",
]);

/** The most events one turn's JSON page may hold (the API's maximum). */
const EVENT_PAGE = 5000;

function sessionTitle(session) {
  return session.title || "Untitled chat";
}

function newChatForm() {
  const title = h("input", { id: "chat-title", name: "title", type: "text", maxlength: 200, placeholder: "Optional" });
  const workspace = h("select", { id: "chat-workspace", name: "workspace" });
  const status = h("div", { class: "form-status" });
  const submit = h("button", { type: "submit", class: "button primary", text: "Start chat" });
  fillWorkspaces(workspace).catch((error) => {
    replace(status, notice("error", "Cannot list workspaces: " + error.message));
  });
  const form = h(
    "form",
    { class: "panel new-chat", "aria-labelledby": "new-chat-title" },
    h("h2", { id: "new-chat-title", text: "New chat" }),
    h(
      "div",
      { class: "form-row" },
      h("div", { class: "field" }, h("label", { for: "chat-title", text: "Title" }), title),
      h("div", { class: "field" }, h("label", { for: "chat-workspace", text: "Workspace" }), workspace),
      submit,
    ),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    replace(status, notice("info", "Starting the chat…"));
    try {
      const session = await api("/api/sessions", {
        method: "POST",
        body: { title: title.value.trim() || undefined, workspace: workspace.value || undefined },
      });
      location.hash = "#/chat/" + encodeURIComponent(session.id);
    } catch (error) {
      replace(status, notice("error", "The chat was not started: " + error.message));
      submit.disabled = false;
    }
  });
  return form;
}

/** #/chat: the sessions, most recently active first, and the "new chat" form. */
export function renderChatList(container) {
  const list = h("div", { class: "chat-list", "aria-live": "polite" }, h("p", { class: "muted", text: "Loading chats…" }));
  const load = async () => {
    try {
      const data = await api("/api/sessions");
      if (data.sessions.length === 0) {
        replace(list, h("p", { class: "empty", text: "No chats yet. Start one above." }));
        return;
      }
      replace(
        list,
        h(
          "ul",
          { class: "session-list" },
          data.sessions.map((session) =>
            h(
              "li",
              { dataset: { sessionId: session.id } },
              h("a", { href: "#/chat/" + encodeURIComponent(session.id), text: sessionTitle(session) }),
              h(
                "span",
                { class: "muted small" },
                " in ",
                h("code", { text: session.workspace }),
                " · last active ",
                timeElement(session.updated_at),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      replace(list, notice("error", "Cannot load the chats: " + error.message));
    }
  };
  const reload = debounce(load, 300);
  replace(
    container,
    h("h1", { text: "Chat" }),
    h("p", {
      class: "muted",
      text: "A chat is a conversation: every message is a task with the earlier messages as its context, and every write still waits for your approval.",
    }),
    newChatForm(),
    h("section", { class: "panel", "aria-labelledby": "chat-list-title" }, h("h2", { id: "chat-list-title", text: "Chats" }), list),
  );
  load();
  return {
    onEvent(stored) {
      if (stored.type === "task_started" || stored.type === "task_completed") {
        reload();
      }
    },
    resync: reload,
    cleanup: () => reload.cancel(),
  };
}

/** What the answer area says for a turn without an answer. */
function waitingText(turn) {
  switch (turn.state) {
    case "queued":
      return "Queued: the agent starts on it as soon as a worker is free.";
    case "running":
      return "Working on it…";
    case "waiting_approval":
      return "Waiting for your approval above.";
    case "cancelled":
      return "This turn was cancelled; the conversation goes on.";
    case "interrupted":
      return "This turn was interrupted (PocketPilot stopped). Retry it from its task page, or send a new message.";
    default:
      return `This turn ended ${turn.state.replace(/_/g, " ")} without an answer.`;
  }
}

/** One turn on screen: built once, updated as its task moves on. */
class TurnView {
  constructor(turn, onResolved) {
    this.turn = turn;
    this.onResolved = onResolved;
    this.lastSeq = 0;
    this.calls = 0;
    this.cards = new Map();
    this.loading = null;
    this.loadedTerminal = false;
    this.count = h("span", { class: "turn-count", text: "Tool calls" });
    this.events = h("ol", { class: "timeline", "aria-label": `Tool calls of message ${turn.index}` });
    this.details = h("details", { class: "turn-tools", hidden: true }, h("summary", {}, this.count), this.events);
    this.cardsBox = h("div", { class: "cards turn-cards" });
    this.answer = h("div", { class: "bubble bubble-model", "aria-live": "polite" });
    this.state = h("span", { class: "turn-state" });
    this.element = h(
      "article",
      { class: "turn", "aria-label": `Message ${turn.index}`, dataset: { taskId: turn.task_id, state: turn.state } },
      h(
        "div",
        { class: "bubble bubble-you" },
        h("p", { class: "turn-meta muted small" }, "You · ", this.state, " · ", h("a", { href: "#/tasks/" + encodeURIComponent(turn.task_id), text: "task" })),
        h("p", { class: "message-text", text: turn.prompt }),
      ),
      this.details,
      this.cardsBox,
      this.answer,
    );
    this.update(turn);
  }

  update(turn) {
    this.turn = turn;
    this.element.dataset.state = turn.state;
    replace(this.state, stateBadge(turn.state));
    if (typeof turn.final_text === "string") {
      replace(this.answer, h("p", { class: "turn-meta muted small", text: "PocketPilot" }), h("div", { class: "final-text", text: turn.final_text }));
      this.answer.classList.remove("bubble-waiting");
    } else {
      replace(this.answer, h("p", { class: "muted", text: waitingText(turn) }));
      this.answer.classList.add("bubble-waiting");
    }
  }

  /** Loads the events stored since the last load (at most one load at a time). */
  async load() {
    if (this.loadedTerminal) {
      return;
    }
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    const terminal = !ACTIVE.has(this.turn.state);
    this.loading = (async () => {
      try {
        const data = await api(`/api/tasks/${encodeURIComponent(this.turn.task_id)}/events?after=${this.lastSeq}&limit=${EVENT_PAGE}`);
        for (const stored of data.events) {
          this.add(stored);
        }
        if (terminal && data.next_after === null) {
          this.loadedTerminal = true;
        }
      } catch {
        // The next event or resync loads again.
      }
    })();
    await this.loading;
    this.loading = null;
    if (this.again) {
      this.again = false;
      await this.load();
    }
  }

  add(stored) {
    if (stored.seq <= this.lastSeq) {
      return;
    }
    this.lastSeq = stored.seq;
    if (!FOLDED.has(stored.type)) {
      return;
    }
    if (stored.type === "tool_call") {
      this.calls += 1;
    }
    this.count.textContent = this.calls === 1 ? "1 tool call" : `${this.calls} tool calls`;
    this.details.hidden = false;
    this.events.append(eventRow(stored));
    if (stored.type === "approval_required" && stored.approval_id) {
      this.showCard(stored.approval_id);
    }
  }

  /** The approval card, inline under the message, while the approval is pending. */
  async showCard(id) {
    if (this.cards.has(id)) {
      return;
    }
    this.cards.set(id, null);
    try {
      const view = await api("/api/approvals/" + encodeURIComponent(id));
      if (view.state !== "pending") {
        return;
      }
      const card = approvalCard(view, { linkToTask: false, onResolved: this.onResolved });
      this.cards.set(id, card);
      this.cardsBox.append(card.element);
    } catch {
      this.cards.delete(id);
    }
  }

  /** Tells the cards of an ended turn (resolved elsewhere, or cancelled). */
  async refreshCards() {
    for (const [id, card] of this.cards) {
      if (card && card.isPending()) {
        try {
          card.update(await api("/api/approvals/" + encodeURIComponent(id)));
        } catch {
          // Left as it is; the next event tries again.
        }
      }
    }
  }
}

/** #/chat/ID: the conversation and the send box. */
export function renderChat(container, id) {
  const header = h("div", { class: "chat-head" }, h("p", { class: "muted", text: "Loading the chat…" }));
  const turnsBox = h("div", { class: "turns" });
  const views = new Map();
  const message = h("textarea", { id: "chat-message", name: "content", rows: 3, placeholder: "Write a message…" });
  const send = h("button", { type: "submit", class: "button primary", text: "Send" });
  const busyNote = h("p", { id: "chat-busy", class: "chat-busy", role: "status" });
  const status = h("div", { class: "form-status" });
  let busy = false;
  let gone = false;

  const setBusy = (turn) => {
    busy = Boolean(turn && ACTIVE.has(turn.state));
    message.disabled = busy;
    send.disabled = busy;
    if (!busy) {
      busyNote.textContent = "";
      message.removeAttribute("aria-describedby");
    } else {
      busyNote.textContent =
        turn.state === "waiting_approval"
          ? "PocketPilot waits for your approval above: approve or reject it, then send your next message."
          : "PocketPilot is still answering your last message; you can send the next one when it is done.";
      message.setAttribute("aria-describedby", "chat-busy");
    }
  };

  // Delete: two steps, outside the header (which each load redraws).
  const deleteStatus = h("div", { class: "form-status" });
  const deleteButton = h("button", { type: "button", class: "button small ghost delete-chat", text: "Delete chat…" });
  const confirmButton = h("button", { type: "button", class: "button small danger confirm-delete", text: "Delete this chat" });
  const keepButton = h("button", { type: "button", class: "button small ghost", text: "Keep it" });
  const confirmRow = h(
    "div",
    { class: "button-row", hidden: true },
    h("span", { class: "muted small", text: "The messages’ tasks, approvals and audit entries stay." }),
    confirmButton,
    keepButton,
  );
  deleteButton.addEventListener("click", () => {
    replace(deleteStatus);
    deleteButton.hidden = true;
    confirmRow.hidden = false;
    confirmButton.focus();
  });
  keepButton.addEventListener("click", () => {
    replace(deleteStatus);
    confirmRow.hidden = true;
    deleteButton.hidden = false;
    deleteButton.focus();
  });
  confirmButton.addEventListener("click", async () => {
    confirmButton.disabled = true;
    try {
      await api("/api/sessions/" + encodeURIComponent(id), { method: "DELETE" });
      location.hash = "#/chat";
    } catch (error) {
      confirmButton.disabled = false;
      replace(
        deleteStatus,
        error.status === 409 && error.code === "session_busy"
          ? notice("warn", "Not deleted: the last message is still being answered or waits for your approval. Reject or cancel it first.")
          : notice("error", "The chat was not deleted: " + error.message),
      );
    }
  });
  const deleteBox = h("div", { class: "chat-actions" }, deleteButton, confirmRow, deleteStatus);

  const load = async () => {
    let session;
    try {
      session = await api("/api/sessions/" + encodeURIComponent(id));
    } catch (error) {
      if (error.status === 404) {
        gone = true;
        deleteBox.hidden = true;
      }
      replace(
        header,
        h("p", { class: "crumbs" }, h("a", { href: "#/chat", text: "← Chats" })),
        notice("error", error.status === 404 ? `There is no chat ${id}.` : "Cannot load the chat: " + error.message),
      );
      return;
    }
    replace(
      header,
      h("p", { class: "crumbs" }, h("a", { href: "#/chat", text: "← Chats" })),
      h("h1", { class: "chat-title", text: sessionTitle(session) }),
      h(
        "p",
        { class: "muted small" },
        "Workspace ",
        h("code", { text: session.workspace }),
        ` · ${session.turns.length} message${session.turns.length === 1 ? "" : "s"} · `,
        h("span", { text: session.id }),
      ),
      session.summary
        ? h("details", { class: "chat-summary" }, h("summary", { text: "Summary of the earlier messages (what the model sees instead of them)" }), h("p", { class: "message-text", text: session.summary }))
        : null,
    );
    if (session.turns.length === 0) {
      replace(turnsBox, h("p", { class: "empty", text: "No messages yet: write the first one below." }));
    } else if (views.size === 0) {
      turnsBox.replaceChildren();
    }
    for (const turn of session.turns) {
      let view = views.get(turn.task_id);
      if (!view) {
        view = new TurnView(turn, () => reload());
        views.set(turn.task_id, view);
        turnsBox.append(view.element);
      } else {
        const was = view.turn.state;
        view.update(turn);
        if (ACTIVE.has(was) && !ACTIVE.has(turn.state)) {
          view.refreshCards();
        }
      }
      view.load();
    }
    setBusy(session.turns[session.turns.length - 1]);
  };
  const reload = debounce(load, 150);

  const form = h(
    "form",
    { class: "panel chat-send", "aria-label": "Send a message" },
    h("label", { for: "chat-message" }, "Message ", h("span", { class: "muted small", text: "(Ctrl+Enter sends)" })),
    message,
    busyNote,
    h("div", { class: "button-row" }, send),
    status,
  );
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = message.value.trim();
    if (busy || gone) {
      return;
    }
    if (!content) {
      replace(status, notice("error", "Write a message first."));
      message.focus();
      return;
    }
    send.disabled = true;
    replace(status);
    try {
      await api(`/api/sessions/${encodeURIComponent(id)}/messages`, { method: "POST", body: { content } });
      message.value = "";
    } catch (error) {
      if (error.status === 409 && error.code === "session_busy") {
        replace(status, notice("warn", "Not sent: the previous message is still being answered or waits for an approval (perhaps from another tab or the command line). Your text is kept; send it once that turn is done."));
      } else {
        replace(status, notice("error", "The message was not sent: " + error.message));
      }
    }
    send.disabled = busy;
    await load();
    if (!busy) {
      message.focus();
    }
  });

  replace(container, header, deleteBox, h("section", { class: "conversation", "aria-label": "Conversation" }, turnsBox), form);
  load();
  return {
    onEvent(stored) {
      if (stored.type === "model_request") {
        return;
      }
      const view = views.get(stored.task_id);
      if (view) {
        view.load();
        if (stored.type.startsWith("task_") || stored.type.startsWith("approval_")) {
          reload();
        }
      } else if (stored.type === "task_started") {
        // Perhaps a new turn of this chat, sent from another tab or the command line.
        reload();
      }
    },
    resync() {
      for (const view of views.values()) {
        view.load();
      }
      reload();
    },
    cleanup: () => reload.cancel(),
  };
}
