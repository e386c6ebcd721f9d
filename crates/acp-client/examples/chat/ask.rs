//! Questions asked on the terminal: permission requests in `--permission ask`
//! mode, and elicitations (a form field by field, or a URL to open).

use acp_client::policy::elicitation::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, FieldKind, FormSchema,
};
use acp_client::policy::permission::{PermissionDecision, PermissionRequest};

use super::ChatHost;

impl ChatHost {
    pub(super) async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        self.end_stream();
        let mut text = format!(
            "The agent asks permission for: {}\n",
            request.tool_call.title.as_deref().unwrap_or("a tool call")
        );
        for (i, o) in request.options.iter().enumerate() {
            text.push_str(&format!("  {}) {} [{}]\n", i + 1, o.name, o.kind.as_str()));
        }
        text.push_str("Choose a number (empty line = cancel): ");
        self.say(&text);
        let line = self.lines.lock().await.recv().await.unwrap_or_default();
        match line.trim().parse::<usize>() {
            Ok(n) if n >= 1 && n <= request.options.len() => PermissionDecision::Selected {
                option_id: request.options[n - 1].option_id.clone(),
            },
            _ => PermissionDecision::Cancelled,
        }
    }
}

/// What a typed answer line means besides a value.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

impl ChatHost {
    /// Questions go to stderr in --jsonl mode so stdout stays JSON.
    fn say(&self, text: &str) {
        if self.jsonl {
            eprint!("{text}");
        } else {
            self.out(text);
        }
    }

    async fn read_line(&self) -> Typed {
        match self.lines.lock().await.recv().await {
            None => Typed::Cancel,
            Some(l) if l.trim() == "!decline" => Typed::Decline,
            Some(l) if l.trim() == "!cancel" => Typed::Cancel,
            Some(l) => Typed::Line(l),
        }
    }

    pub(super) async fn ask_elicitation(
        &self,
        request: &ElicitationRequest,
    ) -> ElicitationResponse {
        let schema = match &request.mode {
            ElicitationMode::Url { url, .. } => {
                self.say(&format!(
                    "The agent asks you to open a page: {}\n  {url}\nOpen it, then press Enter (`!decline` or `!cancel` to refuse): ",
                    request.message
                ));
                return match self.read_line().await {
                    Typed::Line(_) => ElicitationResponse::Accept {
                        content: serde_json::Map::new(),
                    },
                    Typed::Decline => ElicitationResponse::Decline,
                    Typed::Cancel => ElicitationResponse::Cancel,
                };
            }
            ElicitationMode::Form { schema } => schema,
        };
        self.say(&format!(
            "The agent asks: {}\n(one line per field; empty = default or none; `!decline` or `!cancel` to refuse)\n",
            request.message
        ));
        let mut content = serde_json::Map::new();
        loop {
            for field in &schema.fields {
                if matches!(field.kind, FieldKind::Unknown { .. }) {
                    continue;
                }
                loop {
                    let default = field
                        .default
                        .as_ref()
                        .map(|d| format!(" [{d}]"))
                        .unwrap_or_default();
                    let required = if field.required { "*" } else { "" };
                    let help = field
                        .description
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    self.say(&format!("  {}{required}{help}{default}: ", field.label()));
                    let text = match self.read_line().await {
                        Typed::Line(l) => l,
                        Typed::Decline => return ElicitationResponse::Decline,
                        Typed::Cancel => return ElicitationResponse::Cancel,
                    };
                    match FormSchema::parse_text(field, &text) {
                        Ok(Some(v)) => {
                            content.insert(field.name.clone(), v);
                            break;
                        }
                        Ok(None) => {
                            match &field.default {
                                Some(d) => content.insert(field.name.clone(), d.clone()),
                                None => content.remove(&field.name),
                            };
                            break;
                        }
                        Err(why) => self.say(&format!("  {why}; try again\n")),
                    }
                }
            }
            match schema.validate(&content) {
                Ok(content) => return ElicitationResponse::Accept { content },
                Err(e) => self.say(&format!("{e}\n")),
            }
        }
    }
}
