//! [`ChannelsService`]: create, list, edit, rotate and remove channels, read their
//! delivery logs, and verify a delivery and create its task through the task service.

use std::sync::{Arc, Mutex};

use pp_store::{Channel, ChannelChange, DeliveryRecord, DeliveryStatus, NewChannel, Store};
use pp_tasks::{CreateTask, TaskService};
use pp_types::{Actor, AuditAction, NewAudit, Timestamp};
use ring::hmac;
use serde_json::Value;

use crate::book::ChannelBook;
use crate::delivery::{Delivery, DeliveryOutcome, Refusal};
use crate::error::{ChannelsError, Result};
use crate::key::ChannelKey;
use crate::limiter::{Limiter, lock};
use crate::prompt::{check_template, render_prompt};
use crate::settings::ChannelSettings;
use crate::signature::{hex, unhex};
use crate::views::{ChannelView, CreateChannel, EditChannel, WithSecret, valid_name};

/// Webhook channels over a task service and the channels of its store. Cheap to clone.
#[derive(Clone)]
pub struct ChannelsService {
    tasks: TaskService,
    pub(crate) book: ChannelBook,
    pub(crate) inner: Arc<Inner>,
    /// The team user the changes made through this handle are audited as (`None`: the
    /// operator, single-machine mode).
    user: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) key: ChannelKey,
    settings: ChannelSettings,
    /// Accepted deliveries per name ([`ChannelSettings::rate_limit`]).
    accepted: Mutex<Limiter>,
    /// Refused deliveries per name ([`ChannelSettings::refused_log_limit`]).
    refused: Mutex<Limiter>,
}

