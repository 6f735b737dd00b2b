//! Telegram's Bot API (<https://core.telegram.org/bots/api>) by long polling: works behind
//! NAT, with no public address. `getUpdates` (with `timeout` and `offset`), `sendMessage`
//! with an inline keyboard, `editMessageText`, `answerCallbackQuery`.
//!
//! Every method URL is `{api_url}/bot{token}/{method}`: it holds the bot's token, so no
//! error text ever includes a URL (reqwest's errors are stripped of theirs) and the
//! client has no `Debug` that could print it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::messenger::{Batch, Button, Card, Input, Messenger, MessengerError, Sender, Tap};

/// The official Bot API.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// How long one `getUpdates` waits for something to happen.
pub const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(25);

/// The longest text a message may have (Telegram: 4096 characters).
pub const MAX_TEXT_CHARS: usize = 4096;

/// A Telegram bot. No `Debug`: it holds the token.
pub struct Telegram {
    client: reqwest::Client,
    /// `{api_url}/bot{token}/`: secret.
    base: String,
    /// The token, kept only to scrub it from any text that ends up in an error.
    token: String,
    /// How long one `getUpdates` waits.
    poll_timeout: Duration,
}

impl Telegram {
    /// A bot with `token` talking to `api_url` (default [`DEFAULT_API_URL`]), long polls
    /// of `poll_timeout` (at least one second).
    pub fn new(token: &str, api_url: &str, poll_timeout: Duration) -> Result<Self, MessengerError> {
        // `Err` means another provider is installed already, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let poll_timeout = poll_timeout.max(Duration::from_secs(1));
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // The long poll plus room for the answer.
            .timeout(poll_timeout + Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| {
                MessengerError(format!(
                    "the HTTP client could not be built: {}",
                    error.without_url()
                ))
            })?;
        Ok(Self {
            client,
            base: format!("{}/bot{token}/", api_url.trim().trim_end_matches('/')),
            token: token.to_owned(),
            poll_timeout,
        })
    }

    /// Calls `method` with `body`; the `result` of an `ok` answer.
    async fn call(&self, method: &str, body: &Value) -> Result<Value, MessengerError> {
        let scrub = |text: String| {
            if self.token.is_empty() {
                text
            } else {
                text.replace(&self.token, "<token>")
            }
        };
        let response = self
            .client
            .post(format!("{}{method}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| {
                MessengerError(scrub(format!("telegram {method}: {}", error.without_url())))
            })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|error| {
            MessengerError(scrub(format!(
                "telegram {method}: reading the answer: {}",
                error.without_url()
            )))
        })?;
        let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
            MessengerError(format!(
                "telegram {method}: HTTP {} with an answer that is not JSON",
                status.as_u16()
            ))
        })?;
        if answer["ok"] == true {
            return Ok(answer["result"].clone());
        }
        let description = answer["description"]
            .as_str()
            .unwrap_or("no description")
            .chars()
            .take(300)
            .collect::<String>();
        Err(MessengerError(scrub(format!(
            "telegram {method}: HTTP {}: {description}",
            status.as_u16()
        ))))
    }
}

/// A chat id as the Bot API takes it: the number, or `@channel` as text.
fn chat_value(chat: &str) -> Value {
    chat.parse::<i64>()
        .map_or_else(|_| json!(chat), |id| json!(id))
}

/// The `reply_markup` of a card: one row of inline buttons, or none.
pub fn keyboard(buttons: &[Button]) -> Value {
    let row: Vec<Value> = buttons
        .iter()
        .map(|button| match button {
            Button::Callback { label, data } => json!({"text": label, "callback_data": data}),
            Button::Link { label, url } => json!({"text": label, "url": url}),
        })
        .collect();
    json!({ "inline_keyboard": if row.is_empty() { vec![] } else { vec![row] } })
}

