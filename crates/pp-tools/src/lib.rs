//! PocketPilot's built-in file tools: `list_files`, `read_file`, `write_file` and
//! `edit_file`, each an [`pp_agent::Tool`] that reaches the disk only through a
//! [`pp_gate::Jail`]; and [`skills`] (`expand_skill`, `read_skill_file`, the catalog and
//! the operator's changes); and [`memory`] (`memory.md` in the data directory and
//! `memory_write`); and [`docs`] (`extract_document` and the other document tools, all
//! `file:read`: the bytes come through the jail, `pp-docs` parses them in a limited
//! child process); and [`shell`] (`run_command`, `shell:execute`: one program run in the
//! workspace, confined by `pp-sandbox`).
//!
//! Main items: [`file_tools`] / [`file_tools_with`] build the file tools around one
//! jail, [`register_file_tools`] puts them into a [`pp_agent::ToolRegistry`], and
//! [`Limits`] caps how much a single call may read or return. Every tool declares its
//! capability (`file:read`, `file:write`, `file:update`, `file:delete`, `file:create`), risk and path parameters in its
//! [`pp_types::ToolSpec`]; the policy decides from those, never from the tool's name.
//!
//! Where it sits: this crate depends on `pp-types` (specs and outputs), `pp-gate` (the
//! jail, the only way to the filesystem), `pp-agent` (the `Tool` trait and the
//! registry), `pp-docs` (document parsing) and `pp-sandbox` (confined commands).
//! Arguments arrive already checked by the schema and the policy; each tool still reads
//! them into its own `#[derive(Deserialize)]` type (`args::parse`, whose errors name the
//! argument), and a test per tool checks that type against the hand-written schema the
//! model sees. Every access still goes through the jail, which re-checks the path
//! race-free. A refusal by the jail becomes [`pp_types::ToolOutput::Denied`]; a
//! missing file or a bad edit is an ordinary [`pp_types::ToolOutput::Error`]. No tool
//! panics.
//!
//! ```
//! use std::sync::Arc;
//! use pp_agent::{Tool, ToolContext, ToolRegistry};
//! use pp_types::ToolOutput;
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let jail = Arc::new(pp_gate::Jail::new(dir.path())?);
//! let tools = pp_tools::file_tools(Arc::clone(&jail));
//! let names: Vec<&str> = tools.iter().map(|tool| tool.spec().name.as_str()).collect();
//! assert_eq!(
//!     names,
//!     ["list_files", "read_file", "write_file", "edit_file", "move_file", "delete_file", "make_dir"]
//! );
//!
//! // File work runs on the blocking pool; any runtime will do.
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! let write = &tools[2];
//! let context = ToolContext::default();
//! let arguments = json!({"path": "notes/todo.txt", "content": "milk\n"});
//! let output = runtime.block_on(write.execute(&context, &arguments));
//! assert_eq!(output, ToolOutput::success("created `notes/todo.txt` (5 bytes)"));
//! let read = &tools[1];
//! let arguments = json!({"path": "notes/todo.txt"});
//! let output = runtime.block_on(read.execute(&context, &arguments));
//! assert_eq!(output, ToolOutput::success("milk\n"));
//!
//! let mut registry = ToolRegistry::new();
//! pp_tools::register_file_tools(&mut registry, jail)?;
//! assert_eq!(registry.len(), 7);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Content search: [`search_tool`] builds `search_files` (`file:read`, ripgrep's
//! searcher over files opened through the jail's walk, capped by [`SearchLimits`]); the
//! files provider offers it next to the file tools.

mod args;
#[cfg(test)]
mod args_check;
mod blocking;
pub mod docs;
mod files;
mod inputs;
pub mod memory;
mod provider;
mod search;
pub mod shell;
pub mod skills;

pub use provider::{
    Equipment, FilesProvider, ProviderError, Provision, Scope, ToolProvider, Toolbox, ToolboxError,
};

pub use docs::{DocsProvider, DocsSettings};
pub use memory::{Memory, MemoryProvider, MemorySettings, SharedMemory};
pub use shell::{ShellProvider, ShellSettings};
pub use skills::{SkillsProvider, SkillsSettings};

pub use inputs::{InputSource, OWN_REPORTS, input_of};
pub use search::{SearchLimits, search_tool};

pub use files::{
    Limits, file_tools, file_tools_with, register_file_tools, register_file_tools_with,
};
