//! The team's memory and skills, as the SQLite backend's: every change one transaction
//! whose `INSERT … ON CONFLICT DO NOTHING` or `UPDATE`/`DELETE … WHERE version = $n` is
//! the compare-and-swap (the row lock the `UPDATE` takes makes a second writer from the
//! same version see the new one and change nothing).

use pp_types::Timestamp;

use super::{PgStore, execute, query, query_opt};
use crate::error::Result;
use crate::types::{SkillFile, TeamImport, TeamMemory, TeamSkill};

impl PgStore {
    /// The team's memory, `None` when there is none.
    pub(crate) async fn team_memory(&self) -> Result<Option<TeamMemory>> {
        let client = self.client().await?;
        query_opt(
            &client,
            "SELECT content, version, updated_at FROM team_memory WHERE id = 1",
            &[],
        )
        .await?
        .map(|row| {
            Ok(TeamMemory {
                content: row.try_get(0)?,
                version: row.try_get(1)?,
                updated_at: Timestamp::from_millis(row.try_get(2)?),
            })
        })
        .transpose()
    }

    /// Makes `content` (of version `version`) the team's memory if its version is still
    /// `expected` (`None`: there is no memory yet); `false` when it is not.
    pub(crate) async fn replace_team_memory(
        &self,
        expected: Option<&str>,
        content: &str,
        version: &str,
    ) -> Result<bool> {
        let now = self.now().as_millis();
        let client = self.client().await?;
        let changed = match expected {
            None => {
                execute(
                    &client,
                    "INSERT INTO team_memory (id, content, version, updated_at) \
                     VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
                    &[&content, &version, &now],
                )
                .await?
            }
            Some(expected) => {
                execute(
                    &client,
                    "UPDATE team_memory SET content = $1, version = $2, updated_at = $3 \
                     WHERE id = 1 AND version = $4",
                    &[&content, &version, &now, &expected],
                )
                .await?
            }
        };
        Ok(changed == 1)
    }

    /// Removes the team's memory if its version is still `expected`; `false` when it is
    /// not (or there is none).
    pub(crate) async fn remove_team_memory(&self, expected: &str) -> Result<bool> {
        let client = self.client().await?;
        Ok(execute(
            &client,
            "DELETE FROM team_memory WHERE id = 1 AND version = $1",
            &[&expected],
        )
        .await?
            == 1)
    }

    /// Every team skill's name and version, by name.
    pub(crate) async fn team_skill_versions(&self) -> Result<Vec<(String, String)>> {
        let client = self.client().await?;
        query(
            &client,
            "SELECT name, version FROM team_skills ORDER BY name",
            &[],
        )
        .await?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect()
    }

    /// The team skill `name` with its files, `None` when there is none.
    pub(crate) async fn team_skill(&self, name: &str) -> Result<Option<TeamSkill>> {
        let mut client = self.client().await?;
        // One snapshot for the row and its files.
        let transaction = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let Some(row) = query_opt(
            &transaction,
            "SELECT version, updated_at FROM team_skills WHERE name = $1",
            &[&name],
        )
        .await?
        else {
            return Ok(None);
        };
        let files = query(
            &transaction,
            "SELECT path, content FROM team_skill_files WHERE skill = $1 ORDER BY path",
            &[&name],
        )
        .await?
        .iter()
        .map(|row| {
            Ok(SkillFile {
                path: row.try_get(0)?,
                content: row.try_get(1)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        transaction.commit().await?;
        Ok(Some(TeamSkill {
            name: name.to_owned(),
            version: row.try_get(0)?,
            files,
            updated_at: Timestamp::from_millis(row.try_get(1)?),
        }))
    }

    /// Makes `files` (of version `version`) the team skill `name` if its version is still
    /// `expected` (`None`: there is no such skill yet); `false` when it is not.
    pub(crate) async fn put_team_skill(
        &self,
        name: &str,
        expected: Option<&str>,
        version: &str,
        files: &[SkillFile],
    ) -> Result<bool> {
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let swapped = match expected {
            None => {
                execute(
                    &transaction,
                    "INSERT INTO team_skills (name, version, updated_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (name) DO NOTHING",
                    &[&name, &version, &now],
                )
                .await?
            }
            Some(expected) => {
                execute(
                    &transaction,
                    "UPDATE team_skills SET version = $2, updated_at = $3 \
                     WHERE name = $1 AND version = $4",
                    &[&name, &version, &now, &expected],
                )
                .await?
            }
        };
        if swapped != 1 {
            return Ok(false);
        }
        execute(
            &transaction,
            "DELETE FROM team_skill_files WHERE skill = $1",
            &[&name],
        )
        .await?;
        for file in files {
            execute(
                &transaction,
                "INSERT INTO team_skill_files (skill, path, content) VALUES ($1, $2, $3)",
                &[&name, &file.path, &file.content],
            )
            .await?;
        }
        transaction.commit().await?;
        Ok(true)
    }

    /// Removes the team skill `name` and its files if its version is still `expected`;
    /// `false` when it is not (or there is no such skill).
    pub(crate) async fn remove_team_skill(&self, name: &str, expected: &str) -> Result<bool> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let removed = execute(
            &transaction,
            "DELETE FROM team_skills WHERE name = $1 AND version = $2",
            &[&name, &expected],
        )
        .await?;
        if removed != 1 {
            return Ok(false);
        }
        execute(
            &transaction,
            "DELETE FROM team_skill_files WHERE skill = $1",
            &[&name],
        )
        .await?;
        transaction.commit().await?;
        Ok(true)
    }

    /// The record of the team's import from a folder, if it happened.
    pub(crate) async fn team_import(&self) -> Result<Option<TeamImport>> {
        let client = self.client().await?;
        query_opt(
            &client,
            "SELECT source, detail, imported_at FROM team_import WHERE id = 1",
            &[],
        )
        .await?
        .map(|row| {
            Ok(TeamImport {
                source: row.try_get(0)?,
                detail: row.try_get(1)?,
                imported_at: Timestamp::from_millis(row.try_get(2)?),
            })
        })
        .transpose()
    }

    /// Records the team's import from `source`; `false` when one is already recorded.
    pub(crate) async fn record_team_import(&self, source: &str, detail: &str) -> Result<bool> {
        let now = self.now().as_millis();
        let client = self.client().await?;
        Ok(execute(
            &client,
            "INSERT INTO team_import (id, source, detail, imported_at) \
             VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
            &[&source, &detail, &now],
        )
        .await?
            == 1)
    }
}
