//! Amounts in Chinese capital numerals (大写金额), as printed on invoices:
//! `壹仟壹佰叁拾圆整`, `壹佰圆零伍分`, `伍角`.

use super::Money;

const DIGITS: [char; 10] = ['零', '壹', '贰', '叁', '肆', '伍', '陆', '柒', '捌', '玖'];

/// The amount in capital numerals; `None` beyond 999,999,999,999.99 yuan.
pub fn to_words(money: Money) -> Option<String> {
    let cents = money.cents().unsigned_abs();
    let yuan = cents / 100;
    if yuan >= 1_000_000_000_000 {
        return None;
    }
    let (jiao, fen) = (cents / 10 % 10, cents % 10);
    let mut out = String::new();
    if money.cents() < 0 {
        out.push('负');
    }
    if yuan > 0 {
        out.push_str(&integer_words(yuan));
        out.push('圆');
    } else if cents == 0 {
        return Some("零圆整".to_owned());
    }
    match (jiao, fen) {
        (0, 0) => out.push('整'),
        (0, fen) => {
            if yuan > 0 {
                out.push('零');
            }
            out.push(digit(fen));
            out.push('分');
        }
        (jiao, 0) => {
            out.push(digit(jiao));
            out.push('角');
        }
        (jiao, fen) => {
            out.push(digit(jiao));
            out.push('角');
            out.push(digit(fen));
            out.push('分');
        }
    }
    Some(out)
}

fn digit(value: u64) -> char {
    DIGITS[usize::try_from(value % 10).unwrap_or(0)]
}

/// `n` > 0 below 10^12 in capital numerals.
fn integer_words(n: u64) -> String {
    let groups = [n % 10_000, n / 10_000 % 10_000, n / 100_000_000 % 10_000];
    let units = ["", "万", "亿"];
    let mut out = String::new();
    let mut zero_pending = false;
    for index in (0..3).rev() {
        let group = groups[index];
        if group == 0 {
            zero_pending = !out.is_empty();
            continue;
        }
        if !out.is_empty() && (zero_pending || group < 1000) {
            out.push('零');
        }
        zero_pending = false;
        out.push_str(&group_words(group));
        out.push_str(units[index]);
    }
    out
}

/// 1..=9999 in capital numerals, inner zeros as one `零`.
fn group_words(group: u64) -> String {
    let places = [(1000, '仟'), (100, '佰'), (10, '拾'), (1, ' ')];
    let mut out = String::new();
    let mut zero = false;
    for (place, unit) in places {
        let value = group / place % 10;
        if value == 0 {
            zero = !out.is_empty();
            continue;
        }
        if zero {
            out.push('零');
            zero = false;
        }
        out.push(digit(value));
        if unit != ' ' {
            out.push(unit);
        }
    }
    out
}

/// Reads capital numerals back into an amount; `None` when the text is not one.
/// Tolerates `人民币`, `⊗`, `ⓧ`, spaces, `元` for `圆`, `正` for `整`, small numerals
/// (`一二三`) and `负` for a negative amount.
pub fn parse_words(text: &str) -> Option<Money> {
    let mut cleaned: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '⊗' | 'ⓧ' | '(' | ')' | '（' | '）'))
        .collect();
    if let Some(rest) = cleaned.strip_prefix("人民币") {
        cleaned = rest.to_owned();
    }
    let (negative, body) = match cleaned.strip_prefix('负') {
        Some(rest) => (true, rest.to_owned()),
        None => (false, cleaned),
    };
    let body = body.replace('元', "圆").replace('正', "整");
    let body = body.strip_suffix('整').unwrap_or(&body);
    if body.is_empty() {
        return None;
    }
    let (integer, fraction) = match body.split_once('圆') {
        Some((integer, fraction)) => (integer, fraction),
        None if body.ends_with('角') || body.ends_with('分') => ("", body),
        None => return None,
    };
    let yuan = if integer.is_empty() {
        0
    } else {
        parse_integer(integer)?
    };
    let mut cents = 0i64;
    let mut pending: Option<i64> = None;
    for character in fraction.chars() {
        match (character, pending) {
            ('角', Some(value)) => {
                cents += value * 10;
                pending = None;
            }
            ('分', Some(value)) => {
                cents += value;
                pending = None;
            }
            (other, None) => match digit_value(other)? {
                0 => {}
                value => pending = Some(value),
            },
            _ => return None,
        }
    }
    if pending.is_some() {
        return None;
    }
    let value = yuan.checked_mul(100)?.checked_add(cents)?;
    Some(Money(if negative { -value } else { value }))
}

fn digit_value(character: char) -> Option<i64> {
    let small = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];
    DIGITS
        .iter()
        .position(|c| *c == character)
        .or_else(|| small.iter().position(|c| *c == character))
        .or((character == '〇').then_some(0))
        .and_then(|index| i64::try_from(index).ok())
}

fn parse_integer(text: &str) -> Option<i64> {
    let (mut result, mut section, mut number) = (0i64, 0i64, 0i64);
    let mut seen_digit = false;
    for character in text.chars() {
        let unit = match character {
            '拾' | '十' => 10,
            '佰' | '百' => 100,
            '仟' | '千' => 1000,
            '万' => {
                section += number;
                result += section.checked_mul(10_000)?;
                (section, number) = (0, 0);
                continue;
            }
            '亿' => {
                section += number;
                result = (result + section).checked_mul(100_000_000)?;
                (section, number) = (0, 0);
                continue;
            }
            other => {
                number = digit_value(other)?;
                seen_digit = true;
                continue;
            }
        };
        let count = if number == 0 && unit == 10 { 1 } else { number };
        section += count * unit;
        number = 0;
        seen_digit = true;
    }
    seen_digit.then_some(result + section + number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_written_the_way_invoices_print_them() {
        let cases = [
            (113_000, "壹仟壹佰叁拾圆整"),
            (100_005, "壹仟圆零伍分"),
            (10_050, "壹佰圆伍角"),
            (5, "伍分"),
            (0, "零圆整"),
            (100_100_000, "壹佰万壹仟圆整"),
            (100_010_000, "壹佰万零壹佰圆整"),
            (100_000_000_000, "壹拾亿圆整"),
            (100_500_000_000, "壹拾亿零伍佰万圆整"),
            (100_050_000_000, "壹拾亿零伍拾万圆整"),
            (105_000_000, "壹佰零伍万圆整"),
            (123_456_789, "壹佰贰拾叁万肆仟伍佰陆拾柒圆捌角玖分"),
            (1_000_001, "壹万圆零壹分"),
            (-200, "负贰圆整"),
        ];
        for (cents, words) in cases {
            assert_eq!(to_words(Money(cents)).as_deref(), Some(words), "{cents}");
            assert_eq!(parse_words(words), Some(Money(cents)), "{words}");
        }
    }

    #[test]
    fn variants_are_read_and_junk_is_not() {
        assert_eq!(parse_words("⊗ 壹仟元整"), Some(Money(100_000)));
        assert_eq!(parse_words("人民币拾圆正"), Some(Money(1_000)));
        assert_eq!(parse_words("壹佰圆伍角整"), Some(Money(10_050)));
        assert_eq!(parse_words("一千二百元"), Some(Money(120_000)));
        assert_eq!(parse_words("壹仟ABC圆整"), None);
        assert_eq!(parse_words("整"), None);
        assert_eq!(parse_words("壹仟圆伍"), None);
    }
}
