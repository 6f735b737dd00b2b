//! The fully digital e-invoice's XML data file (and a small capped XML tree reader that
//! the OFD reader shares).
//!
//! The layout modelled on the official 数电票 file:
//! `EInvoice/{Header, EInvoiceData/{SellerInformation, BuyerInformation,
//! BasicInformation, IssuItemInformation*, AdditionalInformation}, TaxSupervisionInfo}`.

use super::{
    InvoiceDraft, InvoiceItem, InvoiceKind, InvoiceRecord, Money, Source, clean, kind_from_number,
    normalize_decimal, normalize_rate, parse_date, set_confidence,
};
use crate::DocsError;

/// Deepest element nesting read (a hostile file nests deeper to overflow the stack).
const MAX_DEPTH: usize = 64;
/// Most elements read.
const MAX_NODES: usize = 200_000;

/// An XML element: local name, attributes, direct text and children.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) text: String,
    pub(crate) children: Vec<Node>,
}

impl Node {
    /// The first element named `name` here or below (depth first).
    pub(crate) fn find(&self, name: &str) -> Option<&Node> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|child| child.find(name))
    }

    /// Every element named `name` here or below, in document order.
    pub(crate) fn find_all<'a>(&'a self, name: &str, out: &mut Vec<&'a Node>) {
        if self.name == name {
            out.push(self);
        }
        for child in &self.children {
            child.find_all(name, out);
        }
    }

    /// The trimmed text of the first element of any of `names`, when not empty.
    pub(crate) fn text_of(&self, names: &[&str]) -> Option<String> {
        names
            .iter()
            .find_map(|name| self.find(name).and_then(|node| clean(&node.text)))
    }

    /// An attribute's value.
    pub(crate) fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn render(&self, depth: usize, out: &mut String) {
        let text = self.text.trim();
        if !text.is_empty() {
            out.push_str(&"  ".repeat(depth));
            out.push_str(&self.name);
            out.push_str(": ");
            out.push_str(text);
            out.push('\n');
        } else if !self.children.is_empty() {
            out.push_str(&"  ".repeat(depth));
            out.push_str(&self.name);
            out.push('\n');
        }
        for child in &self.children {
            child.render(depth + 1, out);
        }
    }
}

/// Decodes XML bytes: UTF-8 (a BOM is dropped), else GB18030.
pub(crate) fn decode(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => encoding_rs::GB18030.decode(bytes).0.into_owned(),
    }
}

/// Parses XML into a tree of elements, refusing depth over 64 and more than 200,000
/// elements.
pub(crate) fn parse_tree(bytes: &[u8]) -> Result<Node, DocsError> {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    let text = decode(bytes);
    let mut reader = Reader::from_str(&text);
    let mut stack: Vec<Node> = vec![Node::default()];
    let mut nodes = 0usize;
    let malformed = |error: &dyn std::fmt::Display| DocsError::Malformed(format!("XML: {error}"));
    loop {
        let event = reader.read_event().map_err(|error| malformed(&error))?;
        match event {
            Event::Start(start) => {
                nodes += 1;
                if stack.len() > MAX_DEPTH || nodes > MAX_NODES {
                    return Err(DocsError::Malformed(format!(
                        "XML nested deeper than {MAX_DEPTH} levels or with more than \
                         {MAX_NODES} elements"
                    )));
                }
                stack.push(element(&start));
            }
            Event::Empty(start) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(DocsError::Malformed(format!(
                        "XML with more than {MAX_NODES} elements"
                    )));
                }
                let node = element(&start);
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(node);
                }
            }
            Event::End(_) => {
                let Some(node) = stack.pop() else {
                    return Err(malformed(&"unbalanced end tag"));
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => return Err(malformed(&"unbalanced end tag")),
                }
            }
            Event::Text(content) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&content.xml10_content());
                }
            }
            Event::CData(content) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&content.xml10_content());
                }
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(character)) => Some(character),
                    Ok(None) => match reference.as_ref() {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                    Err(_) => None,
                };
                if let (Some(character), Some(node)) = (resolved, stack.last_mut()) {
                    node.text.push(character);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut root = stack
        .pop()
        .filter(|_| stack.is_empty())
        .ok_or_else(|| malformed(&"an element is not closed"))?;
    match root.children.len() {
        1 => Ok(root.children.remove(0)),
        _ => Err(malformed(&"expected exactly one root element")),
    }
}

