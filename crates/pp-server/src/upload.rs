//! Streaming an upload body to disk without holding it in memory.
//!
//! The async side ([`pump`]) reads the request body frame by frame and hands each
//! frame over a small bounded channel to a blocking [`BodyReader`], which the jail's
//! atomic writer reads from on the blocking pool. At most [`CHANNEL_FRAMES`] frames wait
//! in the channel, so a slow disk slows the client down instead of filling memory. The
//! reader hashes and counts what passes through it.
//!
//! A body that ends early (the client went away, a framing error, the size limit) is
//! never committed: the reader only reports the end of the content after the pump sent
//! an explicit [`Frame::End`], so a channel closed without it is a read error, the jail
//! removes its temp file and the target is left as it was.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

/// Frames buffered between the body and the writer (each is at most a few tens of KiB).
pub(crate) const CHANNEL_FRAMES: usize = 8;

/// What the pump sends to the reader.
#[derive(Debug)]
pub(crate) enum Frame {
    /// The next bytes of the body.
    Data(Bytes),
    /// The whole body arrived; nothing follows.
    End,
    /// The body cannot be completed; the write must fail.
    Failed(String),
}

/// Why the pump stopped before the end of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PumpError {
    /// More than the limit arrived.
    TooLarge,
    /// The body could not be read (the client went away, bad framing).
    Body(String),
}

/// Shared between the pump and the writer: set once the upload must not be committed.
#[derive(Debug, Clone, Default)]
pub(crate) struct AbortFlag(Arc<AtomicBool>);

impl AbortFlag {
    pub(crate) fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Raises the flag when dropped unless disarmed: a handler future dropped mid-upload
/// (the connection closed) stops the write at its next check.
pub(crate) struct AbortOnDrop {
    flag: AbortFlag,
    armed: bool,
}

impl AbortOnDrop {
    pub(crate) fn new(flag: AbortFlag) -> Self {
        Self { flag, armed: true }
    }

    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.flag.raise();
        }
    }
}

/// Sends `body` to the reader frame by frame, at most `max_bytes` bytes in all; ends
/// with [`Frame::End`] when the whole body arrived. Stops early (and raises `abort`)
/// when the body is too large or fails; stops quietly when the writer went away.
pub(crate) async fn pump(
    body: Body,
    frames: mpsc::Sender<Frame>,
    max_bytes: u64,
    abort: &AbortFlag,
) -> Result<(), PumpError> {
    let mut stream = body.into_data_stream();
    let mut total: u64 = 0;
    while let Some(frame) = stream.next().await {
        let failure = match frame {
            Ok(bytes) => {
                total = total.saturating_add(bytes.len() as u64);
                if total <= max_bytes {
                    if frames.send(Frame::Data(bytes)).await.is_err() {
                        // The writer stopped (refused path, disk error); it reports why.
                        return Ok(());
                    }
                    continue;
                }
                PumpError::TooLarge
            }
            Err(error) => PumpError::Body(error.to_string()),
        };
        abort.raise();
        let message = match &failure {
            PumpError::TooLarge => format!("the upload is larger than {max_bytes} bytes"),
            PumpError::Body(message) => message.clone(),
        };
        let _ = frames.send(Frame::Failed(message)).await;
        return Err(failure);
    }
    let _ = frames.send(Frame::End).await;
    Ok(())
}

/// The blocking end of the channel: a [`Read`] over the body that hashes and counts.
pub(crate) struct BodyReader {
    frames: mpsc::Receiver<Frame>,
    /// The unread rest of the current frame.
    current: Bytes,
    /// Set once [`Frame::End`] arrived.
    ended: bool,
    hasher: Sha256,
    size: u64,
}

impl BodyReader {
    pub(crate) fn new(frames: mpsc::Receiver<Frame>) -> Self {
        Self {
            frames,
            current: Bytes::new(),
            ended: false,
            hasher: Sha256::new(),
            size: 0,
        }
    }

    /// Whether the whole body was read.
    pub(crate) fn complete(&self) -> bool {
        self.ended
    }

    /// The SHA-256 (`sha256:<hex>`) and the size of what was read.
    pub(crate) fn finish(self) -> (String, u64) {
        (hex_digest(&self.hasher.finalize()), self.size)
    }
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            match self.frames.blocking_recv() {
                Some(Frame::Data(bytes)) => self.current = bytes,
                Some(Frame::End) => self.ended = true,
                Some(Frame::Failed(message)) => return Err(io::Error::other(message)),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the upload ended before its last byte",
                    ));
                }
            }
        }
        let count = buf.len().min(self.current.len());
        let chunk = self.current.split_to(count);
        buf[..count].copy_from_slice(&chunk);
        self.hasher.update(&chunk);
        self.size = self.size.saturating_add(count as u64);
        Ok(count)
    }
}

/// `sha256:<lowercase hex>` of a finished SHA-256 digest.
pub(crate) fn hex_digest(digest: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for &byte in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader_of(frames: Vec<Frame>) -> BodyReader {
        let (sender, receiver) = mpsc::channel(frames.len().max(1));
        for frame in frames {
            sender.try_send(frame).unwrap();
        }
        BodyReader::new(receiver)
    }

    #[test]
    fn reads_every_frame_then_ends() {
        let mut reader = reader_of(vec![
            Frame::Data(Bytes::from_static(b"hello ")),
            Frame::Data(Bytes::from_static(b"world")),
            Frame::End,
        ]);
        let mut content = Vec::new();
        reader.read_to_end(&mut content).unwrap();
        assert_eq!(content, b"hello world");
        assert!(reader.complete());
        let (hash, size) = reader.finish();
        assert_eq!(size, 11);
        assert_eq!(
            hash,
            "sha256:b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
        );
    }

    #[test]
    fn a_body_cut_short_is_an_error_not_an_end() {
        let mut reader = reader_of(vec![Frame::Data(Bytes::from_static(b"half"))]);
        let mut content = Vec::new();
        let error = reader.read_to_end(&mut content).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
        assert!(!reader.complete());

        let mut reader = reader_of(vec![Frame::Failed("too large".into())]);
        assert!(reader.read_to_end(&mut Vec::new()).is_err());
    }

    #[tokio::test]
    async fn the_pump_stops_at_the_limit() {
        let (sender, mut receiver) = mpsc::channel(8);
        let abort = AbortFlag::default();
        let result = pump(Body::from("0123456789"), sender, 4, &abort).await;
        assert_eq!(result, Err(PumpError::TooLarge));
        assert!(abort.is_raised());
        assert!(matches!(receiver.recv().await, Some(Frame::Failed(_))));
    }
}
