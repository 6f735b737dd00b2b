use pp_tools::Limits;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fixture;

#[tokio::test(flavor = "current_thread")]
async fn reads_a_whole_file_verbatim() {
    let fixture = Fixture::new();
    fixture.tree.file("notes/a.txt", "alpha\r\nbeta\n  gamma");
    assert_eq!(
        fixture
            .ok("read_file", json!({"path": "notes/a.txt"}))
            .await,
        "alpha\r\nbeta\n  gamma"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn reads_a_line_window_and_says_where_to_continue() {
    let fixture = Fixture::new();
    let text: String = (1..=10).map(|line| format!("line {line}\n")).collect();
    fixture.tree.file("log.txt", &text);
    assert_eq!(
        fixture
            .ok(
                "read_file",
                json!({"path": "log.txt", "offset": 3, "limit": 2})
            )
            .await,
        "line 4\nline 5\n[truncated: showing lines 4-5 of 10; call read_file with offset=5 to read more]\n"
    );
    assert_eq!(
        fixture
            .ok("read_file", json!({"path": "log.txt", "offset": 8}))
            .await,
        "line 9\nline 10\n"
    );
    let past = fixture
        .err("read_file", json!({"path": "log.txt", "offset": 10}))
        .await;
    assert_eq!(
        past,
        "offset 10 is past the end of the file (10 lines; offsets start at 0)"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn output_cap_gives_the_next_offset() {
    let fixture = Fixture::with_limits(Limits {
        max_output_chars: 20,
        ..Limits::default()
    });
    fixture
        .tree
        .file("log.txt", "0123456789\nabcdefghij\nxyz\n");
    assert_eq!(
        fixture.ok("read_file", json!({"path": "log.txt"})).await,
        "0123456789\n[truncated: showing lines 1-1 of 3; call read_file with offset=1 to read more]\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn byte_cap_reads_a_prefix_and_says_so() {
    let fixture = Fixture::with_limits(Limits {
        max_read_bytes: 10,
        ..Limits::default()
    });
    fixture.tree.file("big.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(
        fixture.ok("read_file", json!({"path": "big.txt"})).await,
        "one\ntwo\n[truncated: showing lines 1-2 of at least 2; read_file reads only the first 10 bytes of this 19-byte file]\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn byte_cap_in_the_middle_of_a_character_is_not_binary() {
    let fixture = Fixture::with_limits(Limits {
        max_read_bytes: 5,
        ..Limits::default()
    });
    // "ab\né" is 5 bytes; the cap of 5 cuts the 2-byte "€" that follows.
    fixture.tree.file("utf8.txt", "ab\néx€\n");
    let output = fixture.ok("read_file", json!({"path": "utf8.txt"})).await;
    assert!(output.starts_with("ab\n[truncated: "), "{output}");
}

#[tokio::test(flavor = "current_thread")]
async fn binary_files_are_refused_with_a_pointer_to_extract_document() {
    let fixture = Fixture::new();
    fixture.tree.file("image.bin", "PNG\0\0\u{1}data");
    let message = fixture.err("read_file", json!({"path": "image.bin"})).await;
    assert_eq!(
        message,
        "`image.bin` looks like a binary file (10 bytes; it contains NUL bytes); this tool only \
         handles text — use extract_document for PDF, DOCX, XLSX and other documents"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_utf8_is_binary() {
    let fixture = Fixture::new();
    let path = fixture.tree.file("latin1.txt", "");
    #[expect(
        clippy::disallowed_methods,
        reason = "test writes raw bytes the fixture cannot"
    )]
    std::fs::write(&path, b"caf\xe9\n").expect("write latin-1 bytes");
    let message = fixture
        .err("read_file", json!({"path": "latin1.txt"}))
        .await;
    assert!(message.contains("is not valid UTF-8"), "{message}");
    assert!(message.contains("extract_document"), "{message}");
}

#[tokio::test(flavor = "current_thread")]
async fn empty_missing_and_directory() {
    let fixture = Fixture::new();
    fixture.tree.file("empty.txt", "");
    fixture.tree.dir("folder");
    assert_eq!(
        fixture.ok("read_file", json!({"path": "empty.txt"})).await,
        "[empty file]\n"
    );
    let missing = fixture
        .err("read_file", json!({"path": "missing.txt"}))
        .await;
    assert!(missing.contains("missing.txt"), "{missing}");
    let folder = fixture.err("read_file", json!({"path": "folder"})).await;
    assert!(folder.contains("folder"), "{folder}");
}

#[tokio::test(flavor = "current_thread")]
async fn bad_arguments_are_errors_not_panics() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    for arguments in [
        json!({}),
        json!({"path": 7}),
        json!({"path": "a.txt", "offset": -1}),
        json!({"path": "a.txt", "limit": 0}),
        json!({"path": "a.txt", "limit": 1.5}),
        json!(null),
    ] {
        fixture.err("read_file", arguments).await;
    }
}
