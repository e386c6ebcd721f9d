//! Newline-delimited framing of the agent's stdout, with a hard line limit.