fn element(start: &quick_xml::events::BytesStart<'_>) -> Node {
    let attributes = start
        .attributes()
        .flatten()
        .map(|attribute| {
            let value = attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map(|value| value.into_owned())
                .unwrap_or_else(|_| attribute.value.to_string());
            (attribute.key.local_name().as_ref().to_owned(), value)
        })
        .collect();
    Node {
        name: start.local_name().as_ref().to_owned(),
        attributes,
        ..Node::default()
    }
}

/// Whether the tree is an e-invoice data file.
pub(crate) fn is_einvoice(root: &Node) -> bool {
    root.name == "EInvoice"
}

/// The record of an `EInvoice` tree.
pub(crate) fn record_of(root: &Node, source: Source) -> InvoiceRecord {
    let money = |names: &[&str]| root.text_of(names).and_then(|text| Money::parse(&text));
    let number = root.text_of(&["InvoiceNumber", "EIid"]);
    let code = root.text_of(&["InvoiceCode"]);
    let mut items = Vec::new();
    let mut nodes = Vec::new();
    root.find_all("IssuItemInformation", &mut nodes);
    for node in nodes {
        let field = |names: &[&str]| node.text_of(names);
        items.push(InvoiceItem {
            name: field(&["ItemName"]).unwrap_or_default(),
            spec: field(&["SpecMod"]),
            unit: field(&["MeaUnits"]),
            quantity: field(&["Quantity"]).and_then(|value| normalize_decimal(&value)),
            unit_price: field(&["UnPrice"]).and_then(|value| normalize_decimal(&value)),
            amount: field(&["Amount"]).and_then(|value| Money::parse(&value)),
            tax_rate: field(&["TaxRate"]).and_then(|value| normalize_rate(&value)),
            tax: field(&["ComTaxAm"]).and_then(|value| Money::parse(&value)),
        });
    }
    let kind = match root.find("Header") {
        Some(_) if code.is_none() => InvoiceKind::FullyDigital,
        _ => kind_from_number(number.as_deref(), code.as_deref()),
    };
    let mut record = InvoiceRecord {
        kind,
        number,
        code,
        issue_date: root
            .text_of(&["IssueTime", "RequestTime", "IssueDate"])
            .and_then(|date| parse_date(&date)),
        buyer_name: root.text_of(&["BuyerName"]),
        buyer_tax_id: root.text_of(&["BuyerIdNum"]),
        seller_name: root.text_of(&["SellerName"]),
        seller_tax_id: root.text_of(&["SellerIdNum"]),
        items,
        amount: money(&["TotalAmWithoutTax"]),
        tax: money(&["TotalTaxAm"]),
        total: money(&["TotalTax-includedAmount", "TotalTaxIncludedAmount"]),
        total_in_words: root.text_of(&[
            "TotalTax-includedAmountInChinese",
            "TotalTaxIncludedAmountInChinese",
        ]),
        remarks: root.text_of(&["Remark"]),
        source,
        ..InvoiceRecord::default()
    };
    set_confidence(&mut record, 1.0);
    record
}

/// The tree as indented `name: text` lines.
pub(crate) fn render(root: &Node) -> String {
    let mut out = String::new();
    root.render(0, &mut out);
    out
}

/// Reads an e-invoice XML file.
pub(crate) fn read(bytes: &[u8]) -> Result<InvoiceDraft, DocsError> {
    let root = parse_tree(bytes)?;
    if !is_einvoice(&root) {
        return Err(DocsError::Unsupported(format!(
            "an XML file whose root is <{}>, not an e-invoice (<EInvoice>)",
            root.name
        )));
    }
    Ok(InvoiceDraft {
        record: Box::new(record_of(&root, Source::Xml)),
        layout_text: render(&root),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_refused_without_overflowing() {
        let deep = format!("{}{}", "<a>".repeat(100_000), "</a>".repeat(100_000));
        let error = parse_tree(deep.as_bytes()).unwrap_err();
        assert!(error.to_string().contains("deeper than 64"), "{error}");
    }

    #[test]
    fn junk_and_other_xml_are_clear_errors() {
        assert!(matches!(
            read(b"<EInvoice><a></EInvoice>"),
            Err(DocsError::Malformed(_))
        ));
        assert!(matches!(read(b"<html/>"), Err(DocsError::Unsupported(_))));
        assert!(read(b"\x00\x01junk").is_err());
    }

    #[test]
    fn entities_and_attributes_are_read() {
        let root = parse_tree("<r a=\"x&amp;y\"><b>A&amp;B&#x4E2D;</b></r>".as_bytes()).unwrap();
        assert_eq!(root.attribute("a"), Some("x&y"));
        assert_eq!(root.text_of(&["b"]).as_deref(), Some("A&B中"));
    }
}
