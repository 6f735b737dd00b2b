//! What a decision made away from the console and the terminal may approve: a link or a
//! chat app's button rejects anything, but approves only calls of the capabilities
//! `[remote] approve_capabilities` names (whole capabilities, not suffixes), and never an
//! overwriting `move_file`. The one resolve path enforces it for `via` link and
//! telegram; front ends ask first so a card never offers a button that will fail.

use pp_types::{ApprovalRecord, Via};
use serde_json::Value;

use crate::service::TaskService;
use crate::settings::RemoteSettings;

/// What every refusal ends with: where the person can still approve it.
const ELSEWHERE: &str = "approve this in the console or the terminal";

impl TaskService {
    /// `None` when a link or a chat button may approve `approval`; otherwise why not,
    /// ending with "approve this in the console or the terminal".
    pub fn remote_refusal(&self, approval: &ApprovalRecord) -> Option<String> {
        refusal(
            &self.inner.shared.settings.remote,
            &approval.tool,
            &approval.capability,
            &approval.arguments,
        )
    }
}

/// Whether `via` is a remote way of deciding (a link or a chat app).
pub(crate) fn is_remote(via: Option<Via>) -> bool {
    matches!(via, Some(Via::Link | Via::Telegram))
}

/// [`TaskService::remote_refusal`] for `settings`, of a call of `tool` with
/// `capability` and `arguments`.
pub(crate) fn refusal(
    settings: &RemoteSettings,
    tool: &str,
    capability: &str,
    arguments: &Value,
) -> Option<String> {
    if !settings
        .approve_capabilities
        .iter()
        .any(|allowed| allowed == capability)
    {
        return Some(format!(
            "`{tool}` ({capability}) cannot be approved from a link or a chat app: [remote] \
             approve_capabilities does not name `{capability}`; {ELSEWHERE}"
        ));
    }
    let overwrites = tool == "move_file"
        && arguments
            .get("overwrite")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    if overwrites {
        return Some(format!(
            "a `move_file` that may replace a file cannot be approved from a link or a chat \
             app; {ELSEWHERE}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The call as [`refusal`] reads it.
    struct Call(&'static str, &'static str, Value);

    fn approval(tool: &'static str, capability: &'static str, arguments: Value) -> Call {
        Call(tool, capability, arguments)
    }

    fn refusal(settings: &RemoteSettings, call: &Call) -> Option<String> {
        super::refusal(settings, call.0, call.1, &call.2)
    }

    #[test]
    fn only_named_whole_capabilities_are_approvable_remotely() {
        let settings = RemoteSettings::default();
        for (tool, capability) in [
            ("write_file", "file:write"),
            ("make_dir", "file:create"),
            ("edit_file", "file:update"),
        ] {
            assert_eq!(
                refusal(&settings, &approval(tool, capability, json!({}))),
                None
            );
        }
        for (tool, capability) in [
            ("delete_file", "file:delete"),
            ("run_command", "shell:execute"),
            ("memory_write", "memory:write"),
            ("notes__append", "mcp:notes:append:write"),
        ] {
            let why =
                refusal(&settings, &approval(tool, capability, json!({}))).unwrap_or_default();
            assert!(why.contains(capability), "{why}");
            assert!(why.ends_with(ELSEWHERE), "{why}");
        }
        let named = RemoteSettings {
            approve_capabilities: vec!["memory:write".into()],
        };
        assert_eq!(
            refusal(&named, &approval("memory_write", "memory:write", json!({}))),
            None
        );
        assert!(refusal(&named, &approval("write_file", "file:write", json!({}))).is_some());
    }

    #[test]
    fn an_overwriting_move_is_never_approvable_remotely() {
        let settings = RemoteSettings::default();
        let plain = json!({"from": "a.md", "to": "b.md"});
        assert_eq!(
            refusal(&settings, &approval("move_file", "file:update", plain)),
            None
        );
        let overwriting = json!({"from": "a.md", "to": "b.md", "overwrite": true});
        let why = refusal(
            &settings,
            &approval("move_file", "file:update", overwriting),
        );
        assert!(why.is_some_and(|why| why.contains("replace")));
    }

    #[test]
    fn only_links_and_chat_apps_are_remote() {
        assert!(is_remote(Some(Via::Link)));
        assert!(is_remote(Some(Via::Telegram)));
        for via in [None, Some(Via::Console), Some(Via::Api), Some(Via::Cli)] {
            assert!(!is_remote(via));
        }
    }
}
