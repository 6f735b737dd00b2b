//! One module per subcommand.

pub(crate) mod approvals;
pub(crate) mod eval;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod tasks;
pub(crate) mod token;
