//! Parsing one `SKILL.md`: YAML front matter between `---` lines, then a Markdown body.
//!
//! Only `name` and `description` are used. Every other field (`license`,
//! `allowed-tools`, `metadata`, `version`, …) is kept by name and ignored, so skills
//! written for other agents load unchanged; none of them changes what the gate allows.

use yaml_rust2::{Yaml, YamlLoader};

/// Longest front matter read (the YAML between the `---` lines). A larger one is refused
/// before the YAML parser sees it, which also bounds the parser's nesting depth.
pub const MAX_FRONT_MATTER_BYTES: usize = 16 * 1024;

/// Longest `description` (the Agent Skills format's limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// A `SKILL.md` that parsed and passed every rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSkill {
    /// The skill's name (equal to its folder's name).
    pub name: String,
    /// What the skill is for, one paragraph; listed in the system prompt.
    pub description: String,
    /// The Markdown after the front matter.
    pub body: String,
    /// The names of the front matter's other fields, in order: kept, never acted on.
    pub other_fields: Vec<String>,
}

/// Whether `name` is a valid skill name: 1 to 64 characters of `a-z`, `0-9` and `-`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// Parses the text of `SKILL.md` found in the folder `folder`; the error is the reason
/// the skill is invalid, in words for the operator.
pub fn parse_skill_md(
    text: &str,
    folder: &str,
    max_body_bytes: u64,
) -> Result<ParsedSkill, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text)?;
    if front.len() > MAX_FRONT_MATTER_BYTES {
        return Err(format!(
            "the front matter is longer than {MAX_FRONT_MATTER_BYTES} bytes"
        ));
    }
    let documents = YamlLoader::load_from_str(front)
        .map_err(|error| format!("the front matter is not valid YAML: {error}"))?;
    let fields = match documents.as_slice() {
        [Yaml::Hash(fields)] => fields,
        [] => return Err("the front matter is empty; it needs `name` and `description`".into()),
        [_] => return Err("the front matter is not a YAML mapping of fields".into()),
        _ => return Err("the front matter holds more than one YAML document".into()),
    };
    let mut name = None;
    let mut description = None;
    let mut other_fields = Vec::new();
    for (key, value) in fields {
        let Some(key) = key.as_str() else {
            return Err("a front matter field name is not a string".into());
        };
        match key {
            "name" => name = Some(text_field("name", value)?),
            "description" => description = Some(text_field("description", value)?),
            other => other_fields.push(other.to_owned()),
        }
    }
    let name = name.ok_or("the front matter has no `name`")?;
    let description = description.ok_or("the front matter has no `description`")?;
    if !valid_name(&name) {
        return Err(format!(
            "name `{}` is not 1 to 64 characters of a-z, 0-9 and -",
            name.escape_debug()
        ));
    }
    if name != folder {
        return Err(format!(
            "name `{name}` does not match its folder `{}`",
            folder.escape_debug()
        ));
    }
    let description = description.trim().to_owned();
    if description.is_empty() {
        return Err("the `description` is empty".into());
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the `description` is longer than {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    if body.len() as u64 > max_body_bytes {
        return Err(format!(
            "the body is {} bytes, over the limit of {max_body_bytes} (`[skills] max_body_bytes`)",
            body.len()
        ));
    }
    Ok(ParsedSkill {
        name,
        description,
        body: body.to_owned(),
        other_fields,
    })
}

/// The text of a string field (a number or boolean is refused: YAML would turn
/// `name: 2024` into an integer).
fn text_field(field: &str, value: &Yaml) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("`{field}` is not a string"))
}

