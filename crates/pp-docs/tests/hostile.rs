//! Hostile documents cannot hurt the caller: each is parsed in a limited child process
//! and answers with a clear error within its limit (+ 1 s), and no child is left.
//!
//! This binary is its own parser child: started as `hostile __parse` it runs
//! [`pp_docs::child::main`]; otherwise it runs the checks below one after another (no
//! libtest: its output on stdout would corrupt the child's answer) and counts children
//! of this process in `/proc` after each.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a hand-rolled test harness (no #[test]): it reports on stdout, reads /proc and \
              fails a check by panicking"
)]

#[path = "it/support.rs"]
mod support;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pp_docs::extract::ExtractOptions;
use pp_docs::{DocsError, Format, Job, Parser, ParserLimits};

/// The limits every check runs under.
fn limits() -> ParserLimits {
    ParserLimits {
        cpu_secs: 5,
        memory_bytes: 1 << 30,
        output_bytes: 8 << 20,
        wall: Duration::from_secs(8),
    }
}

fn parser() -> Parser {
    let program = std::env::current_exe().unwrap();
    Parser::new(program, vec!["__parse".to_owned()]).with_limits(limits())
}

fn extract(format: Format) -> Job {
    Job::Extract {
        format,
        options: ExtractOptions {
            pages: None,
            max_chars: 100_000,
        },
    }
}

/// Children of this process (zombies included): none may outlive a run.
fn children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the command may hold spaces and parentheses.
        let Some((_, after)) = stat.rsplit_once(") ") else {
            continue;
        };
        if after.split_whitespace().nth(1) == Some(me.as_str()) {
            found.push(stat);
        }
    }
    found
}

/// Runs `job` on `bytes` with `parser`, checks the time and that no child is left, and
/// returns the result.
fn run_checked(parser: &Parser, job: &Job, bytes: &[u8]) -> Result<pp_docs::JobOutput, DocsError> {
    let started = Instant::now();
    let result = parser.run(job, bytes);
    let elapsed = started.elapsed();
    let bound = parser.limits().wall + Duration::from_secs(1);
    assert!(
        elapsed <= bound,
        "took {elapsed:?}, more than {bound:?}: {result:?}"
    );
    let left = children();
    assert!(left.is_empty(), "children left behind: {left:?}");
    result
}

fn truncated_pdf() {
    let pdf = support::labels_first_pdf();
    let error = run_checked(&parser(), &extract(Format::Pdf), &pdf[..pdf.len() / 2]);
    // pdf_oxide may recover the text of a cut file (it rebuilds the cross-references);
    // either way the answer is prompt and clear.
    match error {
        Ok(_) => {}
        Err(DocsError::Malformed(message)) => assert!(!message.is_empty()),
        Err(other) => panic!("unexpected: {other:?}"),
    }
}

fn junk_after_the_header() {
    let mut junk = b"%PDF-1.7\n".to_vec();
    let mut state: u32 = 0x1234_5678;
    for _ in 0..200_000 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        junk.push((state >> 24) as u8);
    }
    let error = run_checked(&parser(), &extract(Format::Pdf), &junk).unwrap_err();
    assert!(matches!(error, DocsError::Malformed(_)), "{error:?}");
}

fn a_pdf_that_references_itself() {
    // The page tree's root is its own kid, and the content's length is itself.
    let pdf = support::pdf(
        &[
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 /Parent 2 0 R >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>".to_owned(),
            "<< /Length 4 0 R >>\nstream\nBT ET\nendstream".to_owned(),
        ],
        "",
    );
    let result = run_checked(&parser(), &extract(Format::Pdf), &pdf);
    match result {
        // A reader may skip the loop and find the one real page (which has no text).
        Ok(pp_docs::JobOutput::Document(document)) => {
            assert!(document.text.contains("no text layer"), "{document:?}");
        }
        Ok(other) => panic!("unexpected: {other:?}"),
        Err(DocsError::Malformed(_) | DocsError::Limit(_) | DocsError::Crashed(_)) => {}
        Err(other) => panic!("unexpected: {other:?}"),
    }
}

fn an_encrypted_pdf() {
    let encrypt = "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4 \
                   /O <0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20> \
                   /U <A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0> >> \
                   /ID [<00112233445566778899AABBCCDDEEFF> <00112233445566778899AABBCCDDEEFF>]";
    let pdf = support::one_page_pdf("BT /F1 12 Tf 50 750 Td (secret) Tj ET", encrypt);
    let error = run_checked(&parser(), &extract(Format::Pdf), &pdf).unwrap_err();
    assert_eq!(error, DocsError::Encrypted);
    assert!(error.to_string().contains("encrypted"), "{error}");
}

