//! OFD invoices: a zip of XML (`OFD.xml` → `Doc_0/Document.xml` → pages' `Content.xml`
//! with positioned `TextObject`s). The e-invoice XML embedded in many of them (as an
//! attachment or custom tag file) is read when present (exact); otherwise the pages'
//! text is laid out and read by the label matcher, like a PDF's.

use std::io::{Cursor, Read};

use super::xml::{Node, is_einvoice, parse_tree, record_of, render as render_xml};
use super::{InvoiceDraft, Source, pdf};
use crate::DocsError;
use crate::layout::{LayoutSpan, PageLayout};

/// The most entries a container may have.
const MAX_ENTRIES: usize = 2_000;
/// The most bytes read of one entry (a zip bomb stops here).
const MAX_ENTRY_BYTES: u64 = 8 << 20;
/// The most bytes read over all entries.
const MAX_TOTAL_BYTES: u64 = 64 << 20;
/// The most pages read.
const MAX_PAGES: usize = 10;
/// Points per millimetre (OFD measures in mm).
const PT_PER_MM: f32 = 72.0 / 25.4;

struct Container {
    archive: zip::ZipArchive<Cursor<Vec<u8>>>,
    read_total: u64,
}

impl Container {
    fn open(bytes: &[u8]) -> Result<Self, DocsError> {
        let archive = zip::ZipArchive::new(Cursor::new(bytes.to_vec()))
            .map_err(|error| DocsError::Malformed(format!("OFD is not a readable zip: {error}")))?;
        if archive.len() > MAX_ENTRIES {
            return Err(DocsError::Malformed(format!(
                "OFD with {} entries (more than {MAX_ENTRIES})",
                archive.len()
            )));
        }
        Ok(Self {
            archive,
            read_total: 0,
        })
    }

    fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(Result::ok)
            .map(|name| name.into_owned())
            .collect()
    }

    /// An entry's bytes, capped (a zip bomb is an error, not an exhausted memory).
    fn read(&mut self, name: &str) -> Result<Vec<u8>, DocsError> {
        let name = name.trim_start_matches('/');
        let entry = self
            .archive
            .by_name(name)
            .map_err(|error| DocsError::Malformed(format!("OFD entry `{name}`: {error}")))?;
        let mut bytes = Vec::new();
        entry
            .take(MAX_ENTRY_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| DocsError::Malformed(format!("OFD entry `{name}`: {error}")))?;
        self.read_total += bytes.len() as u64;
        if bytes.len() as u64 > MAX_ENTRY_BYTES || self.read_total > MAX_TOTAL_BYTES {
            return Err(DocsError::Limit(format!(
                "OFD entry `{name}` unpacks to more than {MAX_ENTRY_BYTES} bytes (a zip bomb?)"
            )));
        }
        Ok(bytes)
    }

    fn tree(&mut self, name: &str) -> Result<Node, DocsError> {
        let bytes = self.read(name)?;
        parse_tree(&bytes)
    }
}

/// `base`'s directory joined with `location` (an absolute location starts at the root).
fn join(base: &str, location: &str) -> String {
    if let Some(absolute) = location.strip_prefix('/') {
        return absolute.to_owned();
    }
    match base.rsplit_once('/') {
        Some((directory, _)) => format!("{directory}/{location}"),
        None => location.to_owned(),
    }
}

fn numbers(text: &str) -> Vec<f32> {
    text.split_whitespace()
        .filter_map(|part| part.parse::<f32>().ok())
        .collect()
}

/// The spans of the `TextObject`s of a content tree.
fn spans_of(content: &Node, spans: &mut Vec<LayoutSpan>) {
    let mut objects = Vec::new();
    content.find_all("TextObject", &mut objects);
    for object in objects {
        let boundary = numbers(object.attribute("Boundary").unwrap_or_default());
        let (bx, by) = (
            boundary.first().copied().unwrap_or(0.0),
            boundary.get(1).copied().unwrap_or(0.0),
        );
        let size = object
            .attribute("Size")
            .and_then(|size| size.trim().parse::<f32>().ok())
            .unwrap_or(3.5)
            * PT_PER_MM;
        let mut codes = Vec::new();
        object.find_all("TextCode", &mut codes);
        for code in codes {
            let text = code.text.trim();
            if text.is_empty() {
                continue;
            }
            let attribute = |name: &str| {
                code.attribute(name)
                    .and_then(|value| value.trim().parse::<f32>().ok())
                    .unwrap_or(0.0)
            };
            let x = (bx + attribute("X")) * PT_PER_MM;
            let baseline = (by + attribute("Y")) * PT_PER_MM;
            let width: f32 = text
                .chars()
                .map(|c| if (c as u32) < 0x1100 { 0.55 } else { 1.0 })
                .sum::<f32>()
                * size;
            spans.push(LayoutSpan {
                x,
                y: baseline - size,
                width,
                height: size,
                text: text.to_owned(),
            });
        }
    }
}

