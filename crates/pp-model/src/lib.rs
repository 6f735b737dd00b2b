//! Model providers for PocketPilot. Today: [`ScriptedModel`], which replays a JSON list
//! of assistant turns and records every request it receives — it drives evals, tests,
//! demos and `pocketpilot run --script`, and ships in the binary.
//!
//! This crate implements [`pp_agent::Model`]; it depends on `pp-types` and `pp-agent`
//! only. HTTP providers (OpenAI-compatible, Anthropic) will live here too, as siblings
//! of the scripted model behind the same trait.
//!
//! ```
//! use pp_model::ScriptedModel;
//! let model = ScriptedModel::from_json(r#"[{"content": "hello"}]"#).unwrap();
//! assert_eq!(model.len(), 1);
//! ```

mod error;
mod scripted;

pub use error::{Error, Result};
pub use scripted::{ScriptTurn, ScriptedCall, ScriptedModel};
