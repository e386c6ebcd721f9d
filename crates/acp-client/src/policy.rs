//! What the editor decides for the agent: permission prompts and the memory
//! of "always" answers ([`permission`]), and elicitation forms
//! ([`elicitation`]).

pub mod elicitation;
pub mod permission;
