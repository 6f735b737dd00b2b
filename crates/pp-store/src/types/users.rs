//! Team users: the token prefix and who a login belongs to.

/// The prefix of every user token (the single-user token has none), so a person can
/// tell the two apart.
pub const USER_TOKEN_PREFIX: &str = "ppu_";

/// Who a live console login belongs to ([`crate::Store::login_owner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOwner {
    /// A login made with the single-user server token.
    Server,
    /// A login made with this team user's token.
    User(String),
}
