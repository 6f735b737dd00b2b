//! Taxpayer identification numbers: the 18-character unified social credit code of
//! GB 32100-2015 (with its check digit) and the older 15/17/20-character tax numbers.

/// The characters of a unified social credit code, in value order (no I, O, S, V, Z).
const ALPHABET: &str = "0123456789ABCDEFGHJKLMNPQRTUWXY";
/// The weights of positions 1 to 17.
const WEIGHTS: [u32; 17] = [
    1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28,
];

/// The check character of the first 17 characters of a unified social credit code;
/// `None` when one of them is not in the code's alphabet.
pub fn check_char(first17: &str) -> Option<char> {
    if first17.chars().count() != 17 {
        return None;
    }
    let mut sum = 0u32;
    for (character, weight) in first17.chars().zip(WEIGHTS) {
        let value = ALPHABET.find(character)?;
        sum += u32::try_from(value).ok()? * weight;
    }
    let check = (31 - sum % 31) % 31;
    ALPHABET.chars().nth(usize::try_from(check).ok()?)
}

/// Why a tax id is wrong; `None` when it is acceptable: an 18-character code whose check
/// character (GB 32100) is right, or a legacy 15, 17 or 20 character tax number of
/// digits and capital letters.
pub fn problem(tax_id: &str) -> Option<String> {
    let id = tax_id.trim();
    let length = id.chars().count();
    if length == 18 {
        let (first17, last) = id.split_at(id.char_indices().nth(17).map_or(id.len(), |(i, _)| i));
        return match check_char(first17) {
            None => Some(format!(
                "`{id}` has characters a unified social credit code cannot have (digits and \
                 capitals except I, O, S, V, Z)"
            )),
            Some(expected) if last.starts_with(expected) => None,
            Some(expected) => Some(format!(
                "`{id}`: the check character (GB 32100) should be `{expected}`, not `{last}`"
            )),
        };
    }
    let legacy = matches!(length, 15 | 17 | 20)
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
    (!legacy).then(|| {
        format!(
            "`{id}` is not a tax id: expected an 18-character unified social credit code \
             (or a legacy 15, 17 or 20 character tax number)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_check() {
        // Published codes (company registers).
        for code in ["91350100M000100Y43", "91110000600037341L"] {
            assert_eq!(problem(code), None, "{code}");
        }
    }

    #[test]
    fn a_wrong_check_character_or_alphabet_is_reported() {
        let wrong = problem("91350100M000100Y44").unwrap();
        assert!(wrong.contains("should be `3`"), "{wrong}");
        assert!(problem("91350100M000100YI3").is_some());
        assert!(problem("12345").is_some());
        assert_eq!(problem("110108123456789"), None);
    }
}
