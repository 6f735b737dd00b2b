-- The team's memory and skills, as SQLite's 0016: one memory row at most, one row per
-- skill with its files beside it, every change a compare-and-swap on `version`, and the
-- record of the one import from `[team] shared_dir`.
CREATE TABLE team_memory (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    content    TEXT NOT NULL,
    version    TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE team_skills (
    name       TEXT COLLATE "C" PRIMARY KEY,
    version    TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE team_skill_files (
    skill   TEXT COLLATE "C" NOT NULL,
    path    TEXT COLLATE "C" NOT NULL,
    content BYTEA NOT NULL,
    PRIMARY KEY (skill, path)
);
CREATE TABLE team_import (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    source      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    imported_at BIGINT NOT NULL
);
