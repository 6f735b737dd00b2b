//! One-key answers on a terminal: raw mode (no echo, no line buffering) only while a key
//! or a reason line is read, restored by a guard on every way out (an answer, an error,
//! Ctrl+C, which arrives as a key rather than a signal, and a panic).

use std::io::Write as _;

/// A key pressed at an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// A printable ASCII key.
    Char(char),
    /// Ctrl+C.
    Interrupt,
    /// Ctrl+D, or the terminal closed.
    End,
    /// Enter, Escape and anything else that answers nothing.
    Ignored,
    /// No key: the window's size changed while waiting (see [`read_key`]).
    Resized,
}

/// How often the size of the window is looked at while waiting for a key.
const RESIZE_CHECK_MS: i64 = 200;

/// What reading a reason line ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// Enter: the text typed (possibly empty).
    Done(String),
    /// Escape: back to the question.
    Cancelled,
    /// Ctrl+C.
    Interrupt,
    /// Ctrl+D, or the terminal closed.
    End,
}

#[cfg(unix)]
mod raw {
    use rustix::termios::{
        InputModes, LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr,
    };

    /// Puts the terminal on stdin into raw mode; the previous mode comes back on drop.
    pub(super) struct RawMode {
        saved: Termios,
    }

    impl RawMode {
        pub(super) fn enter() -> std::io::Result<Self> {
            let stdin = std::io::stdin();
            let saved = tcgetattr(&stdin)?;
            let mut raw = saved.clone();
            raw.local_modes.remove(
                LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG | LocalModes::IEXTEN,
            );
            raw.input_modes.remove(InputModes::IXON);
            raw.special_codes[SpecialCodeIndex::VMIN] = 1;
            raw.special_codes[SpecialCodeIndex::VTIME] = 0;
            tcsetattr(&stdin, OptionalActions::Now, &raw)?;
            Ok(Self { saved })
        }
    }

    impl Drop for RawMode {
        fn drop(&mut self) {
            // Best effort: there is nothing better to do if the terminal is gone.
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
        }
    }

    /// One byte from the terminal, unbuffered (std's buffered stdin would keep
    /// type-ahead that `tcflush` can no longer discard); `None` at the end.
    pub(super) fn read_byte() -> std::io::Result<Option<u8>> {
        let mut byte = [0u8; 1];
        loop {
            match rustix::io::read(std::io::stdin(), &mut byte) {
                Ok(0) => return Ok(None),
                Ok(_) => return Ok(Some(byte[0])),
                Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Whether a byte can be read within `millis` milliseconds.
    pub(super) fn readable_within(millis: i64) -> std::io::Result<bool> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdin = std::io::stdin();
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: millis * 1_000_000,
        };
        match poll(&mut fds, Some(&timeout)) {
            Ok(ready) => Ok(ready > 0),
            Err(rustix::io::Errno::INTR) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Throws away bytes already typed (the rest of an escape sequence).
    pub(super) fn discard() {
        let _ = rustix::termios::tcflush(std::io::stdin(), rustix::termios::QueueSelector::IFlush);
    }
}

#[cfg(not(unix))]
mod raw {
    //! Without termios, keys are read as lines (Enter needed).
    pub(super) struct RawMode;

    impl RawMode {
        pub(super) fn enter() -> std::io::Result<Self> {
            Ok(Self)
        }
    }

    pub(super) fn read_byte() -> std::io::Result<Option<u8>> {
        let mut byte = [0u8; 1];
        match std::io::Read::read(&mut std::io::stdin(), &mut byte)? {
            0 => Ok(None),
            _ => Ok(Some(byte[0])),
        }
    }

    pub(super) fn readable_within(_millis: i64) -> std::io::Result<bool> {
        Ok(true)
    }

    pub(super) fn discard() {}
}

/// Shows `prompt` on stderr once the terminal is in raw mode: a key pressed as soon as
/// the prompt is on screen is read as a key (Ctrl+C included), never handled by the
/// terminal in its ordinary mode (where Ctrl+C would be a signal).
fn show(prompt: &str) -> std::io::Result<()> {
    let mut stderr = std::io::stderr();
    stderr.write_all(prompt.as_bytes())?;
    stderr.flush()
}

/// Shows `prompt` and reads one key in raw mode (the terminal is restored before this
/// returns). With `size` (the window's columns and rows as last drawn), returns
/// [`Key::Resized`] as soon as the window is no longer that size, so the caller can draw
/// again (the size is looked at every [`RESIZE_CHECK_MS`] while no key comes).
pub(crate) fn read_key(prompt: &str, size: Option<(usize, usize)>) -> std::io::Result<Key> {
    let _raw = raw::RawMode::enter()?;
    show(prompt)?;
    if let Some(size) = size {
        while !raw::readable_within(RESIZE_CHECK_MS)? {
            if crate::style::terminal_size() != size {
                return Ok(Key::Resized);
            }
        }
    }
    Ok(match raw::read_byte()? {
        None | Some(0x04) => Key::End,
        Some(0x03) => Key::Interrupt,
        Some(0x1b) => {
            // An arrow or function key: drop the rest of its sequence so `[A` cannot
            // answer anything.
            raw::discard();
            Key::Ignored
        }
        Some(byte) if byte.is_ascii_graphic() || byte == b' ' => Key::Char(char::from(byte)),
        Some(_) => Key::Ignored,
    })
}

/// Shows `prompt` and reads a line in raw mode, echoing it: Enter ends it, Backspace deletes, Escape
/// cancels, Ctrl+C interrupts. Control characters are never echoed or kept.
pub(crate) fn read_line(prompt: &str) -> std::io::Result<Line> {
    let _raw = raw::RawMode::enter()?;
    show(prompt)?;
    let mut typed: Vec<u8> = Vec::new();
    let mut stderr = std::io::stderr();
    loop {
        let Some(byte) = raw::read_byte()? else {
            return Ok(Line::End);
        };
        match byte {
            b'\r' | b'\n' => {
                let _ = writeln!(stderr, "\r");
                return Ok(Line::Done(
                    String::from_utf8_lossy(&typed).trim().to_owned(),
                ));
            }
            0x03 => return Ok(Line::Interrupt),
            0x04 if typed.is_empty() => return Ok(Line::End),
            0x1b => {
                raw::discard();
                let _ = writeln!(stderr, "\r");
                return Ok(Line::Cancelled);
            }
            0x7f | 0x08 => {
                // Remove one whole UTF-8 character, and clear every column it took (two
                // for a wide CJK character; none before the first, so the prompt stays).
                let mut start = typed.len();
                while start > 0 {
                    start -= 1;
                    if typed[start] & 0xc0 != 0x80 {
                        break;
                    }
                }
                let columns = String::from_utf8_lossy(&typed[start..])
                    .chars()
                    .map(crate::style::char_width)
                    .sum::<usize>();
                typed.truncate(start);
                let _ = write!(stderr, "{}", "\x08 \x08".repeat(columns));
            }
            byte if byte < 0x20 => {}
            byte => {
                typed.push(byte);
                let _ = stderr.write_all(&[byte]);
            }
        }
        let _ = stderr.flush();
    }
}
