//! A small glob matcher for `list_files`' `pattern`.
//!
//! Syntax: `*` matches any run of characters within one path segment, `**` any run
//! across segments (and `**/` also matches nothing, so `src/**/*.rs` matches
//! `src/main.rs`), `?` one character other than `/`, `[abc]`, `[a-z]` and the negations
//! `[!abc]` / `[^abc]` one character from (or not from) a set. Everything else, including
//! an unclosed `[`, matches itself.
//!
//! Matching is a dynamic program over pattern tokens × text characters, so its cost is
//! bounded by their product whatever the pattern: a model-written `*a*a*a*a*b` cannot
//! make it backtrack exponentially.

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// One exact character.
    Literal(char),
    /// `?`: one character other than `/`.
    AnyChar,
    /// `*`: any run of characters other than `/`.
    Star,
    /// `**` not followed by `/`: any run of characters.
    GlobStar,
    /// `**/`: nothing, or any run of characters ending in `/`.
    GlobStarSlash,
    /// `[...]`: one character other than `/` in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Compiles `pattern`; every string is a valid pattern.
    pub(crate) fn new(pattern: &str) -> Self {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut index = 0;
        while let Some(&current) = chars.get(index) {
            index += 1;
            match current {
                '?' => tokens.push(Token::AnyChar),
                '*' if chars.get(index) == Some(&'*') => {
                    index += 1;
                    // Further stars add nothing.
                    while chars.get(index) == Some(&'*') {
                        index += 1;
                    }
                    if chars.get(index) == Some(&'/') {
                        index += 1;
                        tokens.push(Token::GlobStarSlash);
                    } else {
                        tokens.push(Token::GlobStar);
                    }
                }
                '*' => tokens.push(Token::Star),
                '[' => match parse_class(&chars[index..]) {
                    Some((token, used)) => {
                        tokens.push(token);
                        index += used;
                    }
                    None => tokens.push(Token::Literal('[')),
                },
                other => tokens.push(Token::Literal(other)),
            }
        }
        Self { tokens }
    }

    /// What matching a text of `chars` characters costs: the cells of the dynamic
    /// program, counting a character class once per range it holds.
    pub(crate) fn cost(&self, chars: usize) -> u64 {
        let weight: usize = self
            .tokens
            .iter()
            .map(|token| match token {
                Token::Class { ranges, .. } => 1 + ranges.len(),
                _ => 1,
            })
            .sum();
        u64::try_from(weight.saturating_mul(chars.saturating_add(1))).unwrap_or(u64::MAX)
    }

    /// Whether the whole of `text` matches the pattern.
    pub(crate) fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let len = text.len();
        // `next[j]`: do tokens[i + 1..] match text[j..]; `row[j]`: do tokens[i..].
        let mut next = vec![false; len + 1];
        next[len] = true;
        let mut row = vec![false; len + 1];
        for token in self.tokens.iter().rev() {
            // Filled from the end so `row[j + 1]` is ready when `row[j]` needs it.
            let mut slash_ahead = false; // for `**/`: some k >= j with text[k] == '/' && next[k + 1]
            for j in (0..=len).rev() {
                let here = text.get(j).copied();
                let step = |accept: bool| accept && next[j + 1];
                row[j] = match (token, here) {
                    (Token::Literal(expected), Some(actual)) => step(*expected == actual),
                    (Token::AnyChar, Some(actual)) => step(actual != '/'),
                    (Token::Class { negated, ranges }, Some(actual)) => {
                        let inside = ranges
                            .iter()
                            .any(|(low, high)| (*low..=*high).contains(&actual));
                        step(actual != '/' && inside != *negated)
                    }
                    (Token::Star, Some(actual)) => next[j] || (actual != '/' && row[j + 1]),
                    (Token::GlobStar, Some(_)) => next[j] || row[j + 1],
                    (Token::GlobStarSlash, Some(actual)) => {
                        slash_ahead = slash_ahead || (actual == '/' && next[j + 1]);
                        next[j] || slash_ahead
                    }
                    (Token::Star | Token::GlobStar | Token::GlobStarSlash, None) => next[j],
                    (Token::Literal(_) | Token::AnyChar | Token::Class { .. }, None) => false,
                };
            }
            std::mem::swap(&mut row, &mut next);
        }
        next[0]
    }
}

/// Parses a class body after `[`; returns the token and how many characters it used
/// (including the closing `]`), or `None` when there is no closing `]`.
fn parse_class(chars: &[char]) -> Option<(Token, usize)> {
    let mut index = 0;
    let negated = matches!(chars.first(), Some('!' | '^'));
    if negated {
        index += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let current = *chars.get(index)?;
        // A `]` right after `[` or `[!` is a member, as in shell globs.
        if current == ']' && !first {
            return Some((Token::Class { negated, ranges }, index + 1));
        }
        first = false;
        match (chars.get(index + 1), chars.get(index + 2)) {
            (Some('-'), Some(&high)) if high != ']' => {
                ranges.push((current, high));
                index += 3;
            }
            _ => {
                ranges.push((current, current));
                index += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_table() {
        let cases: &[(&str, &str, bool)] = &[
            // literals
            ("a.txt", "a.txt", true),
            ("a.txt", "b.txt", false),
            ("", "", true),
            ("", "a", false),
            // `*` stays inside a segment
            ("*.rs", "main.rs", true),
            ("*.rs", ".rs", true),
            ("*.rs", "src/main.rs", false),
            ("src/*.rs", "src/main.rs", true),
            ("src/*.rs", "src/a/main.rs", false),
            ("*", "", true),
            ("*", "a/b", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            // `**` crosses segments; `**/` may match nothing
            ("**", "a/b/c", true),
            ("**/*.rs", "main.rs", true),
            ("**/*.rs", "src/deep/main.rs", true),
            ("**/*.rs", "src/deep/main.txt", false),
            ("src/**/*.rs", "src/main.rs", true),
            ("src/**/*.rs", "src/a/b/main.rs", true),
            ("src/**/*.rs", "lib/main.rs", false),
            ("src/**", "src/a/b", true),
            ("a/**/b", "a/b", true),
            ("a/**/b", "a/x/y/b", true),
            ("a/**/b", "a/xb", false),
            ("a**b", "a/x/b", true),
            ("***/x", "a/x", true),
            // `?`
            ("?.md", "a.md", true),
            ("?.md", "ab.md", false),
            ("a?b", "a/b", false),
            // classes
            ("[abc].txt", "b.txt", true),
            ("[abc].txt", "d.txt", false),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("[!a-c]x", "dx", true),
            ("[^a-c]x", "ax", false),
            ("[]]", "]", true),
            ("[a-]", "-", true),
            ("x[/]y", "x/y", false),
            // an unclosed `[` is literal
            ("[abc", "[abc", true),
            ("[abc", "a", false),
            // unicode is one character
            ("caf?", "café", true),
            ("*é", "café", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(text),
                *expected,
                "pattern {pattern:?} against {text:?}"
            );
        }
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let pattern = "*a".repeat(30) + "b";
        let text = "a".repeat(2000);
        assert!(!Glob::new(&pattern).matches(&text));
    }
}
