//! Every generated fixture (tests/fixtures/docs, see its README) extracted in-process:
//! the expected text comes out, lines in order (labels beside their values), Chinese
//! included, whatever the PDF font class.

use std::path::Path;

use pp_docs::extract::{Document, ExtractOptions, extract};
use pp_docs::{DocsError, Format};
use pretty_assertions::assert_eq;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/docs")
            .join(name),
    )
    .unwrap()
}

fn extract_fixture(name: &str) -> Result<Document, DocsError> {
    let format = Format::from_path(name).unwrap();
    extract(
        &read(name),
        format,
        &ExtractOptions {
            pages: None,
            max_chars: 1_000_000,
        },
    )
}

/// Words of a line, with Markdown table bars, heading marks and emphasis dropped:
/// spacing is free.
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == '|')
        .map(|word| word.trim_matches('*').trim_start_matches('#'))
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Asserts that each expected line is a line of `text` (up to spacing), in order.
fn assert_lines_in_order(text: &str, expected: &[&str]) {
    let lines: Vec<Vec<String>> = text.lines().map(words).collect();
    let mut from = 0;
    for wanted in expected {
        let wanted = words(wanted);
        let found = lines[from..].iter().position(|line| *line == wanted);
        let Some(at) = found else {
            panic!("line {wanted:?} not found (in order) in:\n{text}");
        };
        from += at + 1;
    }
}

#[test]
fn cid_font_with_unigb_ucs2_h() {
    let document = extract_fixture("cid-unigb.pdf").unwrap();
    assert_eq!(document.pages, 1);
    assert_eq!(document.title.as_deref(), Some("CID font, UniGB-UCS2-H"));
    assert_lines_in_order(
        &document.text,
        &[
            "电子发票（普通发票）",
            "发票号码：24112000000012345678",
            "开票日期：2024年03月15日",
            "购买方名称：北京示例科技有限公司",
            "Total 1130.00 CNY",
        ],
    );
}

#[test]
fn type0_identity_h_with_and_without_tounicode() {
    for name in ["type0-identity-h.pdf", "type0-no-tounicode.pdf"] {
        let document = extract_fixture(name).unwrap();
        assert_lines_in_order(
            &document.text,
            &[
                "增值税电子普通发票",
                "销售方：上海测试贸易有限公司",
                "税额：130.00",
                "Invoice date 2024-03-15",
            ],
        );
    }
}

#[test]
fn truetype_subset() {
    let document = extract_fixture("truetype-latin.pdf").unwrap();
    assert_eq!(document.title.as_deref(), Some("TrueType subset"));
    assert_lines_in_order(
        &document.text,
        &[
            "Quarterly report for PocketPilot",
            "Revenue grew by 12.5% to 4,200 EUR.",
            "The quick brown fox jumps over the lazy dog.",
        ],
    );
}

#[test]
fn labels_drawn_first_are_read_beside_their_values() {
    let document = extract_fixture("layout-labels-first.pdf").unwrap();
    // Label and value on one line; the gap between them is free.
    let rows: Vec<String> = document
        .text
        .lines()
        .map(|line| words(line).concat())
        .collect();
    assert_eq!(
        rows,
        [
            "发票号码：24112000000087654321",
            "开票日期：2024年03月15日",
            "购买方：北京示例科技有限公司",
            "销售方：上海测试贸易有限公司",
            "金额：1000.00",
            "税额：130.00",
            "价税合计：1130.00",
        ],
        "{}",
        document.text
    );
}

#[test]
fn the_layout_functions_give_the_same_rows() {
    let pages = pp_docs::extract::pdf_pages(&read("layout-labels-first.pdf"), Some(&[1])).unwrap();
    let lines = pp_docs::layout::lines(&pages[0]);
    assert_eq!(lines.len(), 7);
    let last: Vec<&str> = lines[6].spans.iter().map(|span| span.text.trim()).collect();
    assert_eq!(last.concat(), "价税合计：1130.00");
    assert!(lines.windows(2).all(|pair| pair[0].y < pair[1].y));
}

#[test]
fn an_encrypted_pdf_is_refused() {
    assert_eq!(
        extract_fixture("encrypted.pdf").unwrap_err(),
        DocsError::Encrypted
    );
}

#[test]
fn a_pdf_without_text_says_so() {
    let document = extract_fixture("no-text-layer.pdf").unwrap();
    assert_eq!(
        document.text,
        "[page 1 has no text layer (scanned?); PocketPilot does no OCR]"
    );
}

#[test]
fn the_200_page_pdf_reads_its_first_and_last_lines_and_pages_select() {
    let document = extract_fixture("bench-200-pages.pdf").unwrap();
    assert_eq!(document.pages, 200);
    assert_lines_in_order(
        &document.text,
        &[
            "--- page 1 ---",
            "第1页第1行 PocketPilot 文档提取基准 benchmark line 1 金额 48.00 元",
            "第1页第2行 PocketPilot 文档提取基准 benchmark line 2 金额 59.00 元",
            "--- page 200 ---",
            "第200页第40行 PocketPilot 文档提取基准 benchmark line 40 金额 7840.00 元",
        ],
    );
    let part = extract(
        &read("bench-200-pages.pdf"),
        Format::Pdf,
        &ExtractOptions {
            pages: Some("3-4,9".to_owned()),
            max_chars: 1_000_000,
        },
    )
    .unwrap();
    let markers: Vec<&str> = part
        .text
        .lines()
        .filter(|line| line.starts_with("---"))
        .collect();
    assert_eq!(
        markers,
        ["--- page 3 ---", "--- page 4 ---", "--- page 9 ---"]
    );
    assert!(part.text.contains("第9页第40行"), "{}", part.text);
}

