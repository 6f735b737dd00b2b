//! Comparing secrets (the API token) in constant time.

use sha2::{Digest, Sha256};

/// Compares two secrets in time independent of where they differ and of their lengths:
/// both are hashed first, then the digests are compared without early exit.
///
/// An empty expected secret never matches (a server with no token accepts no token).
pub(crate) fn constant_time_eq(expected: &[u8], candidate: &[u8]) -> bool {
    let left = Sha256::digest(expected);
    let right = Sha256::digest(candidate);
    let difference = left
        .iter()
        .zip(right.iter())
        .fold(0_u8, |acc, (a, b)| acc | (a ^ b));
    difference == 0 && !expected.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_secrets() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b""));
    }
}