impl std::fmt::Debug for ChannelsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelsService")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl ChannelsService {
    /// Channels kept in `store` (the database `tasks` works on) whose tasks `tasks`
    /// creates, with secrets sealed under `key`.
    pub fn new(
        tasks: TaskService,
        store: Store,
        key: ChannelKey,
        settings: ChannelSettings,
    ) -> Self {
        Self {
            tasks,
            book: ChannelBook::new(store),
            inner: Arc::new(Inner {
                key,
                settings,
                accepted: Mutex::new(Limiter::default()),
                refused: Mutex::new(Limiter::default()),
            }),
            user: None,
        }
    }

    /// The same channels, with the changes made through the returned handle
    /// (create, edit, rotate, remove) audited as the team user `user` (`None`: the
    /// operator). Limits and the key are shared with `self`.
    #[must_use]
    pub fn acting_as(&self, user: Option<String>) -> Self {
        Self {
            user,
            ..self.clone()
        }
    }

    /// Appends the audit row of a change to the channel `name`, by the operator (and,
    /// in team mode, the user) this handle acts as.
    pub(crate) async fn audit(
        &self,
        action: AuditAction,
        name: &str,
        detail: Option<String>,
    ) -> Result<()> {
        self.tasks
            .append_audit(NewAudit {
                actor: Some(Actor::Operator),
                target: Some(name.to_owned()),
                detail,
                user: self.user.clone(),
                ..NewAudit::new(action)
            })
            .await?;
        Ok(())
    }

    /// The settings.
    pub fn settings(&self) -> &ChannelSettings {
        &self.inner.settings
    }

    fn check_workspace(&self, workspace: Option<&str>) -> Result<()> {
        match workspace {
            Some(name) if self.tasks.workspaces().find(Some(name)).is_none() => {
                Err(ChannelsError::NotFound {
                    what: "workspace",
                    id: name.to_owned(),
                })
            }
            _ => Ok(()),
        }
    }

    fn check_template(template: Option<&str>) -> Result<()> {
        match template {
            Some(template) if template.trim().is_empty() => {
                Err(ChannelsError::BadRequest("the template is empty".into()))
            }
            Some(template) => check_template(template).map_err(ChannelsError::BadRequest),
            None => Ok(()),
        }
    }

    fn new_secret() -> Result<String> {
        Ok(hex(&ChannelKey::generate()?))
    }

    /// Creates a channel (enabled) with a fresh secret, returned this once.
    pub async fn create(&self, request: CreateChannel) -> Result<WithSecret> {
        if !valid_name(&request.name) {
            return Err(ChannelsError::BadRequest(format!(
                "channel names are 1-64 of a-z, 0-9, - and _, starting with a letter or \
                 digit; `{}` is not",
                request.name
            )));
        }
        Self::check_template(request.template.as_deref())?;
        self.check_workspace(request.workspace.as_deref())?;
        let secret = Self::new_secret()?;
        let new = NewChannel {
            secret_sealed: self.inner.key.seal(&request.name, &secret)?,
            name: request.name,
            template: request.template,
            workspace: request.workspace,
        };
        let channel = self.book.create(&new).await?;
        self.audit(
            AuditAction::ChannelCreated,
            &channel.name,
            Some(format!(
                "workspace {}",
                channel.workspace.as_deref().unwrap_or("(default)")
            )),
        )
        .await?;
        Ok(WithSecret {
            channel: channel.into(),
            secret,
        })
    }

    /// Every channel, by name.
    pub async fn list(&self) -> Result<Vec<ChannelView>> {
        let channels = self.book.list().await?;
        Ok(channels.into_iter().map(ChannelView::from).collect())
    }

    async fn find(&self, name: &str) -> Result<Channel> {
        self.book
            .find(name)
            .await?
            .ok_or_else(|| ChannelsError::NotFound {
                what: "channel",
                id: name.to_owned(),
            })
    }

    /// The channel named `name`.
    pub async fn show(&self, name: &str) -> Result<ChannelView> {
        Ok(self.find(name).await?.into())
    }

    /// Changes the channel named `name`.
    pub async fn edit(&self, name: &str, edit: EditChannel) -> Result<ChannelView> {
        if let Some(template) = &edit.template {
            Self::check_template(template.as_deref())?;
        }
        if let Some(workspace) = &edit.workspace {
            self.check_workspace(workspace.as_deref())?;
        }
        let detail = edit_detail(&edit);
        let change = ChannelChange {
            template: edit.template,
            workspace: edit.workspace,
            enabled: edit.enabled,
            secret_sealed: None,
        };
        let channel = self.book.edit(name, change).await?;
        self.audit(AuditAction::ChannelUpdated, &channel.name, Some(detail))
            .await?;
        Ok(channel.into())
    }

    /// Replaces the secret of the channel named `name`; the new one is returned this once
    /// and the old one stops working at once.
    pub async fn rotate(&self, name: &str) -> Result<WithSecret> {
        self.find(name).await?;
        let secret = Self::new_secret()?;
        let change = ChannelChange {
            secret_sealed: Some(self.inner.key.seal(name, &secret)?),
            ..ChannelChange::default()
        };
        let channel = self.book.edit(name, change).await?;
        self.audit(AuditAction::ChannelRotated, &channel.name, None)
            .await?;
        Ok(WithSecret {
            channel: channel.into(),
            secret,
        })
    }

    /// Removes the channel named `name` and its delivery log.
    pub async fn remove(&self, name: &str) -> Result<()> {
        self.book.remove(name).await?;
        self.audit(AuditAction::ChannelRemoved, name, None).await
    }

    /// The newest `limit` deliveries to the channel named `name`, newest first.
    pub async fn deliveries(&self, name: &str, limit: usize) -> Result<Vec<DeliveryRecord>> {
        self.report_unlogged(name, self.book.now()).await?;
        Ok(self.book.deliveries(name, limit).await?)
    }

    /// The secret of the channel named `name`, for signing a test delivery on this
    /// machine (`pocketpilot channels test`); never sent over the API.
    pub async fn secret(&self, name: &str) -> Result<String> {
        let channel = self.find(name).await?;
        self.inner.key.open(&channel.name, &channel.secret_sealed)
    }

    /// Verifies `delivery` and, if it passes, creates its task (see the module docs for
    /// what is refused). Refusals of known channels are recorded in their delivery log
    /// (one by one up to [`ChannelSettings::refused_log_limit`] a window, then one row
    /// with the number), and so is the first delivery of a window over the rate limit.
    pub async fn deliver(&self, delivery: Delivery) -> Result<DeliveryOutcome> {
        let now = self.book.now();
        self.report_unlogged(&delivery.channel, now).await?;
        let channel = delivery.channel.clone();
        let outcome = self.verify_and_create(delivery, now).await?;
        match &outcome {
            DeliveryOutcome::Accepted(task) => {
                // The task exists: the sender must hear 202 (a retry would be refused as
                // a replay), so a failure to write the log row does not change that.
                let _ = self
                    .record(
                        &channel,
                        DeliveryStatus::Accepted,
                        None,
                        Some(task.id.clone()),
                    )
                    .await;
            }
            DeliveryOutcome::Refused(Refusal::UnknownChannel) | DeliveryOutcome::RateLimited => {}
            DeliveryOutcome::Refused(refusal) => {
                let within = lock(&self.inner.refused)
                    .count(
                        &channel,
                        now.as_millis(),
                        self.period(),
                        self.inner.settings.refused_log_limit,
                    )
                    .is_ok();
                // Past the budget a refusal costs no write: the window's row counts it.
                if within {
                    self.record(
                        &channel,
                        DeliveryStatus::Refused,
                        Some(refusal.to_string()),
                        None,
                    )
                    .await?;
                }
            }
        }
        Ok(outcome)
    }

    /// The rate limit's window in ms.
    fn period(&self) -> i64 {
        i64::try_from(self.inner.settings.rate_period.as_millis()).unwrap_or(i64::MAX)
    }

    /// Writes the one `refused` row of the ended window of `channel` in which refusals
    /// went past [`ChannelSettings::refused_log_limit`], saying how many were not logged.
    async fn report_unlogged(&self, channel: &str, now: Timestamp) -> Result<()> {
        let ended =
            lock(&self.inner.refused).take_ended_excess(channel, now.as_millis(), self.period());
        let Some(window) = ended else {
            return Ok(());
        };
        let settings = &self.inner.settings;
        let reason = format!(
            "{} more refused deliveries in the {} s from {} were not logged one by one \
             (more than {} in one window)",
            window.excess,
            settings.rate_period.as_secs(),
            Timestamp::from_millis(window.start),
            settings.refused_log_limit,
        );
        self.record(channel, DeliveryStatus::Refused, Some(reason), None)
            .await
    }

    async fn record(
        &self,
        channel: &str,
        status: DeliveryStatus,
        reason: Option<String>,
        task: Option<pp_types::TaskId>,
    ) -> Result<()> {
        Ok(self
            .book
            .record(channel, status, reason.as_deref(), task.as_ref())
            .await?)
    }

    async fn verify_and_create(
        &self,
        delivery: Delivery,
        now: Timestamp,
    ) -> Result<DeliveryOutcome> {
        let refused = |refusal| Ok(DeliveryOutcome::Refused(refusal));
        let Some(body) = delivery.body else {
            return refused(Refusal::Oversize);
        };
        if body.len() > self.inner.settings.max_body_bytes {
            return refused(Refusal::Oversize);
        }
        let timestamp = delivery
            .timestamp
            .as_deref()
            .map(str::trim)
            .filter(|text| {
                (1..=12).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
            })
            .and_then(|text| {
                text.parse::<i64>()
                    .ok()
                    .map(|seconds| (text.to_owned(), seconds))
            });
        let signature = delivery
            .signature
            .as_deref()
            .map(str::trim)
            .and_then(|text| text.strip_prefix("sha256="))
            .and_then(|hex| unhex(hex).map(|bytes| (hex.to_owned(), bytes)));
        let (Some((timestamp_text, seconds)), Some((signature_hex, signature))) =
            (timestamp, signature)
        else {
            return refused(Refusal::MalformedHeaders);
        };
        let channel = if valid_name(&delivery.channel) {
            self.book.find(&delivery.channel).await?
        } else {
            None
        };
        // Unknown channels (and secrets that do not open here) still compute an HMAC,
        // so they take about as long as a bad signature on a known one.
        let opened = channel.as_ref().and_then(|channel| {
            self.inner
                .key
                .try_open(&channel.name, &channel.secret_sealed)
        });
        let unopenable = channel.is_some() && opened.is_none();
        let secret = opened.unwrap_or_else(|| "0".repeat(64));
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        let mut message = Vec::with_capacity(timestamp_text.len() + 1 + body.len());
        message.extend_from_slice(timestamp_text.as_bytes());
        message.push(b'.');
        message.extend_from_slice(&body);
        let matches = hmac::verify(&key, &message, &signature).is_ok();
        let Some(channel) = channel else {
            return refused(Refusal::UnknownChannel);
        };
        if unopenable {
            return refused(Refusal::SecretUnopenable(channel.name));
        }
        if !channel.enabled {
            return refused(Refusal::Disabled);
        }
        if !matches {
            return refused(Refusal::BadSignature);
        }
        let window =
            i64::try_from(self.inner.settings.replay_window.as_millis()).unwrap_or(i64::MAX);
        let sent = seconds.saturating_mul(1000);
        if sent < now.as_millis().saturating_sub(window) {
            return refused(Refusal::Stale);
        }
        if sent > now.as_millis().saturating_add(window) {
            return refused(Refusal::Future);
        }
        // Only now, signed and in time, does the delivery count against the channel's
        // budget: nobody without the secret can use it up.
        let taken = lock(&self.inner.accepted).count(
            &channel.name,
            now.as_millis(),
            self.period(),
            self.inner.settings.rate_limit,
        );
        if let Err(excess) = taken {
            // Logged once per window: a flood costs no write per request.
            if excess == 1 {
                self.record(&channel.name, DeliveryStatus::RateLimited, None, None)
                    .await?;
            }
            return Ok(DeliveryOutcome::RateLimited);
        }
        let outcome = self
            .claim_and_create(channel, &signature_hex, sent, body, delivery.script)
            .await;
        if !matches!(outcome, Ok(DeliveryOutcome::Accepted(_))) {
            lock(&self.inner.accepted).uncount(&delivery.channel, now.as_millis(), self.period());
        }
        outcome
    }

    /// Claims the signature (refusing a replay) and creates the task of a verified
    /// delivery to `channel`, sent at `sent` (ms).
    async fn claim_and_create(
        &self,
        channel: Channel,
        signature_hex: &str,
        sent: i64,
        body: Vec<u8>,
        script: Option<Value>,
    ) -> Result<DeliveryOutcome> {
        let refused = |refusal| Ok(DeliveryOutcome::Refused(refusal));
        let window =
            i64::try_from(self.inner.settings.replay_window.as_millis()).unwrap_or(i64::MAX);
        // Kept until the timestamp leaves the window (and a second more), after which the
        // timestamp alone refuses it.
        let expires = Timestamp::from_millis(sent.saturating_add(window).saturating_add(1000));
        let seen_key = format!("{}:{signature_hex}", channel.name);
        if !self.book.claim_signature(&seen_key, expires).await? {
            return refused(Refusal::Replay);
        }
        let prompt = render_prompt(&channel.name, channel.template.as_deref(), &body);
        let request = CreateTask {
            prompt,
            workspace: channel.workspace.clone(),
            actor: Actor::Webhook,
            script,
        };
        match self
            .tasks
            .create_from(request, Some(channel.name.clone()))
            .await
        {
            Ok(task) => Ok(DeliveryOutcome::Accepted(Box::new(task))),
            Err(error @ (pp_tasks::Error::BadRequest(_) | pp_tasks::Error::NotFound { .. })) => {
                refused(Refusal::TaskNotCreated(error.to_string()))
            }
            Err(other) => Err(other.into()),
        }
    }
}

/// What an edit changed, for its audit row.
fn edit_detail(edit: &EditChannel) -> String {
    let mut parts = Vec::new();
    if let Some(enabled) = edit.enabled {
        parts.push(if enabled { "enabled" } else { "disabled" }.to_owned());
    }
    if let Some(template) = &edit.template {
        parts.push(match template {
            Some(_) => "template changed".to_owned(),
            None => "template reset".to_owned(),
        });
    }
    if let Some(workspace) = &edit.workspace {
        parts.push(format!(
            "workspace {}",
            workspace.as_deref().unwrap_or("(default)")
        ));
    }
    if parts.is_empty() {
        "nothing changed".to_owned()
    } else {
        parts.join(", ")
    }
}
