//! One module per subcommand.

pub(crate) mod approvals;
pub(crate) mod backup;
pub(crate) mod channels;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod init;
pub(crate) mod man;
pub(crate) mod mcp;
pub(crate) mod mcp_list;
pub(crate) mod mcp_serve;
pub(crate) mod memory;
pub(crate) mod revert;
pub(crate) mod run;
pub(crate) mod schedules;
pub(crate) mod serve;
pub(crate) mod sessions;
pub(crate) mod skills;
pub(crate) mod tasks;
pub(crate) mod token;
pub(crate) mod users;
pub(crate) mod worker;
