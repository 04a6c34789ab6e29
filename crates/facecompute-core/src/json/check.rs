//! A syntax check of a JSON text that allocates nothing for what it reads, for the gateway's body
//! parser: run on the libuv pool before JSON.parse, it refuses a large invalid body (unterminated,
//! truncated, garbage) without the event loop building, and then dropping, the values it held. V8's
//! JSON.parse materialises every value up to the error: 64 MiB of unterminated JSON held the gateway's
//! event loop for seconds and added hundreds of MiB of heap.
//!
//! serde_json (the Rust ecosystem's reference parser) reads the text into `IgnoredAny`, which checks
//! the grammar and keeps nothing: it skips values without recursing (no depth limit) and does not
//! decode strings, so like JSON.parse it accepts a lone surrogate escape and bytes that are not UTF-8
//! inside a string (Buffer#toString makes them U+FFFD). A text it refuses, JSON.parse refuses too
//! (tests below and test/json-body.test.ts).

use serde::de::IgnoredAny;
use serde_json::error::Category;

/// Where and why a text is not valid JSON. `offset` is the byte offset of the error in the text (the
/// byte serde_json stopped at, or the text's length for an early end), for the caller's diagnosis of
/// the bytes around it (Python's bare `NaN` and `Infinity` tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSyntaxError {
    pub offset: usize,
    pub message: String,
}

/// Checks that `text` is one JSON value, with nothing but whitespace after it.
pub fn check(text: &[u8]) -> Result<(), JsonSyntaxError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let result = serde::Deserialize::deserialize(&mut de).and_then(|_: IgnoredAny| de.end());
    result.map_err(|e| {
        // An early end is reported at the last byte read; the error is the end itself.
        let offset = if e.classify() == Category::Eof { text.len() } else { offset_of(text, e.line(), e.column()) };
        JsonSyntaxError { offset, message: strip_position(&e.to_string()) }
    })
}

/// The byte offset of serde_json's (1-based line, column) position: the column counts bytes from the
/// start of the line, and is 0 when the error came at a line's newline. An out-of-range position (an
/// early end reports the last byte read) is clamped to the text.
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    let mut remaining = line.saturating_sub(1);
    while remaining > 0 {
        match memchr::memchr(b'\n', &text[start..]) {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
        remaining -= 1;
    }
    (start + column.saturating_sub(1)).min(text.len())
}

/// serde_json's message without its " at line L column C" suffix: the caller states the position itself.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> JsonSyntaxError {
        check(text.as_bytes()).expect_err(text)
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for ok in ["{}", "[]", "0", "-1.5e-3", "\"a\"", "null", " {\"a\": [1, 2, {\"b\": \"\\u00e9\"}]} \n", "1e999", "\"\\ud83d\\ude00\""] {
            assert_eq!(check(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_with_the_offset_of_the_error() {
        assert_eq!(err("").offset, 0);
        assert_eq!(err("[1, 2").offset, 5);
        assert_eq!(err("{\"a\": NaN}").offset, 6, "at the N");
        assert_eq!(err("[-Infinity]").offset, 2, "at the I, after the minus");
        let e = err("{\"a\":\n [1,\n  Infinity]}");
        assert_eq!(&"{\"a\":\n [1,\n  Infinity]}"[e.offset..e.offset + 1], "I");
        assert_eq!(err("[1] x").offset, 4);
        assert!(!err("[1, 2").message.contains("line"), "the position is the caller's to state");
    }

    #[test]
    fn as_lenient_as_json_parse_where_serde_json_could_be_stricter() {
        // JSON.parse accepts all three; a body refused here must be one JSON.parse refuses too.
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(check(deep.as_bytes()), Ok(()), "deep nesting: IgnoredAny keeps no stack of values");
        assert_eq!(check(b"\"\\ud800\""), Ok(()), "a lone surrogate escape");
        assert_eq!(check(b"\"a\xffb\""), Ok(()), "bytes that are not UTF-8 inside a string (JSON.parse reads them as U+FFFD)");
        assert!(check(b"\"a\x01b\"").is_err(), "a raw control character in a string: JSON.parse refuses it too");
    }

    #[test]
    fn an_unterminated_text_of_many_mebibytes_is_refused_at_its_end() {
        let mut text = b"{\"targets\": [".to_vec();
        while text.len() < 8 << 20 {
            text.extend_from_slice(b"[0.1, 0.2, 0.3, 0.4], ");
        }
        let e = check(&text).expect_err("unterminated");
        assert_eq!(e.offset, text.len());
    }
}
