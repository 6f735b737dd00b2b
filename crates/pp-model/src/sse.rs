//! An incremental Server-Sent Events parser: bytes in, `(event, data)` pairs out.
//!
//! Lenient on purpose: `\n`, `\r\n` and `\r` line ends, `data:` with or without the
//! space, comments (`: keep-alive`) skipped, an event without a blank line before EOF
//! still delivered by [`SseParser::finish`].

/// One event: the `event:` name (empty when absent) and the joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Feeds on chunks of bytes in whatever sizes the network delivers.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of an incomplete line (may end inside a UTF-8 sequence).
    pending: Vec<u8>,
    /// The last byte seen was `\r`, so a leading `\n` in the next chunk is its pair.
    after_cr: bool,
    event: String,
    data: Vec<String>,
}

impl SseParser {
    /// Consumes `chunk` and returns the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.pending);
                    if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                        events.push(event);
                    }
                }
                other => self.pending.push(other),
            }
        }
        events
    }

    /// Ends the stream: a final event not followed by a blank line is still delivered.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => value.clone_into(&mut self.event),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
