//! Skill folders for tests: the three foreign layouts PocketPilot must load unchanged
//! (written for these tests, in the style of each project), and a helper to write any
//! skill folder.

use std::path::{Path, PathBuf};

/// A skill in the style of Anthropic's public skills repository: `name`, `description`,
/// `license`, a `scripts/` folder and reference Markdown files beside `SKILL.md`.
pub const ANTHROPIC_STYLE: (&str, &[(&str, &str)]) = (
    "pdf-forms",
    &[
        (
            "SKILL.md",
            "---\nname: pdf-forms\ndescription: Fill in PDF forms and extract their fields. Use \
             when the user asks to complete or inspect a PDF form.\nlicense: Complete terms in \
             LICENSE.txt\n---\n\n# PDF forms\n\n## Overview\nRead `reference.md` for the field \
             types, then run `scripts/list_fields.py`.\n",
        ),
        ("LICENSE.txt", "Example licence text for a test fixture.\n"),
        ("reference.md", "# Field types\n- text\n- checkbox\n"),
        (
            "scripts/list_fields.py",
            "import sys\nprint('fields of', sys.argv[1])\n",
        ),
    ],
);

/// A skill in nanobot's style: a quoted description and a nested `metadata.nanobot`
/// mapping (emoji, required binaries, `always`).
pub const NANOBOT_STYLE: (&str, &[(&str, &str)]) = (
    "weather",
    &[(
        "SKILL.md",
        "---\nname: weather\ndescription: \"Get the current weather and forecasts (no API key \
         required).\"\nmetadata:\n  nanobot:\n    emoji: \"\u{1f324}\"\n    requires:\n      bins: \
         [\"curl\"]\n    always: false\n---\n\n# Weather\n\nAsk the weather service with curl.\n",
    )],
);

/// A skill in OpenClaw's style: `homepage` and a `metadata` map written as one flow
/// (JSON-like) mapping across several lines, with install hints.
pub const OPENCLAW_STYLE: (&str, &[(&str, &str)]) = (
    "notes-sync",
    &[
        (
            "SKILL.md",
            "---\nname: notes-sync\ndescription: Sync a folder of Markdown notes with a remote \
             store.\nhomepage: https://example.invalid/notes-sync\nmetadata:\n  {\n    \
             \"openclaw\":\n      {\n        \"emoji\": \"\u{1f4dd}\",\n        \"requires\": { \
             \"bins\": [\"rsync\"], \"env\": [\"NOTES_REMOTE\"] },\n        \"install\":\n          \
             [{ \"id\": \"apt\", \"kind\": \"apt\", \"package\": \"rsync\" }],\n      },\n  \
             }\nuser-invocable: true\nallowed-tools: [\"Bash(rsync:*)\", \"Write\"]\n---\n\n# \
             Notes sync\n\nRun rsync with the options in `references/options.md`.\n",
        ),
        ("references/options.md", "-a --delete\n"),
    ],
);

/// The three foreign layouts.
pub const FOREIGN_LAYOUTS: [(&str, &[(&str, &str)]); 3] =
    [ANTHROPIC_STYLE, NANOBOT_STYLE, OPENCLAW_STYLE];

/// Writes the skill folder `dir/name` with `files` (relative path → content); returns the
/// folder.
pub fn write_skill(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let folder = dir.join(name);
    for (relative, content) in files {
        let path = folder.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the skill's folders");
        }
        std::fs::write(&path, content).expect("write a skill file");
    }
    folder
}

/// A minimal valid `SKILL.md` for `name` with `body`.
pub fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}")
}