/// A text cut to what a message may hold.
fn fit(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_TEXT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The inputs of a `getUpdates` result and the next offset (the largest `update_id`
/// plus one). Updates other than a button tap or a text message are skipped; so are
/// those missing what they need.
pub fn parse_updates(result: &Value) -> Batch {
    let mut batch = Batch::default();
    for update in result.as_array().into_iter().flatten() {
        if let Some(id) = update["update_id"].as_i64() {
            let next = id.saturating_add(1);
            batch.next_offset = Some(batch.next_offset.map_or(next, |known| known.max(next)));
        }
        if let Some(input) = parse_update(update) {
            batch.inputs.push(input);
        }
    }
    batch
}

fn sender(from: &Value) -> Option<Sender> {
    Some(Sender {
        id: from["id"].as_i64()?.to_string(),
        username: from["username"].as_str().map(str::to_owned),
    })
}

fn parse_update(update: &Value) -> Option<Input> {
    if let Some(query) = update.get("callback_query") {
        let message = query.get("message")?;
        return Some(Input::Tap(Tap {
            id: query["id"].as_str()?.to_owned(),
            chat: message["chat"]["id"].as_i64()?.to_string(),
            message: message["message_id"].as_i64()?.to_string(),
            data: query["data"].as_str()?.to_owned(),
            from: sender(&query["from"])?,
        }));
    }
    let message = update.get("message")?;
    Some(Input::Text {
        chat: message["chat"]["id"].as_i64()?.to_string(),
        from: sender(&message["from"])?,
        text: message["text"].as_str()?.to_owned(),
    })
}

impl Messenger for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn via(&self) -> pp_types::Via {
        pp_types::Via::Telegram
    }

    async fn send(&self, chat: &str, card: &Card) -> Result<String, MessengerError> {
        let body = json!({
            "chat_id": chat_value(chat),
            "text": fit(&card.text),
            "reply_markup": keyboard(&card.buttons),
            "link_preview_options": {"is_disabled": true},
        });
        let sent = self.call("sendMessage", &body).await?;
        sent["message_id"]
            .as_i64()
            .map(|id| id.to_string())
            .ok_or_else(|| MessengerError("telegram sendMessage: no message_id".into()))
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), MessengerError> {
        let message_id = message
            .parse::<i64>()
            .map_err(|_| MessengerError(format!("not a Telegram message id: {message}")))?;
        let body = json!({
            "chat_id": chat_value(chat),
            "message_id": message_id,
            "text": fit(&card.text),
            "reply_markup": keyboard(&card.buttons),
            "link_preview_options": {"is_disabled": true},
        });
        self.call("editMessageText", &body).await.map(drop)
    }

    async fn answer(&self, tap: &Tap, text: &str) -> Result<(), MessengerError> {
        let text: String = text.chars().take(200).collect();
        let body = json!({"callback_query_id": tap.id, "text": text});
        self.call("answerCallbackQuery", &body).await.map(drop)
    }

    async fn receive(&self, offset: Option<i64>, wait: bool) -> Result<Batch, MessengerError> {
        let timeout = if wait { self.poll_timeout.as_secs() } else { 0 };
        let mut body = json!({
            "timeout": timeout,
            "allowed_updates": ["message", "callback_query"],
        });
        if let Some(offset) = offset {
            body["offset"] = json!(offset);
        }
        let result = self.call("getUpdates", &body).await?;
        Ok(parse_updates(&result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn updates_parse_into_taps_and_texts_and_the_next_offset() {
        let result = json!([
            {"update_id": 10, "callback_query": {
                "id": "q1", "data": "a:00ff", "chat_instance": "x",
                "from": {"id": 111, "is_bot": false, "first_name": "Ann", "username": "ann"},
                "message": {"message_id": 7, "date": 1, "chat": {"id": -100, "type": "group"}}
            }},
            {"update_id": 12, "message": {
                "message_id": 8, "date": 2, "text": "/pending",
                "chat": {"id": 111, "type": "private"},
                "from": {"id": 111, "is_bot": false, "first_name": "Ann"}
            }},
            {"update_id": 11, "edited_message": {"message_id": 9}},
            // A tap on a message too old for Telegram to send: no message, skipped.
            {"update_id": 13, "callback_query": {"id": "q2", "data": "a:1",
                "from": {"id": 111, "is_bot": false, "first_name": "Ann"}}}
        ]);
        let batch = parse_updates(&result);
        assert_eq!(batch.next_offset, Some(14));
        assert_eq!(
            batch.inputs,
            vec![
                Input::Tap(Tap {
                    id: "q1".into(),
                    chat: "-100".into(),
                    message: "7".into(),
                    data: "a:00ff".into(),
                    from: Sender {
                        id: "111".into(),
                        username: Some("ann".into())
                    },
                }),
                Input::Text {
                    chat: "111".into(),
                    from: Sender {
                        id: "111".into(),
                        username: None
                    },
                    text: "/pending".into(),
                },
            ]
        );
        assert_eq!(parse_updates(&json!([])), Batch::default());
        assert_eq!(parse_updates(&json!({"not": "a list"})), Batch::default());
    }

    #[test]
    fn keyboards_and_chat_ids_are_as_the_bot_api_takes_them() {
        let buttons = vec![
            Button::Callback {
                label: "Approve".into(),
                data: "a:1".into(),
            },
            Button::Link {
                label: "Open".into(),
                url: "https://pp.example/d/x".into(),
            },
        ];
        assert_eq!(
            keyboard(&buttons),
            json!({"inline_keyboard": [[
                {"text": "Approve", "callback_data": "a:1"},
                {"text": "Open", "url": "https://pp.example/d/x"}
            ]]})
        );
        assert_eq!(keyboard(&[]), json!({"inline_keyboard": []}));
        assert_eq!(chat_value("-1001"), json!(-1001));
        assert_eq!(chat_value("@channel"), json!("@channel"));
        let long = "x".repeat(MAX_TEXT_CHARS + 10);
        assert_eq!(fit(&long).chars().count(), MAX_TEXT_CHARS);
    }

    /// An unreachable API: the error names the method, never the URL or the token.
    #[tokio::test]
    async fn errors_never_carry_the_url_or_the_token() {
        let token = "123456:SECRET-token-value";
        let bot = Telegram::new(token, "http://127.0.0.1:9", Duration::from_secs(1)).unwrap();
        let error = bot.receive(None, true).await.unwrap_err().to_string();
        assert!(error.contains("getUpdates"), "{error}");
        assert!(
            !error.contains("SECRET") && !error.contains("127.0.0.1:9"),
            "{error}"
        );
    }
}
