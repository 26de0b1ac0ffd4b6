//! Counting tokens of what a turn is shown, to choose whole or index exposure.
//!
//! The count sits behind [`TokenCounter`] so SPEAR can plug in its model's
//! tokenizer. The default, [`EstimatedTokens`], needs no vocabulary: one token
//! per three bytes of UTF-8, rounded up. Real BPE tokenizers average about
//! four bytes a token on English and a little over three on JSON schemas, so
//! the estimate errs on the side of more tokens, which errs towards the index
//! (the safe side: nothing is hidden, it is one `describe` away). Its error is
//! measured against OpenAI's o200k tokenizer over the tools of six real MCP
//! servers in `core/tests/tokens.rs`.

/// Counts the tokens of a text.
pub trait TokenCounter: Send + Sync {
    /// How many tokens `text` is, as the model will see it.
    fn count(&self, text: &str) -> usize;
}

/// The default estimate: `ceil(bytes / 3)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimatedTokens;

impl TokenCounter for EstimatedTokens {
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_bytes_a_token_rounded_up() {
        assert_eq!(EstimatedTokens.count(""), 0);
        assert_eq!(EstimatedTokens.count("abc"), 1);
        assert_eq!(EstimatedTokens.count("abcd"), 2);
        assert_eq!(EstimatedTokens.count("日本"), 2);
    }
}
