-- The team's memory and skills (issue 29): in team mode they live here, not in a shared
-- folder, so every process of a team sees one version and every change is a
-- compare-and-swap the database enforces (`UPDATE … WHERE version = ?`).
--
-- `team_memory`: at most one row (the memory file's text); no row: no memory. `version`
-- is `sha256:<hex>` of the content, the same as a memory file's.
CREATE TABLE team_memory (
    id         INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    content    TEXT NOT NULL,
    version    TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- One row per installed skill; `version` is `sha256:<hex>` over its files (paths and
-- bytes, in path order), computed by pp-tools. Its files are in `team_skill_files`.
CREATE TABLE team_skills (
    name       TEXT PRIMARY KEY NOT NULL,
    version    TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE team_skill_files (
    skill   TEXT NOT NULL,
    path    TEXT NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (skill, path)
) STRICT;

-- When the memory and skills of `[team] shared_dir` (or of the first data directory)
-- were imported: once per team; later a configured `shared_dir` is refused.
CREATE TABLE team_import (
    id          INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    source      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    imported_at INTEGER NOT NULL
) STRICT;
