//! The signature of a delivery: HMAC-SHA256 with the channel's secret over
//! `timestamp.body`, sent as `sha256=<lowercase hex>`.

use ring::hmac;

/// The header carrying the delivery's time, in unix seconds.
pub const TIMESTAMP_HEADER: &str = "X-PocketPilot-Timestamp";
/// The header carrying `sha256=<lowercase hex of the HMAC-SHA256>`.
pub const SIGNATURE_HEADER: &str = "X-PocketPilot-Signature";

/// `sha256=<lowercase hex>` of HMAC-SHA256 with `secret` over `timestamp.body`: the
/// `X-PocketPilot-Signature` header of a delivery.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut context = hmac::Context::with_key(&key);
    context.update(timestamp.as_bytes());
    context.update(b".");
    context.update(body);
    format!("sha256={}", hex(context.sign().as_ref()))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Decodes 64 lowercase hex characters.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_signatures_do_not_decode() {
        assert!(unhex(&"a".repeat(64)).is_some());
        assert!(unhex(&"A".repeat(64)).is_none());
        assert!(unhex(&"a".repeat(63)).is_none());
        assert!(unhex(&"g".repeat(64)).is_none());
    }
}
