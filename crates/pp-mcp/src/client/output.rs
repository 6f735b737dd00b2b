//! What a server sends, turned into the seam's plain values: a listed tool, and a call's
//! result as one capped text (text parts joined, other parts described, structured
//! content as JSON when there is no text).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use crate::backend::{CallOutput, ListedTool, ToolAnnotations};

/// A tool from `tools/list`, as the seam carries it.
pub(crate) fn listed_tool(tool: Tool) -> ListedTool {
    ListedTool {
        name: tool.name.into_owned(),
        description: tool.description.map(std::borrow::Cow::into_owned),
        input_schema: Value::Object((*tool.input_schema).clone()),
        annotations: tool.annotations.map(|hints| ToolAnnotations {
            read_only: hints.read_only_hint,
            destructive: hints.destructive_hint,
            idempotent: hints.idempotent_hint,
            open_world: hints.open_world_hint,
        }),
    }
}

/// A `tools/call` result as at most `max_bytes` of text (plus the truncation marker).
pub(crate) fn call_output(result: CallToolResult, max_bytes: usize) -> CallOutput {
    let parts: Vec<String> = result.content.into_iter().map(describe).collect();
    let mut text = parts.join("\n");
    if text.is_empty()
        && let Some(structured) = result.structured_content
    {
        text = structured.to_string();
    }
    CallOutput {
        text: cap(text, max_bytes),
        is_error: result.is_error.unwrap_or(false),
    }
}

/// One content part as text: text as is, anything else described in one line.
fn describe(block: ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text,
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                decoded_len(&blob)
            ),
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        _ => "[content of an unknown kind]".to_owned(),
    }
}

/// The size of base64 `data` once decoded.
fn decoded_len(data: &str) -> usize {
    let digits = data
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace() && *byte != b'=')
        .count();
    digits * 3 / 4
}

/// `text` cut to at most `max_bytes` on a character boundary, with a marker saying how
/// much there was.
pub(crate) fn cap(mut text: String, max_bytes: usize) -> String {
    let total = text.len();
    if total <= max_bytes {
        return text;
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n[… output cut at {cut} bytes of {total}]"));
    text
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    #[test]
    fn short_text_is_left_alone() {
        assert_eq!(cap("hello".to_owned(), 5), "hello");
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary_with_a_marker() {
        // "é" is two bytes: a cut at 3 would split the second one.
        let text = cap("éééé".to_owned(), 3);
        assert_eq!(text, "é\n[… output cut at 2 bytes of 8]");
    }

    #[test]
    fn parts_are_joined_and_non_text_described() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("one"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::embedded_text("file:///a.txt", "inside"),
        ]);
        let output = call_output(result, 1000);
        assert_eq!(
            output.text,
            "one\n[image: image/png, 5 bytes]\n[resource: file:///a.txt]\ninside"
        );
        assert!(!output.is_error);
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let mut result = CallToolResult::structured(json!({"sum": 3}));
        result.content.clear();
        let output = call_output(result, 1000);
        assert_eq!(output.text, r#"{"sum":3}"#);
    }

    #[test]
    fn an_error_result_is_marked() {
        let output = call_output(CallToolResult::error(vec![ContentBlock::text("no")]), 10);
        assert!(output.is_error);
        assert_eq!(output.text, "no");
    }
}