fn a_docx_zip_bomb() {
    let started = Instant::now();
    // 1 GiB of one repeated paragraph, deflated to about a megabyte.
    let paragraph = "<w:p><w:r><w:t>boom boom boom boom</w:t></w:r></w:p>".repeat(1 << 10);
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .large_file(true);
    writer.start_file("[Content_Types].xml", options).unwrap();
    std::io::Write::write_all(&mut writer, support::DOCX_CONTENT_TYPES.as_bytes()).unwrap();
    writer.start_file("_rels/.rels", options).unwrap();
    std::io::Write::write_all(&mut writer, support::DOCX_RELS.as_bytes()).unwrap();
    writer.start_file("word/document.xml", options).unwrap();
    let head = r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>"#;
    std::io::Write::write_all(&mut writer, head.as_bytes()).unwrap();
    let mut written = 0usize;
    while written < (1 << 30) {
        std::io::Write::write_all(&mut writer, paragraph.as_bytes()).unwrap();
        written += paragraph.len();
    }
    std::io::Write::write_all(&mut writer, b"</w:body></w:document>").unwrap();
    let bomb = writer.finish().unwrap().into_inner();
    println!(
        "  (bomb built in {:.1}s, {} bytes)",
        started.elapsed().as_secs_f64(),
        bomb.len()
    );
    assert!(bomb.len() < 16 << 20, "the bomb is {} bytes", bomb.len());
    let error = run_checked(&parser(), &extract(Format::Docx), &bomb).unwrap_err();
    println!("  ({error})");
    assert!(
        matches!(error, DocsError::Malformed(_) | DocsError::Limit(_)),
        "{error:?}"
    );
}

fn deeply_nested_xml() {
    let depth = 100_000;
    let body = format!(
        "{}<w:p><w:r><w:t>deep</w:t></w:r></w:p>{}",
        "<w:sdt><w:sdtContent>".repeat(depth),
        "</w:sdtContent></w:sdt>".repeat(depth)
    );
    let result = run_checked(&parser(), &extract(Format::Docx), &support::docx(&body));
    println!("  ({result:?})");
    match result {
        // A reader that caps the depth may read it; the point is the service survives.
        Ok(_) => {}
        Err(DocsError::Crashed(message)) => assert!(message.contains("stack"), "{message}"),
        Err(DocsError::Malformed(_) | DocsError::Limit(_)) => {}
        Err(other) => panic!("unexpected: {other:?}"),
    }
}

fn a_parser_that_never_answers_is_killed_at_the_wall_limit() {
    let parser = Parser::new(
        PathBuf::from("/bin/sh"),
        vec!["-c".into(), "sleep 30".into()],
    )
    .with_limits(ParserLimits {
        wall: Duration::from_millis(300),
        ..limits()
    });
    let error = run_checked(&parser, &extract(Format::Txt), b"x").unwrap_err();
    assert!(
        matches!(&error, DocsError::Limit(message) if message.starts_with("time")),
        "{error:?}"
    );
}

fn the_task_deadline_stops_the_parser_too() {
    let parser = Parser::new(
        PathBuf::from("/bin/sh"),
        vec!["-c".into(), "sleep 30".into()],
    );
    let deadline = Instant::now() + Duration::from_millis(200);
    let started = Instant::now();
    let error = parser
        .run_with_deadline(&extract(Format::Txt), b"x", Some(deadline))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(&error, DocsError::Limit(message) if message.contains("task's deadline")),
        "{error:?}"
    );
    assert!(children().is_empty());
}

fn a_child_killed_by_the_cpu_limit_is_a_cpu_limit() {
    let parser = Parser::new(
        PathBuf::from("/bin/sh"),
        vec!["-c".into(), "kill -XCPU $$".into()],
    )
    .with_limits(limits());
    let error = run_checked(&parser, &extract(Format::Txt), b"").unwrap_err();
    assert!(
        matches!(&error, DocsError::Limit(message) if message.starts_with("cpu")),
        "{error:?}"
    );
}

fn a_crash_is_reported_as_a_crash() {
    let parser = Parser::new(
        PathBuf::from("/bin/sh"),
        vec!["-c".into(), "kill -SEGV $$".into()],
    )
    .with_limits(limits());
    let error = run_checked(&parser, &extract(Format::Txt), b"").unwrap_err();
    assert!(matches!(error, DocsError::Crashed(_)), "{error:?}");
}

fn a_stack_overflow_and_a_failed_allocation_say_so() {
    let dies_saying = |message: &str| {
        let script = format!("cat >/dev/null; echo \"{message}\" >&2; kill -ABRT $$");
        Parser::new(PathBuf::from("/bin/sh"), vec!["-c".into(), script]).with_limits(limits())
    };
    let parser = dies_saying("thread 'main' has overflowed its stack");
    let error = run_checked(&parser, &extract(Format::Docx), b"PK").unwrap_err();
    assert!(
        matches!(&error, DocsError::Crashed(message) if message.contains("nests too deeply")),
        "{error:?}"
    );
    let parser = dies_saying("memory allocation of 1073741824 bytes failed");
    let error = run_checked(&parser, &extract(Format::Docx), b"PK").unwrap_err();
    assert!(
        matches!(&error, DocsError::Limit(message) if message.starts_with("memory")),
        "{error:?}"
    );
}

