//! Operator files: list, download and upload through the workspace jail, audited with
//! `actor = operator` (SPEC §1.6: the operator's road, no approval card, same jail).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use pp_gate::{Jail, ListOptions, WriteOutcome};
use pp_types::{Actor, AuditAction, NewAudit, Timestamp};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiQuery, too_large};
use crate::state::AppState;
use crate::upload::{self, AbortFlag, AbortOnDrop, BodyReader, PumpError, hex_digest};
use tokio::sync::mpsc;

/// Most entries one listing returns.
const MAX_LIST_ENTRIES: usize = 1000;

/// The files query: a workspace-relative path and a workspace name (and, for uploads,
/// whether an existing file may be replaced).
#[derive(Debug, Deserialize)]
pub(crate) struct FileQuery {
    path: Option<String>,
    workspace: Option<String>,
    #[serde(default)]
    overwrite: bool,
}

/// The workspace named in the query (the default without one), with its jail.
struct Target {
    workspace: String,
    root: PathBuf,
}

impl Target {
    fn find(state: &AppState, name: Option<&str>) -> ApiResult<Self> {
        let workspace = state.service().workspaces().find(name).ok_or_else(|| {
            ApiError::NotFound(format!(
                "workspace `{}` not found",
                name.unwrap_or("(default)")
            ))
        })?;
        Ok(Self {
            workspace: workspace.name.clone(),
            root: workspace.path.clone(),
        })
    }

    /// Runs `operation` on a blocking thread with a jail on the workspace.
    async fn with_jail<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&Jail) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || {
            let jail = Jail::new(&root).map_err(ApiError::internal)?;
            operation(&jail)
        })
        .await
        .map_err(ApiError::internal)?
    }
}

