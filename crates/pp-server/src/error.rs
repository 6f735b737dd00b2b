//! The one error type of the API and its JSON shape:
//! `{"error": {"code": "…", "message": "…"}}`.

use axum::Json;
use axum::http::header::WWW_AUTHENTICATE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pp_gate::JailError;
use serde_json::json;

/// Result type of the handlers.
pub(crate) type ApiResult<T> = std::result::Result<T, ApiError>;

/// Every way a request can fail, each with its status and machine-readable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Malformed or mistyped input: `400 bad_request`.
    BadRequest(String),
    /// No valid token or session: `401 unauthorized`.
    Unauthorized,
    /// Team mode: no valid user token or session (or the user was removed): `401
    /// unauthorized`, saying how a team user logs in.
    TeamUnauthorized,
    /// A foreign Host or Origin, or a path the jail refuses: `403 forbidden`.
    Forbidden(String),
    /// Unknown task, approval, workspace, file or route: `404 not_found`.
    NotFound(String),
    /// The route exists but not with this method: `405 method_not_allowed`.
    MethodNotAllowed,
    /// The approval was already decided: `409 already_resolved`.
    AlreadyResolved(String),
    /// The target is not in the state the deciding person saw (`seen_fingerprint`):
    /// `409 changed_since_seen`; nothing ran, the approval stays pending.
    ChangedSinceSeen(String),
    /// The task is in a state that does not allow this: `409 invalid_state`.
    InvalidState(String),
    /// A link or a chat button tried to approve what only the console or the terminal
    /// may (`[remote] approve_capabilities`): `403 not_remotely_approvable`.
    NotRemotelyApprovable(String),
    /// An approval link that no longer decides (used, expired, revoked, or its approval
    /// decided another way; the message says by whom and how): `410 gone`.
    Gone(String),
    /// A chat session's previous turn has not ended: `409 session_busy`.
    SessionBusy(String),
    /// Body or file over the limit: `413 payload_too_large`.
    PayloadTooLarge(String),
    /// Edited arguments fail the tool's schema or the gate: `422 invalid_arguments`.
    InvalidArguments(String),
    /// A `SKILL.md` or skill name the rules refuse: `422 invalid_skill`.
    InvalidSkill(String),
    /// A skill from a read-only `[skills] dirs` folder: `409 read_only`.
    ReadOnly(String),
    /// An upload would replace a file and did not say `overwrite=true`: `409 exists`.
    Exists(String),
    /// A conditional write without `If-Match`: `428 precondition_required`.
    PreconditionRequired(String),
    /// `If-Match` names a version that is no longer current: `412 version_mismatch`.
    VersionMismatch(String),
    /// As many uploads as allowed are already running: `429 too_many_uploads`.
    TooManyUploads(String),
    /// A revert refused because the file changed after the agent's write: `409
    /// changed_since`; the body also carries `diff` (the agent's version → now).
    ChangedSince {
        /// What to tell the person.
        message: String,
        /// The unified diff, when both versions are kept text.
        diff: Option<String>,
    },
    /// A revert refused: nothing kept, too large, already reverted: `409 not_revertible`.
    NotRevertible(String),
    /// A cron expression that does not parse: `400 invalid_cron`; the body's error also
    /// carries `field` (`minute` … `day_of_week`, or `expression`) and `token`.
    InvalidCron {
        /// What to tell the person (names the field and token).
        message: String,
        /// The field at fault.
        field: &'static str,
        /// The token at fault.
        token: String,
    },
    /// A time zone that is not an IANA name this build knows: `400 unknown_time_zone`.
    UnknownTimeZone(String),
    /// A webhook delivery refused (unknown or disabled channel, bad signature, stale or
    /// future timestamp, replay, oversize body, malformed headers): `401 unauthorized`
    /// with one body for every reason (the reason is logged on the server only).
    DeliveryRefused,
    /// Too many webhook deliveries to one channel name: `429 rate_limited`.
    RateLimited,
    /// Something broke on our side: `500 internal`. The detail goes to the error log
    /// ([`crate::AppState::set_error_log`]), never to the client.
    Internal(String),
}

