//! Ids (`t_…`, `a_…`) and console login ids.
//!
//! An id is a prefix, 10 base32 characters of the creation time in milliseconds (so ids
//! sort by time, good for about 35 000 years) and 10 base32 characters (50 bits) from the
//! operating system's random source, so ids made by different processes in the same
//! millisecond do not collide.

use pp_types::Timestamp;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Crockford's base32 alphabet in lower case (no `i`, `l`, `o`, `u`).
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new id: `prefix` + time + randomness.
pub(crate) fn new_id(prefix: &str, now: Timestamp) -> Result<String> {
    let mut id = String::with_capacity(prefix.len() + 20);
    id.push_str(prefix);
    // Times before the epoch are not expected; clamp rather than wrap.
    let millis = u64::try_from(now.as_millis()).unwrap_or(0);
    push_base32(&mut id, millis, 10);
    push_base32(&mut id, random_u64()?, 10);
    Ok(id)
}

/// A new console login id: 32 random bytes as 64 lower-case hex characters.
pub(crate) fn new_login_id() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(Error::Random)?;
    Ok(hex(&bytes))
}

/// The SHA-256 of a login id in hex: what the console_logins table stores.
pub(crate) fn login_digest(login: &str) -> String {
    hex(&Sha256::digest(login.as_bytes()))
}

/// 10 random base32 characters (50 bits), for temporary file names.
pub(crate) fn random_suffix() -> Result<String> {
    let mut suffix = String::with_capacity(10);
    push_base32(&mut suffix, random_u64()?, 10);
    Ok(suffix)
}

fn random_u64() -> Result<u64> {
    getrandom::u64().map_err(Error::Random)
}

/// Appends the low `5 * digits` bits of `value`, most significant first.
fn push_base32(out: &mut String, value: u64, digits: u32) {
    for index in (0..digits).rev() {
        let digit = (value >> (5 * index)) & 0x1f;
        out.push(char::from(ALPHABET[digit as usize]));
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_have_the_prefix_and_sort_by_time() {
        let early = new_id("t_", Timestamp::from_millis(1_000)).unwrap();
        let late = new_id("t_", Timestamp::from_millis(1_795_984_016_123)).unwrap();
        assert!(early.starts_with("t_") && early.len() == 22, "{early}");
        assert!(early < late);
        assert!(late.bytes().skip(2).all(|byte| ALPHABET.contains(&byte)));
    }

    #[test]
    fn ids_made_in_the_same_millisecond_differ() {
        let now = Timestamp::from_millis(1_795_984_016_123);
        let ids: HashSet<String> = (0..10_000).map(|_| new_id("a_", now).unwrap()).collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn login_ids_are_hex_and_hash_to_sha256() {
        let login = new_login_id().unwrap();
        assert_eq!(login.len(), 64);
        assert!(login.bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_eq!(
            login_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