fn required(path: Option<String>) -> ApiResult<String> {
    path.filter(|path| !path.is_empty())
        .ok_or_else(|| ApiError::BadRequest("the `path` query parameter is required".into()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex_digest(&Sha256::digest(bytes))
}

async fn audit(
    state: &AppState,
    caller: &Caller,
    action: AuditAction,
    target: String,
    detail: String,
) -> ApiResult<()> {
    let entry = NewAudit {
        actor: Some(Actor::Operator),
        target: Some(target),
        detail: Some(detail),
        user: caller.user.clone(),
        ..NewAudit::new(action)
    };
    state.service().append_audit(entry).await?;
    Ok(())
}

/// `GET /api/files?path=`: `{"entries": [{path, kind, size, modified_at}], "truncated"}`.
/// Listings are not audited (reads of names only; downloads are).
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<FileQuery>,
) -> ApiResult<Json<Value>> {
    let target = Target::find(&state, query.workspace.as_deref())?;
    let path = query.path.unwrap_or_default();
    let listing = target
        .with_jail(move |jail| {
            let options = ListOptions {
                recursive: false,
                max_entries: MAX_LIST_ENTRIES,
            };
            Ok(jail.list(&path, options)?)
        })
        .await?;
    let entries: Vec<Value> = listing
        .entries
        .into_iter()
        .map(|entry| {
            json!({
                "path": entry.path,
                "kind": entry.kind.as_str(),
                "size": entry.size,
                "modified_at": entry.modified.map(Timestamp::from),
            })
        })
        .collect();
    Ok(Json(json!({
        "workspace": target.workspace,
        "entries": entries,
        "truncated": listing.truncated,
    })))
}

/// A `Content-Disposition: attachment` value naming the file twice (RFC 6266): an ASCII
/// `filename="…"` for old clients (other characters become `_`, quotes and backslashes
/// are escaped) and the exact UTF-8 name as `filename*=UTF-8''…` (RFC 5987
/// percent-encoding), which browsers prefer.
fn attachment(path: &str) -> HeaderValue {
    let name = path.rsplit('/').next().unwrap_or(path);
    let name = if name.trim().is_empty() {
        "download"
    } else {
        name
    };
    let mut fallback = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                fallback.push('\\');
                fallback.push(c);
            }
            ' '..='~' => fallback.push(c),
            _ => fallback.push('_'),
        }
    }
    HeaderValue::from_str(&format!(
        "attachment; filename=\"{fallback}\"; filename*=UTF-8''{}",
        rfc5987(name)
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

/// `text` percent-encoded as an RFC 5987 `value-chars`: every UTF-8 byte outside the
/// `attr-char` set is written `%XX`.
fn rfc5987(text: &str) -> String {
    const ATTR_CHARS: &[u8] = b"!#$&+-.^_`|~";
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || ATTR_CHARS.contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// `GET /api/files/content?path=`: the file's bytes as an attachment, audited as
/// `file_downloaded`; files over the download limit get 413.
pub(crate) async fn download(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<FileQuery>,
) -> ApiResult<Response> {
    let target = Target::find(&state, query.workspace.as_deref())?;
    let path = required(query.path)?;
    let limit = state.settings().max_download_bytes;
    let read_path = path.clone();
    // Reading and hashing (up to 25 MiB) both stay on the blocking pool.
    let (relative, content, hash) = target
        .with_jail(move |jail| {
            let relative = jail.check(&read_path)?;
            let content = jail.read(&read_path, limit)?;
            let hash = sha256_hex(&content.bytes);
            Ok((relative, content, hash))
        })
        .await?;
    if content.truncated {
        return Err(ApiError::PayloadTooLarge(format!(
            "the file is {} bytes, over the download limit of {limit} bytes",
            content.size
        )));
    }
    let relative = relative.to_string_lossy().into_owned();
    audit(
        &state,
        &caller,
        AuditAction::FileDownloaded,
        relative.clone(),
        format!(
            "{hash} ({} bytes, workspace `{}`)",
            content.bytes.len(),
            target.workspace
        ),
    )
    .await?;
    let headers = [
        (
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        ),
        (CONTENT_DISPOSITION, attachment(&relative)),
    ];
    Ok((headers, content.bytes).into_response())
}

/// `PUT /api/files/content?path=`: streams the raw body to a temp file through the
/// jail and renames it over the target (missing parent directories are created),
/// audited as `file_uploaded` with the content's hash. `201` when the file is new, `200`
/// when it replaced one. An existing file is replaced only with `overwrite=true`;
/// otherwise `409 exists`, checked before the body is read and again right before the
/// rename (so a file that appears meanwhile is not replaced either). Over the upload
/// limit: `413` and the target is untouched; more than
/// [`crate::ServerSettings::max_concurrent_uploads`] at once: `429 too_many_uploads`.
pub(crate) async fn upload(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<FileQuery>,
    request: Request,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let permit = Arc::clone(state.upload_slots())
        .try_acquire_owned()
        .map_err(|_| {
            ApiError::TooManyUploads(format!(
                "{} uploads are already running; try again when one has finished",
                state.settings().max_concurrent_uploads
            ))
        })?;
    let target = Target::find(&state, query.workspace.as_deref())?;
    let path = required(query.path)?;
    let limit = state.settings().max_upload_bytes;
    let max_bytes = u64::try_from(limit).unwrap_or(u64::MAX);
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max_bytes) {
        return Err(too_large(limit));
    }
    let overwrite = query.overwrite;
    let exists = |path: &str| {
        ApiError::Exists(format!(
            "`{path}` exists; send overwrite=true to replace it"
        ))
    };
    if !overwrite {
        let probe_path = path.clone();
        if target
            .with_jail(move |jail| Ok(jail.probe(&probe_path)?.is_file()))
            .await?
        {
            return Err(exists(&path));
        }
    }

    let (frames, receiver) = mpsc::channel(upload::CHANNEL_FRAMES);
    let abort = AbortFlag::default();
    let on_drop = AbortOnDrop::new(abort.clone());
    let writer_abort = abort.clone();
    let write = target.with_jail(move |jail| {
        // Held until the write has ended, even if the request went away meanwhile.
        let _permit = permit;
        let relative = jail.check(&path)?;
        let mut reader = BodyReader::new(receiver);
        let appeared = AtomicBool::new(false);
        let stop = || {
            if writer_abort.is_raised() {
                return true;
            }
            // Asked between chunks and right before the rename.
            let there = !overwrite && jail.probe(&path).is_ok_and(|probe| probe.is_file());
            appeared.store(there, Ordering::Relaxed);
            there
        };
        let outcome = write_streamed(jail, &path, &mut reader, max_bytes, &stop);
        if appeared.load(Ordering::Relaxed) {
            return Err(exists(&path));
        }
        let outcome = outcome?;
        let (hash, size) = reader.finish();
        Ok((relative, outcome, hash, size))
    });
    let pump = upload::pump(request.into_body(), frames, max_bytes, &abort);
    let (pumped, written) = tokio::join!(pump, write);
    on_drop.disarm();
    match pumped {
        Err(PumpError::TooLarge) => return Err(too_large(limit)),
        Err(PumpError::Body(message)) => {
            return Err(ApiError::BadRequest(format!(
                "the upload body could not be read: {message}"
            )));
        }
        Ok(()) => {}
    }
    let (relative, outcome, hash, size) = written?;
    let relative = relative.to_string_lossy().into_owned();
    audit(
        &state,
        &caller,
        AuditAction::FileUploaded,
        relative.clone(),
        format!("{hash} ({size} bytes, workspace `{}`)", target.workspace),
    )
    .await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({
            "workspace": target.workspace,
            "path": relative,
            "size": size,
            "sha256": hash,
            "created": outcome.created,
        })),
    ))
}

/// Writes what `reader` yields to `path` atomically, at most `max_bytes` bytes; the
/// target is untouched unless the whole body arrived and `abort` stayed `false`.
fn write_streamed(
    jail: &Jail,
    path: &str,
    reader: &mut BodyReader,
    max_bytes: u64,
    abort: &dyn Fn() -> bool,
) -> ApiResult<WriteOutcome> {
    let outcome = jail.write_atomic_from(path, reader, max_bytes, abort)?;
    if !reader.complete() {
        // Unreachable in practice (the reader only ends after `Frame::End`); kept so a
        // future change to the reader cannot commit half a body silently.
        return Err(ApiError::internal("an upload ended without its end marker"));
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_names_are_safe() {
        assert_eq!(
            attachment("dir/report.pdf"),
            HeaderValue::from_static(
                "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf"
            )
        );
        assert_eq!(
            attachment("a\"b\r\n\\.txt"),
            HeaderValue::from_static(
                "attachment; filename=\"a\\\"b__\\\\.txt\"; filename*=UTF-8''a%22b%0D%0A%5C.txt"
            )
        );
        assert_eq!(
            attachment("报告 2026.md"),
            HeaderValue::from_static(
                "attachment; filename=\"__ 2026.md\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A%202026.md"
            )
        );
        assert_eq!(
            attachment("dir/"),
            HeaderValue::from_static(
                "attachment; filename=\"download\"; filename*=UTF-8''download"
            )
        );
        assert_eq!(
            sha256_hex(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