pp_types::wire_enum! {
    /// The machine-readable code of an API error, `{"error": {"code": "…"}}`: one per
    /// kind of failure ([`ApiError::status_and_code`] decides which), shared by the console
    /// and the OpenAPI document.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ErrorCode {
        /// 400: malformed or mistyped input.
        BadRequest => "bad_request",
        /// 401: no valid token or session, or a refused webhook delivery.
        Unauthorized => "unauthorized",
        /// 403: a foreign Host or Origin, or a path the jail refuses.
        Forbidden => "forbidden",
        /// 404: unknown task, approval, workspace, file or route.
        NotFound => "not_found",
        /// 405: the route exists but not with this method.
        MethodNotAllowed => "method_not_allowed",
        /// 409: the approval was already decided.
        AlreadyResolved => "already_resolved",
        /// 409: the target changed since the deciding person saw it.
        ChangedSinceSeen => "changed_since_seen",
        /// 409: the task is in a state that does not allow this.
        InvalidState => "invalid_state",
        /// 403: a link or a chat button may not approve this call.
        NotRemotelyApprovable => "not_remotely_approvable",
        /// 409: a chat session's previous turn has not ended.
        SessionBusy => "session_busy",
        /// 410: an approval link that no longer decides.
        Gone => "gone",
        /// 413: body or file over the limit.
        PayloadTooLarge => "payload_too_large",
        /// 422: edited arguments fail the tool's schema or the gate.
        InvalidArguments => "invalid_arguments",
        /// 422: a `SKILL.md` or skill name the rules refuse.
        InvalidSkill => "invalid_skill",
        /// 409: a skill from a read-only folder.
        ReadOnly => "read_only",
        /// 409: the file or name exists already.
        Exists => "exists",
        /// 428: a conditional write without `If-Match`.
        PreconditionRequired => "precondition_required",
        /// 412: `If-Match` names a version that is no longer current.
        VersionMismatch => "version_mismatch",
        /// 429: as many uploads as allowed are already running.
        TooManyUploads => "too_many_uploads",
        /// 409: a revert refused because the file changed since.
        ChangedSince => "changed_since",
        /// 409: a revert refused: nothing kept, too large, already reverted.
        NotRevertible => "not_revertible",
        /// 400: a cron expression that does not parse.
        InvalidCron => "invalid_cron",
        /// 400: a time zone this build does not know.
        UnknownTimeZone => "unknown_time_zone",
        /// 429: too many webhook deliveries to one channel.
        RateLimited => "rate_limited",
        /// 500: something broke on our side.
        Internal => "internal",
    }
}

/// The detail of an internal error, attached to the response for the logging middleware.
#[derive(Debug, Clone)]
pub(crate) struct InternalDetail(pub(crate) String);