/// Splits `---\n<yaml>\n---\n<body>` into the YAML and the body.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err("no front matter: SKILL.md must start with a `---` line".into());
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        if line.trim_end_matches(['\r', '\n', ' ', '\t']) == "---" {
            let front = &text[start..offset];
            let body = &text[offset + line.len()..];
            return Ok((front, body));
        }
        offset += line.len();
    }
    Err("the front matter is not closed by a `---` line".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const LIMIT: u64 = 64 * 1024;

    #[test]
    fn a_minimal_skill_parses() {
        let text = "---\nname: tidy\ndescription: Tidy a folder.\n---\n# Tidy\nSteps.\n";
        assert_eq!(
            parse_skill_md(text, "tidy", LIMIT),
            Ok(ParsedSkill {
                name: "tidy".into(),
                description: "Tidy a folder.".into(),
                body: "# Tidy\nSteps.\n".into(),
                other_fields: vec![],
            })
        );
    }

    #[test]
    fn unknown_fields_are_kept_by_name_and_ignored() {
        let text = "---\r\nname: pdf\r\ndescription: >\r\n  Work with PDF\r\n  files.\r\n\
                    license: Apache-2.0\r\nallowed-tools: [Bash, Write]\r\nmetadata:\r\n  \
                    openclaw: {emoji: x, requires: {bins: [pdftotext]}}\r\n---\r\nBody\r\n";
        let skill = parse_skill_md(text, "pdf", LIMIT).unwrap();
        assert_eq!(skill.description, "Work with PDF files.");
        assert_eq!(
            skill.other_fields,
            vec!["license", "allowed-tools", "metadata"]
        );
        assert_eq!(skill.body, "Body\r\n");
    }

    #[test]
    fn a_byte_order_mark_and_an_empty_body_are_fine() {
        let text = "\u{feff}---\nname: a\ndescription: b\n---";
        assert_eq!(parse_skill_md(text, "a", LIMIT).unwrap().body, "");
    }

    fn reason(text: &str, folder: &str) -> String {
        parse_skill_md(text, folder, LIMIT).unwrap_err()
    }

    #[test]
    fn invalid_skills_say_why() {
        assert_eq!(
            reason("# Just markdown\n", "a"),
            "no front matter: SKILL.md must start with a `---` line"
        );
        assert_eq!(
            reason("---\nname: a\n", "a"),
            "the front matter is not closed by a `---` line"
        );
        assert!(
            reason("---\nname: [a\n---\n", "a").starts_with("the front matter is not valid YAML")
        );
        assert_eq!(
            reason("---\n---\nbody", "a"),
            "the front matter is empty; it needs `name` and `description`"
        );
        assert_eq!(
            reason("---\n- a\n---\n", "a"),
            "the front matter is not a YAML mapping of fields"
        );
        assert_eq!(
            reason("---\ndescription: d\n---\n", "a"),
            "the front matter has no `name`"
        );
        assert_eq!(
            reason("---\nname: a\n---\n", "a"),
            "the front matter has no `description`"
        );
        assert_eq!(
            reason("---\nname: 2024\ndescription: d\n---\n", "2024"),
            "`name` is not a string"
        );
        assert_eq!(
            reason("---\nname: My_Skill\ndescription: d\n---\n", "My_Skill"),
            "name `My_Skill` is not 1 to 64 characters of a-z, 0-9 and -"
        );
        assert_eq!(
            reason("---\nname: other\ndescription: d\n---\n", "mine"),
            "name `other` does not match its folder `mine`"
        );
        assert_eq!(
            reason("---\nname: a\ndescription: '  '\n---\n", "a"),
            "the `description` is empty"
        );
    }

    #[test]
    fn a_body_over_the_limit_is_invalid() {
        let text = format!("---\nname: a\ndescription: d\n---\n{}", "x".repeat(11));
        assert_eq!(
            parse_skill_md(&text, "a", 10).unwrap_err(),
            "the body is 11 bytes, over the limit of 10 (`[skills] max_body_bytes`)"
        );
        assert!(parse_skill_md(&text, "a", 11).is_ok());
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        let deep = format!("---\nx: {}\n---\n", "[".repeat(20_000));
        assert_eq!(
            reason(&deep, "a"),
            format!("the front matter is longer than {MAX_FRONT_MATTER_BYTES} bytes")
        );
        let nested = format!("---\nx: {}{}\n---\n", "[".repeat(8000), "]".repeat(8000));
        // Within the size cap: parsed or refused, never a crash.
        let _ = parse_skill_md(&nested, "a", LIMIT);
    }

    #[test]
    fn names() {
        assert!(valid_name("a"));
        assert!(valid_name("pdf-tools-2"));
        assert!(valid_name(&"a".repeat(64)));
        assert!(!valid_name(&"a".repeat(65)));
        assert!(!valid_name(""));
        assert!(!valid_name("../x"));
        assert!(!valid_name("A"));
        assert!(!valid_name("a b"));
    }
}