fn too_much_output_is_cut_and_the_child_killed() {
    let parser = Parser::new(PathBuf::from("/bin/sh"), vec!["-c".into(), "yes".into()])
        .with_limits(ParserLimits {
            output_bytes: 1 << 20,
            ..limits()
        });
    let error = run_checked(&parser, &extract(Format::Txt), b"").unwrap_err();
    assert!(
        matches!(&error, DocsError::Limit(message) if message.starts_with("output")),
        "{error:?}"
    );
}

fn nonsense_on_stdout_is_a_process_error() {
    let parser = Parser::new(
        PathBuf::from("/bin/sh"),
        vec![
            "-c".into(),
            "cat >/dev/null; echo hello; echo oops >&2".into(),
        ],
    )
    .with_limits(limits());
    let error = run_checked(&parser, &extract(Format::Txt), b"abc").unwrap_err();
    assert!(
        matches!(&error, DocsError::Process(message) if message.contains("oops")),
        "{error:?}"
    );
}

fn a_missing_program_is_a_process_error() {
    let parser = Parser::new(PathBuf::from("/nonexistent/pocketpilot"), vec![]);
    let error = run_checked(&parser, &extract(Format::Txt), b"").unwrap_err();
    assert!(
        matches!(&error, DocsError::Process(message) if message.contains("cannot start")),
        "{error:?}"
    );
}

fn a_good_document_round_trips() {
    let output = run_checked(
        &parser(),
        &extract(Format::Pdf),
        &support::labels_first_pdf(),
    );
    let Ok(pp_docs::JobOutput::Document(document)) = output else {
        panic!("{output:?}");
    };
    assert!(document.text.contains("113.00"), "{}", document.text);
    // A large input goes through the pipe whole (more than a pipe buffer).
    let text = "行".repeat(300_000);
    let output = run_checked(&parser(), &extract(Format::Txt), text.as_bytes());
    let Ok(pp_docs::JobOutput::Document(document)) = output else {
        panic!("{output:?}");
    };
    assert!(document.truncated);
    assert!(
        document
            .text
            .ends_with("[… truncated at 100000 characters of 300000]")
    );
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("__parse") {
        return ExitCode::from(pp_docs::child::main());
    }
    let checks: [(&str, fn()); 15] = [
        ("a_good_document_round_trips", a_good_document_round_trips),
        ("truncated_pdf", truncated_pdf),
        ("junk_after_the_header", junk_after_the_header),
        ("a_pdf_that_references_itself", a_pdf_that_references_itself),
        ("an_encrypted_pdf", an_encrypted_pdf),
        ("a_docx_zip_bomb", a_docx_zip_bomb),
        ("deeply_nested_xml", deeply_nested_xml),
        (
            "a_parser_that_never_answers_is_killed_at_the_wall_limit",
            a_parser_that_never_answers_is_killed_at_the_wall_limit,
        ),
        (
            "the_task_deadline_stops_the_parser_too",
            the_task_deadline_stops_the_parser_too,
        ),
        (
            "a_child_killed_by_the_cpu_limit_is_a_cpu_limit",
            a_child_killed_by_the_cpu_limit_is_a_cpu_limit,
        ),
        (
            "a_crash_is_reported_as_a_crash",
            a_crash_is_reported_as_a_crash,
        ),
        (
            "a_stack_overflow_and_a_failed_allocation_say_so",
            a_stack_overflow_and_a_failed_allocation_say_so,
        ),
        (
            "too_much_output_is_cut_and_the_child_killed",
            too_much_output_is_cut_and_the_child_killed,
        ),
        (
            "nonsense_on_stdout_is_a_process_error",
            nonsense_on_stdout_is_a_process_error,
        ),
        (
            "a_missing_program_is_a_process_error",
            a_missing_program_is_a_process_error,
        ),
    ];
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let mut failed = 0;
    for (name, check) in checks {
        if filter
            .as_deref()
            .is_some_and(|filter| !name.contains(filter))
        {
            continue;
        }
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(check);
        let status = if outcome.is_ok() { "ok" } else { "FAILED" };
        println!(
            "test {name} ... {status} ({:.2}s)",
            started.elapsed().as_secs_f64()
        );
        failed += usize::from(outcome.is_err());
    }
    if failed > 0 {
        eprintln!("{failed} hostile check(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
