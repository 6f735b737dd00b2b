//! The team's memory and skills (`team_memory`, `team_skills`, `team_skill_files`,
//! `team_import`; see `migrations/sqlite/0016_team_knowledge.sql`). Every change is one
//! transaction whose `UPDATE`/`DELETE … WHERE version = ?` is the compare-and-swap: two
//! writers from one version cannot both win, whichever process they run in.

use pp_types::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore as Store;
use crate::error::Result;
use crate::types::{SkillFile, TeamImport, TeamMemory, TeamSkill};

fn skill_version(connection: &Connection, name: &str) -> Result<Option<(String, i64)>> {
    Ok(connection
        .prepare_cached("SELECT version, updated_at FROM team_skills WHERE name = ?1")?
        .query_row([name], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?)
}

impl Store {
    /// The team's memory, `None` when there is none.
    pub(crate) fn team_memory(&self) -> Result<Option<TeamMemory>> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT content, version, updated_at FROM team_memory WHERE id = 1",
                )?
                .query_row([], |row| {
                    Ok(TeamMemory {
                        content: row.get(0)?,
                        version: row.get(1)?,
                        updated_at: Timestamp::from_millis(row.get(2)?),
                    })
                })
                .optional()?)
        })
    }

    /// Makes `content` (of version `version`) the team's memory if its version is still
    /// `expected` (`None`: there is no memory yet); `false` when it is not.
    pub(crate) fn replace_team_memory(
        &self,
        expected: Option<&str>,
        content: &str,
        version: &str,
    ) -> Result<bool> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            let changed = match expected {
                None => transaction
                    .prepare_cached(
                        "INSERT INTO team_memory (id, content, version, updated_at) \
                         VALUES (1, ?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
                    )?
                    .execute(params![content, version, now])?,
                Some(expected) => transaction
                    .prepare_cached(
                        "UPDATE team_memory SET content = ?1, version = ?2, updated_at = ?3 \
                         WHERE id = 1 AND version = ?4",
                    )?
                    .execute(params![content, version, now, expected])?,
            };
            Ok(changed == 1)
        })
    }

    /// Removes the team's memory if its version is still `expected`; `false` when it is
    /// not (or there is none).
    pub(crate) fn remove_team_memory(&self, expected: &str) -> Result<bool> {
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached("DELETE FROM team_memory WHERE id = 1 AND version = ?1")?
                .execute([expected])?
                == 1)
        })
    }

    /// Every team skill's name and version, by name.
    pub(crate) fn team_skill_versions(&self) -> Result<Vec<(String, String)>> {
        self.read(|connection| {
            let mut statement =
                connection.prepare_cached("SELECT name, version FROM team_skills ORDER BY name")?;
            let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The team skill `name` with its files, `None` when there is none.
    pub(crate) fn team_skill(&self, name: &str) -> Result<Option<TeamSkill>> {
        self.read(|connection| {
            let Some((version, updated_at)) = skill_version(connection, name)? else {
                return Ok(None);
            };
            let mut statement = connection.prepare_cached(
                "SELECT path, content FROM team_skill_files WHERE skill = ?1 ORDER BY path",
            )?;
            let files = statement
                .query_map([name], |row| {
                    Ok(SkillFile {
                        path: row.get(0)?,
                        content: row.get(1)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(TeamSkill {
                name: name.to_owned(),
                version,
                files,
                updated_at: Timestamp::from_millis(updated_at),
            }))
        })
    }

    /// Makes `files` (of version `version`) the team skill `name` if its version is still
    /// `expected` (`None`: there is no such skill yet); `false` when it is not.
    pub(crate) fn put_team_skill(
        &self,
        name: &str,
        expected: Option<&str>,
        version: &str,
        files: &[SkillFile],
    ) -> Result<bool> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            let current = skill_version(transaction, name)?.map(|(version, _)| version);
            if current.as_deref() != expected {
                return Ok(false);
            }
            transaction
                .prepare_cached(
                    "INSERT INTO team_skills (name, version, updated_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (name) DO UPDATE SET version = ?2, updated_at = ?3",
                )?
                .execute(params![name, version, now])?;
            transaction
                .prepare_cached("DELETE FROM team_skill_files WHERE skill = ?1")?
                .execute([name])?;
            let mut insert = transaction.prepare_cached(
                "INSERT INTO team_skill_files (skill, path, content) VALUES (?1, ?2, ?3)",
            )?;
            for file in files {
                insert.execute(params![name, file.path, file.content])?;
            }
            Ok(true)
        })
    }

    /// Removes the team skill `name` and its files if its version is still `expected`;
    /// `false` when it is not (or there is no such skill).
    pub(crate) fn remove_team_skill(&self, name: &str, expected: &str) -> Result<bool> {
        self.write(|transaction| {
            let removed = transaction
                .prepare_cached("DELETE FROM team_skills WHERE name = ?1 AND version = ?2")?
                .execute([name, expected])?;
            if removed == 1 {
                transaction
                    .prepare_cached("DELETE FROM team_skill_files WHERE skill = ?1")?
                    .execute([name])?;
            }
            Ok(removed == 1)
        })
    }

    /// The record of the team's import from a folder, if it happened.
    pub(crate) fn team_import(&self) -> Result<Option<TeamImport>> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached("SELECT source, detail, imported_at FROM team_import WHERE id = 1")?
                .query_row([], |row| {
                    Ok(TeamImport {
                        source: row.get(0)?,
                        detail: row.get(1)?,
                        imported_at: Timestamp::from_millis(row.get(2)?),
                    })
                })
                .optional()?)
        })
    }

    /// Records the team's import from `source`; `false` when one is already recorded.
    pub(crate) fn record_team_import(&self, source: &str, detail: &str) -> Result<bool> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(
                    "INSERT INTO team_import (id, source, detail, imported_at) \
                     VALUES (1, ?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![source, detail, now])?
                == 1)
        })
    }
}
