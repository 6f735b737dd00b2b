use pretty_assertions::assert_eq;

use super::*;

fn parse_in_pieces(text: &str, size: usize) -> Vec<SseEvent> {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    for piece in text.as_bytes().chunks(size) {
        events.extend(parser.push(piece));
    }
    events.extend(parser.finish());
    events
}

#[test]
fn parses_events_split_anywhere() {
    let text = ": keep-alive\r\nevent: message_start\r\ndata: {\"a\":\r\ndata:1}\r\n\r\n\
                data: é\n\ndata: [DONE]";
    let expected = vec![
        SseEvent {
            event: "message_start".into(),
            data: "{\"a\":\n1}".into(),
        },
        SseEvent {
            event: String::new(),
            data: "é".into(),
        },
        SseEvent {
            event: String::new(),
            data: "[DONE]".into(),
        },
    ];
    for size in 1..text.len() {
        assert_eq!(parse_in_pieces(text, size), expected, "chunk size {size}");
    }
}

#[test]
fn lone_cr_ends_lines() {
    assert_eq!(
        parse_in_pieces("data: a\r\rdata: b\r\r", 3),
        vec![
            SseEvent {
                event: String::new(),
                data: "a".into()
            },
            SseEvent {
                event: String::new(),
                data: "b".into()
            }
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Generative tests: whatever the bytes, the parser never panics, and where the network
// cuts a stream never changes the events it yields.

use proptest::prelude::*;
use proptest::sample::Index;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// `bytes` cut at `cuts` (positions, in any order, repeats allowed).
fn cut<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for point in points {
        pieces.push(&bytes[start..point]);
        start = point;
    }
    pieces.push(&bytes[start..]);
    pieces
}

fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.push(chunk));
    }
    events.extend(parser.finish());
    events
}

/// Bytes that are mostly the ones SSE cares about, with multi-byte UTF-8 and junk.
fn stream_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => any::<u8>(),
        2 => Just(b'\n'),
        2 => Just(b'\r'),
        2 => Just(b':'),
        1 => Just(b' '),
        2 => prop::sample::select(b"dataevnt".to_vec()),
        1 => prop::sample::select(vec![0xC3, 0xA9, 0xE6, 0x97, 0xA5, 0xF0, 0x9F, 0x98, 0x80]),
    ]
}

/// One event as a server might write it.
#[derive(Debug, Clone)]
struct WrittenEvent {
    /// A comment line before the event.
    comment: bool,
    /// An `id:` line (ignored by the parser).
    id: bool,
    name: Option<String>,
    /// Data lines and whether each is written `data: x` (else `data:x`).
    data: Vec<(String, bool)>,
    /// Line end of each line (the parser takes `\n`, `\r\n` and `\r`).
    ends: Vec<&'static str>,
}

fn written_event() -> impl Strategy<Value = WrittenEvent> {
    (
        any::<bool>(),
        any::<bool>(),
        proptest::option::of("[a-z_]{1,12}"),
        prop::collection::vec(("[^\r\n]{0,12}", any::<bool>()), 1..4),
        prop::collection::vec(prop::sample::select(vec!["\n", "\r\n", "\r"]), 8),
    )
        .prop_map(|(comment, id, name, data, ends)| WrittenEvent {
            comment,
            id,
            name,
            data,
            ends,
        })
}

/// The text of `events`, and the events the parser must yield from it. The last event
/// may lack its blank line, and even its last line end: `finish` still delivers it.
fn write(events: &[WrittenEvent], open_end: bool) -> (Vec<u8>, Vec<SseEvent>) {
    let mut text = String::new();
    let mut expected = Vec::new();
    for (number, event) in events.iter().enumerate() {
        let mut lines = Vec::new();
        if event.comment {
            lines.push(": keep-alive".to_owned());
        }
        if let Some(name) = &event.name {
            lines.push(format!("event: {name}"));
        }
        if event.id {
            lines.push(format!("id: {number}"));
        }
        for (value, space) in &event.data {
            lines.push(if *space {
                format!("data: {value}")
            } else {
                format!("data:{value}")
            });
        }
        let last = number + 1 == events.len();
        if !(last && open_end) {
            lines.push(String::new());
        }
        let count = lines.len();
        for (position, line) in lines.into_iter().enumerate() {
            text.push_str(&line);
            if last && open_end && position + 1 == count {
                break;
            }
            let mut end = event.ends[position % event.ends.len()];
            // `\r` then `\n` would be one line end, not two.
            if line.is_empty() && end == "\n" && text.ends_with('\r') {
                end = "\r\n";
            }
            text.push_str(end);
        }
        expected.push(SseEvent {
            event: event.name.clone().unwrap_or_default(),
            data: event
                .data
                .iter()
                .map(|(value, space)| {
                    if *space {
                        value.as_str()
                    } else {
                        value.strip_prefix(' ').unwrap_or(value)
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    (text.into_bytes(), expected)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_and_cuts_do_not_matter(
        bytes in prop::collection::vec(stream_byte(), 0..400),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let whole = parse_chunks(&[&bytes]);
        let pieces = parse_chunks(&cut(&bytes, &cuts));
        prop_assert_eq!(&pieces, &whole);
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(parse_chunks(&one_by_one), whole);
    }

    #[test]
    fn written_streams_yield_their_events_however_cut(
        events in prop::collection::vec(written_event(), 1..6),
        open_end in any::<bool>(),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let (bytes, expected) = write(&events, open_end);
        prop_assert_eq!(&parse_chunks(&[&bytes]), &expected);
        prop_assert_eq!(&parse_chunks(&cut(&bytes, &cuts)), &expected);
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(parse_chunks(&one_by_one), expected);
    }
}

/// Fixed cases for the generator's corners: a lone `\r` before a blank `\r\n`, a data
/// value that starts with a space, and an open end.
#[test]
fn regression_cr_before_blank_line_and_leading_space() {
    let bytes = b"data:  x\r\r\nevent: e\ndata:\ndata: y";
    let expected = vec![
        SseEvent {
            event: String::new(),
            data: " x".into(),
        },
        SseEvent {
            event: "e".into(),
            data: "\ny".into(),
        },
    ];
    for size in 1..bytes.len() {
        let pieces: Vec<&[u8]> = bytes.chunks(size).collect();
        assert_eq!(parse_chunks(&pieces), expected, "chunk size {size}");
    }
}