#[test]
fn docx_with_header_table_and_footer() {
    let document = extract_fixture("report.docx").unwrap();
    assert_eq!(document.title.as_deref(), Some("采购报告 Purchase report"));
    for needle in ["ACME 内部文件", "第 1 页"] {
        assert!(
            document.text.contains(needle),
            "{needle}: {}",
            document.text
        );
    }
    assert_lines_in_order(
        &document.text,
        &[
            "采购报告 Purchase report",
            "本季度共采购设备两类。This quarter we bought two kinds of devices.",
            "项目 数量 金额",
            "Laptop 笔记本电脑 2 9800.00",
            "Monitor 显示器 3 3600.00",
            "合计：13400.00",
        ],
    );
}

#[test]
fn xlsx_sheets_are_pages_with_dates_and_cached_formula_values() {
    let document = extract_fixture("sales.xlsx").unwrap();
    assert_eq!(document.pages, 2);
    let text = &document.text;
    assert!(text.contains("--- sheet 1: Sales ---"), "{text}");
    assert!(text.contains("--- sheet 2: 备注 Notes ---"), "{text}");
    assert!(
        text.contains("2024-01-15") && !text.contains("45306"),
        "{text}"
    );
    assert_lines_in_order(
        text,
        &[
            "Date Item Quantity Price Total",
            "2024-01-15 Laptop 笔记本 2 4900 9800",
            "2024-03-10 Mouse 鼠标 5 80 400",
            "Sum 13800",
        ],
    );
    assert!(text.contains("审核人：张三"), "{text}");
    assert!(
        text.contains(
            "[formula cells without a cached value (shown empty; not computed): E6 =AVERAGE(E2:E4)]"
        ),
        "{text}"
    );
    let second = extract(
        &read("sales.xlsx"),
        Format::Xlsx,
        &ExtractOptions {
            pages: Some("2".to_owned()),
            max_chars: 10_000,
        },
    )
    .unwrap();
    assert!(!second.text.contains("Laptop") && second.text.contains("含税价格"));
}

#[test]
fn pptx_slides_are_pages_with_their_notes() {
    let document = extract_fixture("slides.pptx").unwrap();
    assert_eq!(document.pages, 2);
    let text = &document.text;
    let order = [
        "季度回顾 Quarterly review",
        "收入增长 12% Revenue up 12%",
        "讲者备注：先感谢团队。Thank the team first.",
        "下一步 Next steps",
        "扩展到上海 Expand to Shanghai",
        "mention the hiring plan 招聘计划.",
    ];
    let mut from = 0;
    for needle in order {
        let at = text[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"));
        from += at + needle.len();
    }
}

#[test]
fn gbk_text_and_csv_are_decoded() {
    let document = extract_fixture("notes-gbk.txt").unwrap();
    let encoding = document.encoding.unwrap();
    assert!(encoding == "GBK" || encoding == "gb18030", "{encoding}");
    assert!(
        document
            .text
            .starts_with("关于二〇二四年第一季度采购工作的说明\n")
    );
    assert!(document.text.contains("联系人：张三，电话：010-12345678。"));
    let csv = extract_fixture("customers-gbk.csv").unwrap();
    assert!(csv.encoding.is_some_and(|e| e == "GBK" || e == "gb18030"));
    assert!(
        csv.text
            .starts_with("日期,客户,城市,金额\n2024-01-15,北京示例科技有限公司,北京,9800.00")
    );
}

#[test]
fn html_without_scripts_and_styles() {
    let document = extract_fixture("page.html").unwrap();
    assert_eq!(document.title.as_deref(), Some("产品介绍 Product page"));
    assert_lines_in_order(
        &document.text,
        &[
            "PocketPilot 本地智能助手",
            "A local-first AI agent. 数据不出本机。",
            "读取文档 Read documents",
            "分析表格 Analyze tables",
        ],
    );
    for banned in [
        "SCRIPT-TEXT-MUST-NOT-APPEAR",
        "ANOTHER-SCRIPT-MUST-NOT-APPEAR",
        "font-family",
        "console.log",
    ] {
        assert!(
            !document.text.contains(banned),
            "{banned}: {}",
            document.text
        );
    }
}

#[test]
fn markdown_and_json_come_back_as_is() {
    let markdown = extract_fixture("notes.md").unwrap();
    assert_eq!(markdown.text, String::from_utf8(read("notes.md")).unwrap());
    assert_eq!(markdown.title.as_deref(), Some("项目说明 Project notes"));
    let json = extract_fixture("data.json").unwrap();
    let value: serde_json::Value = serde_json::from_str(&json.text).unwrap();
    assert_eq!(value["invoice"]["number"], "24112000000012345678");
}
