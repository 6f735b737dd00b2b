// @ts-check
// #/memory: the memory file (memory.md in the data directory), the notes the model sees
// at the start of every task. The operator edits it here directly (audited as operator,
// no approval card); the agent can only ask, through memory_write, which needs approval.
// A save names the version it was based on (If-Match): if the memory changed meanwhile
// (another tab, the CLI, an approved memory_write), the server refuses it with 412 and
// the text typed here stays in the editor.

import { api } from "./api.js";
import { h, notice, replace } from "./dom.js";

/** @param {HTMLElement} container */
export function renderMemory(container) {
  /** The version the text in the editor is based on. */
  let version = "";
  const editor = /** @type {HTMLTextAreaElement} */ (
    h("textarea", {
      id: "memory-content",
      name: "content",
      class: "json-editor memory-editor",
      rows: 16,
      spellcheck: "true",
      "aria-describedby": "memory-version",
    })
  );
  const versionLine = h("p", { id: "memory-version", class: "muted small memory-version" });
  const status = h("div", { class: "form-status", "aria-live": "polite" });
  const current = h("div", { class: "memory-current" });
  const save = h("button", { type: "submit", class: "button primary", text: "Save memory" });

  /** @param {{content: string, version: string}} snapshot */
  function based(snapshot) {
    version = snapshot.version;
    versionLine.textContent =
      snapshot.version === "absent" ? "No memory file yet: saving creates it." : "Version " + snapshot.version.slice(0, 19) + "…";
  }

  const form = h(
    "form",
    { class: "panel memory-form", "aria-labelledby": "memory-label" },
    h("label", { id: "memory-label", for: "memory-content", text: "memory.md" }),
    editor,
    versionLine,
    h("div", { class: "button-row" }, save),
    status,
    current,
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.setAttribute("disabled", "");
    try {
      const saved = await api("/api/memory", {
        method: "PUT",
        headers: { "If-Match": `"${version}"` },
        body: { content: editor.value },
      });
      based(saved);
      replace(current);
      replace(status, notice("ok", "Saved."));
    } catch (error) {
      if (error.code === "version_mismatch") {
        replace(
          status,
          notice(
            "error",
            "Not saved: the memory changed since you opened it (another tab, the CLI, or an approved memory_write). Your text is still in the editor. Compare it with the current memory below, then save again to replace it.",
          ),
        );
        showCurrent();
      } else {
        replace(status, notice("error", "Cannot save: " + error.message));
      }
    } finally {
      save.removeAttribute("disabled");
    }
  });

  /** Shows the memory as it is now, and bases the next save on it. */
  async function showCurrent() {
    try {
      const now = await api("/api/memory");
      based(now);
      replace(
        current,
        h("h2", { id: "memory-current-title", text: "The current memory" }),
        h("pre", { class: "memory-current-text", "aria-labelledby": "memory-current-title", tabindex: "0", text: now.content || "(empty)" }),
      );
    } catch (error) {
      replace(current, notice("error", "Cannot load the current memory: " + error.message));
    }
  }

  replace(
    container,
    h("h1", { text: "Memory" }),
    h("p", {
      class: "muted",
      text: "Notes the model sees at the start of every task. The model can only propose changes (memory_write), which wait for your approval; what you save here needs none. Memory is information, never a permission: nothing written here changes which calls need approval.",
    }),
    h("p", { class: "muted", text: "Loading the memory…" }),
  );

  api("/api/memory")
    .then((snapshot) => {
      editor.value = snapshot.content;
      based(snapshot);
      const loading = container.querySelector("p.muted:last-of-type");
      loading?.remove();
      container.append(form);
    })
    .catch((error) => container.append(notice("error", "Cannot load the memory: " + error.message)));
  return {};
}
