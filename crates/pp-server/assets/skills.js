// @ts-check
// #/skills and #/skills/NAME: the operator's skills. The list shows every skill, valid or
// not (invalid ones with the reason: they are never offered to the model); a skill's
// page shows its files and its SKILL.md, which the operator may edit (validated by the
// server, audited as operator). Skills from read-only folders are shown, not editable.

import { api } from "./api.js";
import { h, notice, replace } from "./dom.js";
import { visibleCode } from "./visible.js";

/** A starting SKILL.md for a new skill called `name`. */
function template(name) {
  return `---\nname: ${name}\ndescription: What this skill is for, in one sentence.\n---\n\n# ${name}\n\nThe steps to follow.\n`;
}

/** @param {{valid: boolean}} skill */
function validity(skill) {
  return skill.valid
    ? h("span", { class: "badge state-completed", text: "valid" })
    : h("span", { class: "badge state-failed", text: "invalid" });
}

/** @param {{source: string, read_only: boolean}} skill */
function source(skill) {
  return skill.read_only ? skill.source + " (read-only)" : skill.source;
}

/** @param {HTMLElement} container */
export function renderSkills(container) {
  const body = h("tbody");
  const status = h("div", { class: "skills-status" }, h("p", { class: "muted", text: "Loading the skills…" }));
  const table = h(
    "table",
    { class: "table responsive skills" },
    h("thead", {}, h("tr", {}, ["Skill", "State", "Source", "Description or reason"].map((name) => h("th", { text: name })))),
    body,
  );

  const nameInput = h("input", {
    id: "new-skill-name",
    name: "name",
    type: "text",
    required: true,
    pattern: "[a-z0-9\\-]{1,64}",
    placeholder: "tidy-notes",
    spellcheck: "false",
    "aria-describedby": "new-skill-help",
  });
  const form = h(
    "form",
    { class: "panel new-skill", "aria-labelledby": "new-skill-title" },
    h("h2", { id: "new-skill-title", text: "New skill" }),
    h("div", { class: "field" }, h("label", { for: "new-skill-name", text: "Name" }), nameInput),
    h("p", { id: "new-skill-help", class: "muted small", text: "1 to 64 characters: a-z, 0-9 and -." }),
    h("button", { type: "submit", class: "button primary", text: "Write its SKILL.md" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = "#/skills/" + encodeURIComponent(nameInput.value.trim()) + "?new=1";
  });

  replace(
    container,
    h("h1", { text: "Skills" }),
    h("p", {
      class: "muted",
      text: "Procedures the model may read (expand_skill, read_skill_file). A skill is text, never a permission: nothing it says, not even an allowed-tools field, changes which calls need your approval.",
    }),
    h("section", { class: "panel table-wrap" }, table, status),
    form,
  );

  api("/api/skills")
    .then((data) => {
      for (const skill of data.skills) {
        body.append(
          h(
            "tr",
            { dataset: { skill: skill.name, valid: String(skill.valid) } },
            h("td", { "data-label": "Skill" }, h("a", { href: "#/skills/" + encodeURIComponent(skill.name) }, visibleCode(skill.name))),
            h("td", { "data-label": "State" }, validity(skill)),
            h("td", { "data-label": "Source", class: "source", text: source(skill) }),
            h("td", { "data-label": "Description or reason", class: "detail", text: skill.valid ? skill.description : skill.reason }),
          ),
        );
      }
      replace(status, data.skills.length ? null : h("p", { class: "empty", text: "No skills yet." }));
    })
    .catch((error) => replace(status, notice("error", "Cannot list the skills: " + error.message)));
  return {};
}

/**
 * @param {HTMLElement} container
 * @param {string} name
 */
export function renderSkill(container, name) {
  const creating = (location.hash.split("?")[1] || "").includes("new=1");
  replace(container, h("p", { class: "muted", text: "Loading the skill…" }));
  api("/api/skills/" + encodeURIComponent(name))
    .then((skill) => show(container, skill))
    .catch((error) => {
      if (error.status === 404 && creating) {
        show(container, null, name);
      } else {
        replace(
          container,
          h("h1", {}, "Skill ", visibleCode(name)),
          notice("error", "Cannot load the skill: " + error.message),
          h("p", {}, h("a", { href: "#/skills", text: "Back to the skills" })),
        );
      }
    });
  return {};
}

/**
 * @param {HTMLElement} container
 * @param {any} skill the skill, or null for a new one
 * @param {string} [newName]
 */
function show(container, skill, newName) {
  const name = skill ? skill.name : newName || "";
  const readOnly = skill ? skill.read_only : false;
  const editor = h("textarea", {
    id: "skill-md",
    name: "skill_md",
    class: "json-editor skill-editor",
    rows: 18,
    spellcheck: "false",
    readonly: readOnly,
  });
  /** @type {HTMLTextAreaElement} */ (editor).value = skill ? skill.skill_md || "" : template(name);
  const status = h("div", { class: "form-status", "aria-live": "polite" });
  const save = h("button", { type: "submit", class: "button primary", text: skill ? "Save SKILL.md" : "Create skill" });
  const form = h(
    "form",
    { class: "panel skill-form", "aria-labelledby": "skill-md-label" },
    h("label", { id: "skill-md-label", for: "skill-md", text: "SKILL.md" }),
    editor,
    readOnly ? h("p", { class: "muted small", text: "This skill comes from a read-only folder ([skills] dirs); change it there." }) : h("div", { class: "button-row" }, save),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (readOnly) {
      return;
    }
    save.setAttribute("disabled", "");
    try {
      const saved = await api("/api/skills/" + encodeURIComponent(name), {
        method: "PUT",
        body: { skill_md: /** @type {HTMLTextAreaElement} */ (editor).value },
      });
      if (!skill) {
        location.hash = "#/skills/" + encodeURIComponent(name);
        return;
      }
      show(container, saved);
      const fresh = container.querySelector(".form-status");
      if (fresh) {
        replace(fresh, notice("ok", "Saved."));
      }
    } catch (error) {
      replace(status, notice("error", error.code === "invalid_skill" ? "Not saved: " + error.message : "Cannot save: " + error.message));
      save.removeAttribute("disabled");
    }
  });

  const remove = h("button", { type: "button", class: "button danger", text: "Remove skill" });
  remove.addEventListener("click", async () => {
    if (!window.confirm(`Remove the skill ${name} and all its files?`)) {
      return;
    }
    try {
      await api("/api/skills/" + encodeURIComponent(name), { method: "DELETE" });
      location.hash = "#/skills";
    } catch (error) {
      replace(status, notice("error", "Cannot remove: " + error.message));
    }
  });

  const facts = skill
    ? h(
        "div",
        { class: "task-facts" },
        validity(skill),
        h("span", { class: "badge", text: source(skill) }),
      )
    : h("p", { class: "muted", text: "A new skill in the data directory. It is offered to the model once it is valid." });
  replace(
    container,
    h("p", {}, h("a", { href: "#/skills", text: "← Skills" })),
    h("h1", {}, "Skill ", visibleCode(name)),
    facts,
    skill && !skill.valid ? notice("warn", "Invalid, never offered to the model: " + skill.reason) : null,
    skill && skill.valid ? h("p", { class: "skill-description", text: skill.description }) : null,
    skill && skill.other_fields.length
      ? h("p", { class: "muted small", text: "Ignored front matter fields (they never change what needs approval): " + skill.other_fields.join(", ") })
      : null,
    skill
      ? h(
          "section",
          { class: "panel", "aria-labelledby": "skill-files-title" },
          h("h2", { id: "skill-files-title", text: "Files" }),
          skill.files.length
            ? h("ul", { class: "skill-files" }, skill.files.map((/** @type {string} */ file) => h("li", {}, visibleCode(file))))
            : h("p", { class: "muted", text: "Only SKILL.md." }),
        )
      : null,
    form,
    skill && !readOnly ? h("div", { class: "button-row" }, remove) : null,
  );
}