impl ApiError {
    /// The status and code of this error (the single place that decides them).
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            Self::Unauthorized | Self::TeamUnauthorized => {
                (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized)
            }
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed),
            Self::AlreadyResolved(_) => (StatusCode::CONFLICT, ErrorCode::AlreadyResolved),
            Self::InvalidState(_) => (StatusCode::CONFLICT, ErrorCode::InvalidState),
            Self::NotRemotelyApprovable(_) => {
                (StatusCode::FORBIDDEN, ErrorCode::NotRemotelyApprovable)
            }
            Self::ChangedSinceSeen(_) => (StatusCode::CONFLICT, ErrorCode::ChangedSinceSeen),
            Self::SessionBusy(_) => (StatusCode::CONFLICT, ErrorCode::SessionBusy),
            Self::Gone(_) => (StatusCode::GONE, ErrorCode::Gone),
            Self::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::PayloadTooLarge),
            Self::InvalidArguments(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::InvalidArguments,
            ),
            Self::InvalidSkill(_) => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidSkill),
            Self::ReadOnly(_) => (StatusCode::CONFLICT, ErrorCode::ReadOnly),
            Self::Exists(_) => (StatusCode::CONFLICT, ErrorCode::Exists),
            Self::PreconditionRequired(_) => (
                StatusCode::PRECONDITION_REQUIRED,
                ErrorCode::PreconditionRequired,
            ),
            Self::VersionMismatch(_) => {
                (StatusCode::PRECONDITION_FAILED, ErrorCode::VersionMismatch)
            }
            Self::TooManyUploads(_) => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::TooManyUploads),
            Self::ChangedSince { .. } => (StatusCode::CONFLICT, ErrorCode::ChangedSince),
            Self::NotRevertible(_) => (StatusCode::CONFLICT, ErrorCode::NotRevertible),
            Self::InvalidCron { .. } => (StatusCode::BAD_REQUEST, ErrorCode::InvalidCron),
            Self::UnknownTimeZone(_) => (StatusCode::BAD_REQUEST, ErrorCode::UnknownTimeZone),
            Self::DeliveryRefused => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            Self::RateLimited => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }

    /// The message sent to the client.
    fn message(&self) -> String {
        match self {
            Self::BadRequest(message)
            | Self::Forbidden(message)
            | Self::NotFound(message)
            | Self::AlreadyResolved(message)
            | Self::InvalidState(message)
            | Self::NotRemotelyApprovable(message)
            | Self::ChangedSinceSeen(message)
            | Self::SessionBusy(message)
            | Self::Gone(message)
            | Self::PayloadTooLarge(message)
            | Self::InvalidArguments(message)
            | Self::InvalidSkill(message)
            | Self::ReadOnly(message)
            | Self::Exists(message)
            | Self::PreconditionRequired(message)
            | Self::VersionMismatch(message)
            | Self::TooManyUploads(message)
            | Self::NotRevertible(message)
            | Self::UnknownTimeZone(message)
            | Self::InvalidCron { message, .. }
            | Self::ChangedSince { message, .. } => message.clone(),
            Self::Unauthorized => "a valid `Authorization: Bearer <token>` header or console \
                                   session is required; run `pocketpilot serve` and open the \
                                   login link it prints"
                .into(),
            Self::TeamUnauthorized => "team mode: a valid user token is required; API \
                                       clients send `Authorization: Bearer <user token>`, \
                                       people log in to the console by opening \
                                       `/login?token=<user token>` (the token `pocketpilot \
                                       users add` or `users rotate` printed; an owner gives \
                                       you a new one)"
                .into(),
            Self::MethodNotAllowed => "this route does not accept that method".into(),
            Self::DeliveryRefused => "the delivery was not accepted".into(),
            Self::RateLimited => "too many deliveries to this channel; try again later".into(),
            Self::Internal(_) => "internal error; see the server log".into(),
        }
    }

    /// An internal error whose detail `error` is logged, not sent.
    pub(crate) fn internal(error: impl std::fmt::Display) -> Self {
        Self::Internal(error.to_string())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (_, code) = self.status_and_code();
        write!(f, "{code}: {}", self.message())
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let mut body = json!({"error": {"code": code, "message": self.message()}});
        if let Self::ChangedSince { diff, .. } = &self {
            body["diff"] = json!(diff);
        }
        if let Self::InvalidCron { field, token, .. } = &self {
            body["error"]["field"] = json!(field);
            body["error"]["token"] = json!(token);
        }
        let mut response = (status, Json(body)).into_response();
        match self {
            Self::Internal(detail) => {
                response.extensions_mut().insert(InternalDetail(detail));
            }
            Self::Unauthorized | Self::TeamUnauthorized => {
                response
                    .headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

impl From<pp_tasks::Error> for ApiError {
    fn from(error: pp_tasks::Error) -> Self {
        use pp_tasks::Error;
        match error {
            Error::NotFound { .. } => Self::NotFound(error.to_string()),
            Error::AlreadyResolved { .. } => Self::AlreadyResolved(error.to_string()),
            Error::InvalidState { .. } => Self::InvalidState(error.to_string()),
            Error::ChangedSinceSeen(message) => Self::ChangedSinceSeen(message),
            Error::NotRemotelyApprovable(message) => Self::NotRemotelyApprovable(message),
            Error::SessionBusy { .. } => Self::SessionBusy(error.to_string()),
            Error::Gone(message) => Self::Gone(message),
            Error::InvalidArguments(message) => Self::InvalidArguments(message),
            Error::BadRequest(message) => Self::BadRequest(message),
            Error::Forbidden(message) => Self::Forbidden(message),
            // Only a team user's token or standing is ever refused this way.
            Error::Unauthorized(_) => Self::TeamUnauthorized,
            Error::Store(_) if error.is_conflict() => Self::InvalidState(error.to_string()),
            Error::Memory(error) => error.into(),
            Error::Store(_)
            | Error::Workspace { .. }
            | Error::Model(_)
            | Error::Tools(_)
            | Error::Internal(_) => Self::internal(error),
        }
    }
}

impl From<pp_knowledge::Error> for ApiError {
    fn from(error: pp_knowledge::Error) -> Self {
        use pp_knowledge::Error;
        match error {
            Error::Skill(error) => error.into(),
            Error::Memory(error) => error.into(),
            Error::Audit(_) | Error::Internal(_) => Self::internal(error),
        }
    }
}

impl From<pp_knowledge::SkillsError> for ApiError {
    fn from(error: pp_knowledge::SkillsError) -> Self {
        use pp_knowledge::SkillsError;
        match error {
            SkillsError::NotFound { .. } => Self::NotFound(error.to_string()),
            SkillsError::InvalidName { .. } | SkillsError::Invalid { .. } => {
                Self::InvalidSkill(error.to_string())
            }
            SkillsError::ReadOnly { .. } => Self::ReadOnly(error.to_string()),
            SkillsError::Exists { .. } => Self::InvalidState(error.to_string()),
            SkillsError::VersionMismatch { .. } => Self::VersionMismatch(error.to_string()),
            SkillsError::Shared(_) => Self::internal(error),
            SkillsError::Jail { source, .. } => source.into(),
        }
    }
}

impl From<pp_knowledge::MemoryError> for ApiError {
    fn from(error: pp_knowledge::MemoryError) -> Self {
        use pp_knowledge::MemoryError;
        match error {
            MemoryError::VersionMismatch { .. } => Self::VersionMismatch(error.to_string()),
            MemoryError::TooLarge => Self::PayloadTooLarge(error.to_string()),
            MemoryError::Jail(source) => source.into(),
            MemoryError::Shared(_) => Self::internal(error),
        }
    }
}

impl From<pp_channels::ChannelsError> for ApiError {
    fn from(error: pp_channels::ChannelsError) -> Self {
        use pp_channels::ChannelsError;
        match error {
            ChannelsError::BadRequest(message) => Self::BadRequest(message),
            ChannelsError::NotFound { .. } => Self::NotFound(error.to_string()),
            ChannelsError::NameTaken(_) => Self::Exists(error.to_string()),
            ChannelsError::Store(error) => pp_tasks::Error::from(error).into(),
            ChannelsError::Internal(_) => Self::internal(error),
        }
    }
}

impl From<JailError> for ApiError {
    /// Rule violations are 403 with the rule in the message (the jail's messages carry
    /// only the path as written, never a resolved location outside the workspace).
    fn from(error: JailError) -> Self {
        if error.denial().is_some() {
            return Self::Forbidden(error.to_string());
        }
        match error {
            JailError::NotFound { .. } => Self::NotFound(error.to_string()),
            JailError::NotAFile { .. } | JailError::NotADirectory { .. } => {
                Self::BadRequest(error.to_string())
            }
            JailError::TooLarge { .. } => Self::PayloadTooLarge(error.to_string()),
            other => Self::internal(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_hide_their_detail() {
        let error = ApiError::internal("disk /secret/path exploded");
        assert!(!error.to_string().contains("/secret"));
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(response.extensions().get::<InternalDetail>().is_some());
    }

    #[test]
    fn a_lost_cancel_or_resolve_race_is_409_invalid_state() {
        // Both `POST /api/tasks/{id}/cancel` and `POST /api/approvals/{id}/resolve`
        // return the service's error through this conversion.
        let error: ApiError = pp_tasks::Error::InvalidState {
            id: "t_1".into(),
            state: pp_types::TaskState::Cancelled,
            action: "resolve",
        }
        .into();
        assert_eq!(
            error.status_and_code(),
            (StatusCode::CONFLICT, ErrorCode::InvalidState)
        );
        let error = ApiError::TooManyUploads("busy".into());
        assert_eq!(
            error.status_and_code(),
            (StatusCode::TOO_MANY_REQUESTS, ErrorCode::TooManyUploads)
        );
    }

    #[test]
    fn jail_refusals_are_forbidden() {
        let error: ApiError = JailError::Escapes {
            path: "../x".into(),
        }
        .into();
        assert_eq!(error.status_and_code().1, ErrorCode::Forbidden);
        let error: ApiError = JailError::NotFound { path: "x".into() }.into();
        assert_eq!(error.status_and_code().1, ErrorCode::NotFound);
        let error: ApiError = JailError::TooLarge {
            path: "x".into(),
            max_bytes: 3,
        }
        .into();
        assert_eq!(error.status_and_code().1, ErrorCode::PayloadTooLarge);
    }
}
