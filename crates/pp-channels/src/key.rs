//! The key channel secrets are sealed with at rest: ChaCha20-Poly1305 from `ring`, each
//! sealed secret bound to its channel's name.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use crate::error::{ChannelsError, Result};

/// The key channel secrets are sealed with (32 bytes), kept outside the database.
pub struct ChannelKey(LessSafeKey);

impl std::fmt::Debug for ChannelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelKey(..)")
    }
}

impl ChannelKey {
    /// The key of these 32 bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Self {
        match UnboundKey::new(&CHACHA20_POLY1305, bytes) {
            Ok(key) => Self(LessSafeKey::new(key)),
            // ChaCha20-Poly1305 takes exactly 32-byte keys, which the type guarantees.
            Err(_) => unreachable!("a 32-byte ChaCha20-Poly1305 key is always accepted"),
        }
    }

    /// 32 fresh random bytes for a new key.
    pub fn generate() -> Result<[u8; 32]> {
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| ChannelsError::Internal(error.to_string()))?;
        Ok(bytes)
    }

    /// Seals `secret` for the channel `name` (bound to it: a sealed secret moved to
    /// another channel's row does not open).
    pub(crate) fn seal(&self, name: &str, secret: &str) -> Result<Vec<u8>> {
        let mut nonce = [0_u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|error| ChannelsError::Internal(error.to_string()))?;
        let mut sealed = secret.as_bytes().to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| ChannelsError::Internal("cannot seal a channel secret".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens the sealed secret of the channel `name`.
    pub(crate) fn open(&self, name: &str, sealed: &[u8]) -> Result<String> {
        self.try_open(name, sealed).ok_or_else(|| {
            ChannelsError::Internal(format!(
                "the secret of channel `{name}` does not open with this key (was the key \
                 replaced?); run `pocketpilot channels rotate {name}`"
            ))
        })
    }

    /// The sealed secret of the channel `name`, or `None` when it was not sealed with
    /// this key (or for this name).
    pub(crate) fn try_open(&self, name: &str, sealed: &[u8]) -> Option<String> {
        let (nonce, ciphertext) = sealed.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buffer = ciphertext.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut buffer)
            .ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }
}