/// The pages' positioned text (templates drawn under every page included).
fn pages(container: &mut Container) -> Result<Vec<PageLayout>, DocsError> {
    let root = container.tree("OFD.xml")?;
    let document_path = root
        .text_of(&["DocRoot"])
        .ok_or_else(|| DocsError::Malformed("OFD.xml names no DocRoot".to_owned()))?;
    let document_path = document_path.trim_start_matches('/').to_owned();
    let document = container.tree(&document_path)?;
    let box_numbers = document
        .text_of(&["PhysicalBox"])
        .map(|text| numbers(&text))
        .unwrap_or_default();
    let (width, height) = (
        box_numbers.get(2).copied().unwrap_or(210.0) * PT_PER_MM,
        box_numbers.get(3).copied().unwrap_or(140.0) * PT_PER_MM,
    );
    let mut template_spans = Vec::new();
    let mut templates = Vec::new();
    document.find_all("TemplatePage", &mut templates);
    for template in templates.iter().take(MAX_PAGES) {
        if let Some(location) = template.attribute("BaseLoc") {
            let tree = container.tree(&join(&document_path, location))?;
            spans_of(&tree, &mut template_spans);
        }
    }
    let mut page_nodes = Vec::new();
    document.find_all("Page", &mut page_nodes);
    let mut pages = Vec::new();
    for (index, page) in page_nodes.iter().take(MAX_PAGES).enumerate() {
        let Some(location) = page.attribute("BaseLoc") else {
            continue;
        };
        let content = container.tree(&join(&document_path, location))?;
        let mut spans = template_spans.clone();
        spans_of(&content, &mut spans);
        pages.push(PageLayout {
            page: index + 1,
            width,
            height,
            spans,
        });
    }
    if pages.is_empty() {
        return Err(DocsError::Malformed(
            "the OFD document has no pages".to_owned(),
        ));
    }
    Ok(pages)
}

/// Reads an OFD invoice.
pub(crate) fn read(bytes: &[u8]) -> Result<InvoiceDraft, DocsError> {
    let mut container = Container::open(bytes)?;
    let layout = pages(&mut container);
    for name in container.names() {
        if !name.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        let Ok(bytes) = container.read(&name) else {
            continue;
        };
        if !String::from_utf8_lossy(&bytes).contains("EInvoice") {
            continue;
        }
        if let Ok(tree) = parse_tree(&bytes)
            && is_einvoice(&tree)
        {
            let layout_text = match &layout {
                Ok(pages) => crate::layout::render(pages),
                Err(_) => render_xml(&tree),
            };
            return Ok(InvoiceDraft {
                record: Box::new(record_of(&tree, Source::Ofd)),
                layout_text,
            });
        }
    }
    let pages = layout?;
    Ok(pdf::from_pages(&pages, Source::Ofd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, content) in entries {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(content.as_bytes()).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn positioned_text_objects_become_spans() {
        let bytes = zip(&[
            (
                "OFD.xml",
                "<ofd:OFD xmlns:ofd=\"http://www.ofdspec.org/2016\"><ofd:DocBody><ofd:DocRoot>Doc_0/Document.xml</ofd:DocRoot></ofd:DocBody></ofd:OFD>",
            ),
            (
                "Doc_0/Document.xml",
                "<ofd:Document xmlns:ofd=\"x\"><ofd:CommonData><ofd:PageArea><ofd:PhysicalBox>0 0 210 140</ofd:PhysicalBox></ofd:PageArea></ofd:CommonData><ofd:Pages><ofd:Page ID=\"1\" BaseLoc=\"Pages/Page_0/Content.xml\"/></ofd:Pages></ofd:Document>",
            ),
            (
                "Doc_0/Pages/Page_0/Content.xml",
                "<ofd:Page xmlns:ofd=\"x\"><ofd:Content><ofd:Layer><ofd:TextObject ID=\"2\" Boundary=\"140 10 60 5\" Size=\"3\"><ofd:TextCode X=\"0\" Y=\"3\">发票号码：</ofd:TextCode></ofd:TextObject><ofd:TextObject ID=\"3\" Boundary=\"158 10 40 5\" Size=\"3\"><ofd:TextCode X=\"0\" Y=\"3\">24442000000123456789</ofd:TextCode></ofd:TextObject></ofd:Layer></ofd:Content></ofd:Page>",
            ),
        ]);
        let draft = read(&bytes).unwrap();
        assert_eq!(draft.record.source, Source::Ofd);
        assert_eq!(draft.record.number.as_deref(), Some("24442000000123456789"));
        assert!(
            draft.layout_text.contains("发票号码"),
            "{}",
            draft.layout_text
        );
    }

    #[test]
    fn broken_containers_and_bombs_are_clear_errors() {
        assert!(matches!(
            read(b"PK\x03\x04junk"),
            Err(DocsError::Malformed(_))
        ));
        assert!(matches!(
            read(&zip(&[("a.txt", "x")])),
            Err(DocsError::Malformed(_))
        ));
        let big = "<a>".to_owned() + &" ".repeat(9 << 20) + "</a>";
        let bomb = zip(&[("OFD.xml", big.as_str())]);
        assert!(bomb.len() < 1 << 20, "the bomb compresses well");
        assert!(matches!(read(&bomb), Err(DocsError::Limit(_))));
    }
}
