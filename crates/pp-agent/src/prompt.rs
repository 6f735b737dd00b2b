//! The system prompt: what the model is told about its tools and the rules.

use crate::ToolRegistry;

/// Extra sections of the system prompt that come from outside the loop.
#[derive(Debug, Clone, Default)]
pub struct PromptContext {
    /// Skills as `(name, one-line description)`.
    pub skills: Vec<(String, String)>,
    /// The content of the agent's memory file.
    pub memory: Option<String>,
}

/// Builds the system prompt listing the tools the model may call, the skills and the
/// memory.
pub fn system_prompt(tools: &ToolRegistry, context: &PromptContext) -> String {
    let mut prompt = String::from(
        "You are PocketPilot, an assistant working on the files in the user's workspace.\n\
         Paths are relative to the workspace root; absolute paths and paths leaving the \
         workspace are refused. Reading and listing run at once; every write waits for the \
         user's approval, and the user may reject it or edit it. If a call is denied or \
         rejected, change course instead of repeating it.\n\n## Tools\n",
    );
    for spec in tools.specs() {
        let capability = spec
            .capability
            .as_ref()
            .map_or("none", |capability| capability.as_str());
        prompt.push_str(&format!(
            "- {} ({capability}): {}\n",
            spec.name, spec.description
        ));
    }
    if !context.skills.is_empty() {
        prompt.push_str("\n## Skills (use expand_skill to read one)\n");
        for (name, description) in &context.skills {
            prompt.push_str(&format!("- {name}: {description}\n"));
        }
    }
    if let Some(memory) = context.memory.as_deref().filter(|m| !m.trim().is_empty()) {
        prompt.push_str("\n## Memory\n");
        prompt.push_str(memory.trim_end());
        prompt.push('\n');
    }
    prompt
}
