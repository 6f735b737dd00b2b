//! `extract_document` end to end through the real `pocketpilot __parse` child: from
//! `run`, and from `serve`, which stays up and leaves no parser behind on hostile files.

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::{Server, request};
use crate::{pocketpilot_in, text, write_script};

/// A one-page PDF (Helvetica) whose generator drew the labels first, the values later.
fn labels_first_pdf() -> Vec<u8> {
    let content = "BT /F1 12 Tf 50 750 Td (Seller:) Tj ET\n\
                   BT /F1 12 Tf 50 730 Td (Total:) Tj ET\n\
                   BT /F1 12 Tf 200 730 Td (113.00) Tj ET\n\
                   BT /F1 12 Tf 200 750 Td (ACME Trading Ltd) Tj ET";
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", index + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// Junk after a PDF header.
fn junk_pdf() -> Vec<u8> {
    let mut junk = b"%PDF-1.7\n".to_vec();
    let mut state: u32 = 7;
    for _ in 0..100_000 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        junk.push((state >> 24) as u8);
    }
    junk
}

/// Processes whose parent is `pid` and whose command line holds `__parse`.
fn parsers_of(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(") ")
            .and_then(|(_, after)| after.split_whitespace().nth(1).map(str::to_owned));
        let command = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if parent == Some(pid.to_string()) && String::from_utf8_lossy(&command).contains("__parse")
        {
            found.push(stat);
        }
    }
    found
}

#[test]
fn run_extracts_a_pdf_in_layout_order_and_a_broken_one_is_a_clear_error() {
    let tree = TempTree::new();
    std::fs::write(tree.workspace().join("invoice.pdf"), labels_first_pdf()).unwrap();
    std::fs::write(tree.workspace().join("junk.pdf"), junk_pdf()).unwrap();
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "extract_document", "arguments": {"path": "invoice.pdf"}}]},
            {"tool_calls": [{"name": "extract_document", "arguments": {"path": "junk.pdf"}}]},
            {"content": "read both"}
        ]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .args(["run", "--json", "--workspace"])
        .arg(tree.workspace())
        .arg("--script")
        .arg(&script)
        .arg("read the invoices")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let result = events
        .iter()
        .find(|event| event["type"] == "tool_result" && event["name"] == "extract_document")
        .unwrap_or_else(|| panic!("{stdout}"));
    let document: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(document["format"], "pdf");
    let lines: Vec<Vec<&str>> = document["text"]
        .as_str()
        .unwrap()
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            vec!["Seller:", "ACME", "Trading", "Ltd"],
            vec!["Total:", "113.00"]
        ]
    );
    let error = events
        .iter()
        .find(|event| event["type"] == "tool_error")
        .unwrap_or_else(|| panic!("{stdout}"));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("`junk.pdf`: the file cannot be read"),
        "{message}"
    );
}

#[test]
fn serve_survives_hostile_documents_and_leaves_no_parser_behind() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::write(tree.workspace().join("junk.pdf"), junk_pdf()).unwrap();
    let mut truncated = labels_first_pdf();
    truncated.truncate(truncated.len() / 3);
    std::fs::write(tree.workspace().join("cut.pdf"), truncated).unwrap();
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "extract_document", "arguments": {"path": "junk.pdf"}}]},
            {"tool_calls": [{"name": "extract_document", "arguments": {"path": "cut.pdf"}}]},
            {"content": "still here"}
        ]),
    );
    let server = Server::start(&home, tree.workspace(), Some(&script));
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "read"})));
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let task = server.wait_for_state(&id, "completed");
    assert_eq!(task["final_text"], "still here");
    let (status, _) = request(server.port, "GET", "/api/health", None, None);
    assert_eq!(status, 200);
    let left = parsers_of(server.child.id());
    assert!(left.is_empty(), "parser processes left: {left:?}");
}

/// A field of /proc/<pid>/status, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Finding 3 of the security issue: 100 rows of a 16 MB text of NULs aborted `serve` at
/// 8 GiB when the query ran in it. The query runs in the parser child now: the task
/// completes with a cut answer and `serve` stays within 256 MiB of its idle RSS.
#[test]
fn serve_answers_a_zeroblob_flood_cut_and_stays_small() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::write(tree.workspace().join("t.csv"), "a\n1\n").unwrap();
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) \
               SELECT CAST(zeroblob(16000000) AS TEXT) FROM c";
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "analyze_table",
                             "arguments": {"path": "t.csv", "op": "sql", "sql": sql}}]},
            {"content": "still here"}
        ]),
    );
    let server = Server::start(&home, tree.workspace(), Some(&script));
    let pid = server.child.id();
    let idle = status_kib(pid, "VmRSS:");
    // Peak RSS from here on (VmHWM reset; Linux ≥ 4.0).
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "go"})));
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let task = server.wait_for_state(&id, "completed");
    assert_eq!(task["final_text"], "still here");
    let grown_mib = status_kib(pid, "VmHWM:").saturating_sub(idle) >> 10;
    assert!(grown_mib < 256, "serve grew by {grown_mib} MiB");
}

#[test]
fn run_cuts_a_zeroblob_flood_and_stops_one_long_function_call() {
    let tree = TempTree::new();
    std::fs::write(tree.workspace().join("t.csv"), "a\n1\n").unwrap();
    let call = |sql: &str| {
        json!({"tool_calls": [{"name": "analyze_table",
        "arguments": {"path": "t.csv", "op": "sql", "sql": sql}}]})
    };
    let script = write_script(
        tree.base(),
        &json!([
            call("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) \
                  SELECT CAST(zeroblob(16000000) AS TEXT) FROM c"),
            call("SELECT instr(printf('%.*c', 2000000, 'a'), printf('%.*c', 1000000, 'a') || 'b')"),
            {"content": "done"}
        ]),
    );
    let started = std::time::Instant::now();
    let output = pocketpilot_in(&tree.base().join("home"))
        .args(["run", "--json", "--workspace"])
        .arg(tree.workspace())
        .arg("--script")
        .arg(&script)
        .arg("query")
        .output()
        .unwrap();
    let took = started.elapsed();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let result = events
        .iter()
        .find(|event| event["type"] == "tool_result" && event["name"] == "analyze_table")
        .unwrap_or_else(|| panic!("{stdout}"));
    let content = result["content"].as_str().unwrap();
    assert!(content.chars().count() <= 100_000, "{}", content.len());
    let answer: Value = serde_json::from_str(content).unwrap();
    assert_eq!(answer["truncated"], true);
    assert!(answer["note"].as_str().unwrap().contains("cut"), "{answer}");
    let error = events
        .iter()
        .find(|event| event["type"] == "tool_error")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("5 s time limit"),
        "{error}"
    );
    // The 5 s query limit + 2 s, plus generous room for the rest of the run.
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}
