//! One module per subcommand.

pub(crate) mod eval;
pub(crate) mod run;
