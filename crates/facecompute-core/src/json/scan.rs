//! What JSON.parse would build from a request body, counted off the event loop, and a /compare
//! body's target rows taken out of it as float32.
//!
//! JSON.parse runs on the event loop and costs about 130 ns per number here: 64 MiB of valid /compare
//! targets (26,495 rows of 128) held the gateway's loop for 0.9–2.9 s and grew its heap by 200+ MiB,
//! and any key could carry as many values. `scan` reads a text that `check` has accepted and
//! - counts its values (every array, object, key, string, number and literal), stopping once it
//!   passes the caller's budget, so a body that would cost the loop too much is refused unparsed;
//! - when asked, takes top-level members out of the text when they hold what the route's schema
//!   accepts without question, and returns their byte spans so that the caller parses the rest of the
//!   text without them:
//!   - `Lift::rows`: rows of JSON numbers, 1 to MAX_ROW_LEN per row, each finite as a double. Its
//!     numbers become float32, rounded as `Float32Array.from` rounds JSON.parse's doubles.
//!   - `Lift::text`: a string of ASCII without escapes, whose bytes are then the JS string's
//!     characters (/compare's `targets_b64`, decoded from those bytes off the loop).
//!   Anything else under those keys (an empty array, a NaN-like 1e999, a nested object, an escape) is
//!   left in the text and counted, so the ordinary path gives its ordinary error.
//!
//! JSON.parse keeps the last of duplicate keys, so only a member's last occurrence is taken out; the
//! earlier ones stay in the text (and are counted), where JSON.parse reads and drops them.
//!
//! A hand-written lexer, not serde_json: serde_json gives neither byte spans nor a count of the
//! values it skips, and `check` has already run serde_json's grammar over the text, so the lexer
//! only needs JSON's token boundaries. It never recurses and keeps no stack (a depth counter), and on
//! a text that is not JSON it stops with an error instead of reading past the end.

use crate::error::{CoreError, CoreResult};

/// The most numbers in one embedding: the `maxItems` of src/vocabulary/schemas.ts's `embedding`.
pub const MAX_ROW_LEN: usize = 65_536;

/// Rows taken out of the text: `values` is row-major, `row_lengths[i]` numbers for row i, and the
/// member's value spanned `text[start..end]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LiftedRows {
    pub values: Vec<f32>,
    pub row_lengths: Vec<u32>,
    /// More rows than `Lift::max_rows`: only the first `max_rows + 1` are kept.
    pub rows_over: bool,
    pub start: usize,
    pub end: usize,
}

impl LiftedRows {
    /// The values JSON.parse would have built for them: the outer array, each row, each number.
    fn value_count(&self) -> usize {
        1 + self.row_lengths.len() + self.values.len()
    }
}

/// The top-level members to take out, by name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lift<'a> {
    pub rows: Option<&'a str>,
    pub text: Option<&'a str>,
    /// The most rows the caller accepts (/compare's max_targets): past `max_rows + 1` rows the rest
    /// of the member is read without being kept, so that many tiny rows (`[0],` is 4 bytes) cannot
    /// make a 64 MiB body cost twice its size before the caller refuses it. `row_lengths` then holds
    /// `max_rows + 1` rows and `rows_over` is set.
    pub max_rows: usize,
}

/// A string taken out of the text: its value, quotes included, spanned `text[start..end]`, so its
/// characters are `text[start + 1..end - 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiftedText {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// Values outside what was lifted; when `over`, the count at which the scan stopped (budget + 1).
    pub values: usize,
    /// The text holds more values than the budget; nothing was lifted.
    pub over: bool,
    pub rows: Option<LiftedRows>,
    pub text: Option<LiftedText>,
}

/// What the top level gave up: the last liftable occurrence of each member.
#[derive(Default)]
struct Lifted {
    rows: Option<LiftedRows>,
    text: Option<LiftedText>,
}

/// Why the lexer stopped early: the budget, or a text that is not the JSON `check` accepted.
enum Stop {
    Over,
    Malformed,
}

/// Counts the values of `text` (which `check` has accepted) up to `max_values`, and takes out the
/// top-level members `lift` names when they hold what it asks for (see the module's comment).
pub fn scan(text: &[u8], lift: Lift<'_>, max_values: usize) -> CoreResult<Scan> {
    let mut lx = Lexer { text, pos: 0, values: 0, max: max_values };
    let outcome = if lift.rows.is_some() || lift.text.is_some() { lx.top_level_lifting(lift) } else { lx.skip_value().map(|()| Lifted::default()) };
    match outcome.and_then(|l| lx.end().map(|()| l)) {
        Ok(l) => Ok(Scan { values: lx.values, over: false, rows: l.rows, text: l.text }),
        Err(Stop::Over) => Ok(Scan { values: lx.values, over: true, rows: None, text: None }),
        Err(Stop::Malformed) => Err(CoreError::invalid_request(format!("the JSON body could not be scanned at byte {}", lx.pos))),
    }
}

struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
    values: usize,
    max: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    /// JSON's whitespace, as JSON.parse reads it: space, tab, line feed, carriage return.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Stop> {
        self.ws();
        if self.peek() != Some(byte) {
            return Err(Stop::Malformed);
        }
        self.pos += 1;
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), Stop> {
        self.values = self.values.saturating_add(n);
        if self.values > self.max {
            return Err(Stop::Over);
        }
        Ok(())
    }

    /// Only whitespace is left.
    fn end(&mut self) -> Result<(), Stop> {
        self.ws();
        if self.pos == self.text.len() { Ok(()) } else { Err(Stop::Malformed) }
    }

    /// Skips the string that starts at `pos` (at its opening quote); returns its span, quotes included.
    fn string(&mut self) -> Result<(usize, usize), Stop> {
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(Stop::Malformed);
        }
        let mut at = start + 1;
        loop {
            let rest = self.text.get(at..).ok_or(Stop::Malformed)?;
            match memchr::memchr2(b'"', b'\\', rest) {
                Some(i) if rest[i] == b'\\' => at += i + 2,
                Some(i) => {
                    self.pos = at + i + 1;
                    return Ok((start, self.pos));
                }
                None => return Err(Stop::Malformed),
            }
        }
    }

    /// The string at `pos` when it is ASCII without escapes (consumed, not counted), else None with
    /// nothing consumed.
    fn plain_string(&mut self) -> Result<Option<LiftedText>, Stop> {
        if self.peek() != Some(b'"') {
            return Ok(None);
        }
        let at = self.pos;
        let (start, end) = self.string()?;
        let inner = &self.text[start + 1..end - 1];
        if inner.is_ascii() && !inner.contains(&b'\\') {
            return Ok(Some(LiftedText { start, end }));
        }
        self.pos = at;
        Ok(None)
    }

    /// Skips one value, counting it and everything in it. Iterative: a depth counter, no stack.
    fn skip_value(&mut self) -> Result<(), Stop> {
        let mut depth = 0usize;
        loop {
            self.ws();
            match self.peek().ok_or(Stop::Malformed)? {
                b'{' | b'[' => {
                    self.count(1)?;
                    self.pos += 1;
                    depth += 1;
                    continue;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1).ok_or(Stop::Malformed)?;
                    self.pos += 1;
                }
                b',' | b':' if depth > 0 => {
                    self.pos += 1;
                    continue;
                }
                b'"' => {
                    self.count(1)?;
                    self.string()?;
                }
                _ => {
                    self.count(1)?;
                    let start = self.pos;
                    while matches!(self.peek(), Some(b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'+' | b'-' | b'.')) {
                        self.pos += 1;
                    }
                    if self.pos == start {
                        return Err(Stop::Malformed);
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }

    /// The top-level value, taking out the last occurrence of each member `lift` names when it holds
    /// what it asks for. A top level that is not an object is counted whole.
    fn top_level_lifting(&mut self, lift: Lift<'_>) -> Result<Lifted, Stop> {
        let mut lifted = Lifted::default();
        self.ws();
        if self.peek() != Some(b'{') {
            return self.skip_value().map(|()| lifted);
        }
        self.count(1)?;
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(lifted);
        }
        loop {
            self.ws();
            let (ks, ke) = self.string()?;
            self.count(1)?;
            self.expect(b':')?;
            self.ws();
            let key = &self.text[ks..ke];
            // A later occurrence replaces an earlier one, as in JSON.parse: what was taken out goes
            // back into the count, since it stays in the text.
            if lift.rows.is_some_and(|k| key_is(key, k)) {
                if let Some(earlier) = lifted.rows.take() {
                    self.count(earlier.value_count())?;
                }
                match rows_at(self.text, self.pos, lift.max_rows) {
                    Some(rows) => {
                        self.pos = rows.end;
                        lifted.rows = Some(rows);
                    }
                    None => self.skip_value()?,
                }
            } else if lift.text.is_some_and(|k| key_is(key, k)) {
                if lifted.text.take().is_some() {
                    self.count(1)?;
                }
                match self.plain_string()? {
                    Some(text) => lifted.text = Some(text),
                    None => self.skip_value()?,
                }
            } else {
                self.skip_value()?;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(lifted);
                }
                _ => return Err(Stop::Malformed),
            }
        }
    }
}

/// Whether the quoted JSON string `quoted` (quotes included) is `key` once its escapes are read, as
/// JSON.parse reads them (`"t\u0061rgets"` is `targets`).
fn key_is(quoted: &[u8], key: &str) -> bool {
    let inner = &quoted[1..quoted.len() - 1];
    if !inner.contains(&b'\\') {
        return inner == key.as_bytes();
    }
    // A lone surrogate escape, which serde_json refuses, is never a key we lift.
    serde_json::from_slice::<String>(quoted).is_ok_and(|s| s == key)
}

/// The rows of numbers whose outer `[` is at `at`, or None when the value there is anything else
/// (see the module's comment). Reads no further than the value's end; keeps at most `max_rows + 1`
/// rows (the rest is checked, not kept).
fn rows_at(text: &[u8], at: usize, max_rows: usize) -> Option<LiftedRows> {
    let mut lx = Lexer { text, pos: at, values: 0, max: usize::MAX };
    let mut values = Vec::new();
    let mut row_lengths = Vec::new();
    let mut over = false;
    if lx.peek() != Some(b'[') {
        return None;
    }
    lx.pos += 1;
    loop {
        lx.ws();
        if lx.peek() != Some(b'[') {
            return None;
        }
        lx.pos += 1;
        let mut n = 0usize;
        loop {
            lx.ws();
            let x = number_at(&mut lx)?;
            n += 1;
            if n > MAX_ROW_LEN {
                return None;
            }
            if !over {
                values.push(x as f32);
            }
            if !more_items(&mut lx)? {
                break;
            }
        }
        if !over {
            row_lengths.push(n as u32);
            over = row_lengths.len() > max_rows;
        }
        if !more_items(&mut lx)? {
            return Some(LiftedRows { values, row_lengths, rows_over: over, start: at, end: lx.pos });
        }
    }
}

/// After an array item: Some(true) past a `,` (another item follows), Some(false) past the closing
/// `]`, None for anything else.
fn more_items(lx: &mut Lexer<'_>) -> Option<bool> {
    lx.ws();
    let more = match lx.peek()? {
        b',' => true,
        b']' => false,
        _ => return None,
    };
    lx.pos += 1;
    Some(more)
}

/// The JSON number at the lexer's position as JSON.parse reads it (the correctly rounded double),
/// or None when the value there is not a number or is not finite (1e999: JSON.parse makes it
/// Infinity, which the schema refuses). The number grammar is checked here because Rust's `parse`
/// accepts more than JSON does ("+1", ".5", "inf").
fn number_at(lx: &mut Lexer<'_>) -> Option<f64> {
    let start = lx.pos;
    let digits = |lx: &mut Lexer<'_>| {
        let from = lx.pos;
        while matches!(lx.peek(), Some(b'0'..=b'9')) {
            lx.pos += 1;
        }
        lx.pos > from
    };
    if lx.peek() == Some(b'-') {
        lx.pos += 1;
    }
    match lx.peek()? {
        b'0' => lx.pos += 1,
        b'1'..=b'9' => {
            digits(lx);
        }
        _ => return None,
    }
    if lx.peek() == Some(b'.') {
        lx.pos += 1;
        if !digits(lx) {
            return None;
        }
    }
    if matches!(lx.peek(), Some(b'e' | b'E')) {
        lx.pos += 1;
        if matches!(lx.peek(), Some(b'+' | b'-')) {
            lx.pos += 1;
        }
        if !digits(lx) {
            return None;
        }
    }
    let text = std::str::from_utf8(&lx.text[start..lx.pos]).ok()?;
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: Lift<'static> = Lift { rows: Some("targets"), text: None, max_rows: usize::MAX };
    const BOTH: Lift<'static> = Lift { rows: Some("targets"), text: Some("targets_b64"), max_rows: usize::MAX };

    fn s(text: &str, lift: Option<&str>) -> Scan {
        scan(text.as_bytes(), Lift { rows: lift, text: None, max_rows: usize::MAX }, usize::MAX).expect(text)
    }

    #[test]
    fn counts_every_value_json_parse_builds() {
        assert_eq!(s("0", None).values, 1);
        assert_eq!(s(" [] ", None).values, 1);
        assert_eq!(s("{\"a\": [1, \"x\", true, null, {\"b\": -1.5e3}]}", None).values, 10, "object, a, array, 1, x, true, null, object, b, -1.5e3");
        assert_eq!(s("\"a\\\"b\\\\\"", None).values, 1, "escaped quotes and backslashes stay inside the string");
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(s(&deep, None).values, 100_000, "no recursion");
    }

    #[test]
    fn stops_at_the_budget() {
        let r = scan(b"[1, 2, 3, 4]", Lift::default(), 3).unwrap();
        assert!(r.over);
        assert_eq!(r.values, 4);
        assert!(!scan(b"[1, 2, 3]", Lift::default(), 4).unwrap().over);
        // Outside the lifted rows: the object, both keys, x's array and its 3 numbers.
        let text = b"{\"targets\": [[1, 2]], \"x\": [1, 2, 3]}";
        assert_eq!(scan(text, ROWS, 7).unwrap().values, 7);
        assert!(scan(text, ROWS, 6).unwrap().over);
    }

    #[test]
    fn lifts_the_rows_and_returns_their_span() {
        let text = "{\"model_name\": \"Facenet\", \"targets\" : [[1, -0.5e1], [0.1,2E-3,-0]] , \"top_k\": 1}";
        let r = s(text, Some("targets"));
        let rows = r.rows.expect("lifted");
        assert_eq!(&text[rows.start..rows.end], "[[1, -0.5e1], [0.1,2E-3,-0]]");
        assert_eq!(rows.row_lengths, vec![2, 3]);
        assert_eq!(rows.values, vec![1.0, -5.0, 0.1f64 as f32, 2e-3f64 as f32, -0.0]);
        assert!(rows.values[4].is_sign_negative(), "-0 stays -0, as in JSON.parse");
        assert_eq!(r.values, 6, "{{, model_name, Facenet, targets (the key), top_k, 1");
    }

    #[test]
    fn rounds_as_json_parse_then_float32_array() {
        // Decimal to the nearest double, then to the nearest float32, ties to even at each step.
        for t in ["0.1", "1.0000000596046448", "3.4028235677973366e38", "1e-46", "123456789012345678901234567890", "4.9406564584124654e-324"] {
            let r = s(&format!("{{\"targets\": [[{t}]]}}"), Some("targets"));
            let want = t.parse::<f64>().unwrap() as f32;
            assert_eq!(r.rows.unwrap().values[0].to_bits(), want.to_bits(), "{t}");
        }
    }

    #[test]
    fn leaves_anything_the_schema_might_refuse_in_the_text() {
        let long_row = format!("[{}]", vec!["0"; MAX_ROW_LEN + 1].join(","));
        for v in ["[]", "[[]]", "[[1], []]", "[[1, \"2\"]]", "[[1, null]]", "[[1, [2]]]", "[[1, {\"a\": 1}]]", "[[1e999]]", "[[-1e999]]", "[1, 2]", "{\"0\": [1]}", "\"AAAA\"", "null", &long_row] {
            let text = format!("{{\"targets\": {v}}}");
            let r = s(&text, Some("targets"));
            assert!(r.rows.is_none(), "{v}");
            assert_eq!(r.values, s(&text, None).values, "counted as usual: {v}");
        }
        // Past max_rows + 1 rows the rest is read, not kept: many tiny rows cost nothing more.
        let tiny = format!("{{\"targets\": [{}], \"top_k\": 1}}", vec!["[0.5]"; 100_000].join(","));
        let capped = scan(tiny.as_bytes(), Lift { rows: Some("targets"), text: None, max_rows: 3 }, usize::MAX).unwrap();
        let rows = capped.rows.unwrap();
        assert_eq!(rows.row_lengths, vec![1, 1, 1, 1], "max_rows + 1 rows kept");
        assert_eq!(rows.values, vec![0.5; 4]);
        assert!(rows.rows_over);
        assert_eq!(&tiny.as_bytes()[rows.end..], b", \"top_k\": 1}", "the whole member is taken out");
        assert_eq!(capped.values, 4, "{{, targets (the key), top_k, 1");
        let exact = scan(b"{\"targets\": [[1], [2], [3]]}", Lift { rows: Some("targets"), text: None, max_rows: 3 }, usize::MAX).unwrap().rows.unwrap();
        assert!(!exact.rows_over, "max_rows rows are not over");
        assert_eq!(exact.row_lengths.len(), 3);
        let max_row = format!("{{\"targets\": [[{}]]}}", vec!["0"; MAX_ROW_LEN].join(","));
        assert_eq!(s(&max_row, Some("targets")).rows.unwrap().row_lengths, vec![MAX_ROW_LEN as u32]);
    }

    #[test]
    fn lifts_only_the_top_level_member_and_only_its_last_occurrence() {
        assert!(s("{\"a\": {\"targets\": [[1]]}}", Some("targets")).rows.is_none(), "nested");
        assert!(s("[{\"targets\": [[1]]}]", Some("targets")).rows.is_none(), "top level not an object");
        let text = "{\"targets\": [[1]], \"targets\": [[2, 3]]}";
        let r = s(text, Some("targets"));
        assert_eq!(r.rows.as_ref().unwrap().values, vec![2.0, 3.0]);
        assert_eq!(r.values, 1 + 2 + 3, "the object, both keys, and the first occurrence's array, row and number");
        let text = "{\"targets\": [[1]], \"targets\": \"x\"}";
        let r = s(text, Some("targets"));
        assert!(r.rows.is_none(), "the last occurrence is not rows");
        assert_eq!(r.values, s(text, None).values);
        assert!(s("{\"t\\u0061rgets\": [[1]]}", Some("targets")).rows.is_some(), "an escaped key is the same key");
        assert!(s("{\"targets_b64\": [[1]]}", Some("targets")).rows.is_none());
        assert!(s("{\"\\ud800\": 1, \"targets\": [[1]]}", Some("targets")).rows.is_some(), "a lone surrogate key is just another key");
    }

    #[test]
    fn a_text_that_is_not_json_is_an_error_not_a_panic() {
        for bad in ["", "{", "{\"a\"", "{\"a\": ", "[1,", "\"abc", "{\"targets\": [[1, 2]", "]", "{\"a\": 1 \"b\": 2}", "[1] x", "{\"targets\": [[1]]} x"] {
            assert!(scan(bad.as_bytes(), ROWS, usize::MAX).is_err(), "{bad}");
        }
    }

    #[test]
    fn lifts_a_plain_ascii_string_and_only_that() {
        let text = "{\"targets_b64\": \"AACAPw==\", \"top_k\": 1}";
        let r = scan(text.as_bytes(), BOTH, usize::MAX).unwrap();
        let t = r.text.expect("lifted");
        assert_eq!(&text[t.start..t.end], "\"AACAPw==\"");
        assert!(r.rows.is_none());
        assert_eq!(r.values, 4, "{{, targets_b64 (the key), top_k, 1");
        for v in ["\"AA\\u0041A\"", "\"AA\\/A\"", "\"AA\u{e9}A\"", "[1]", "1", "null"] {
            let text = format!("{{\"targets_b64\": {v}}}");
            let r = scan(text.as_bytes(), BOTH, usize::MAX).unwrap();
            assert!(r.text.is_none(), "{v}");
            assert_eq!(r.values, scan(text.as_bytes(), Lift::default(), usize::MAX).unwrap().values, "counted as usual: {v}");
        }
        let text = "{\"targets_b64\": \"AAAA\", \"targets_b64\": \"BBBB\", \"targets\": [[1]]}";
        let r = scan(text.as_bytes(), BOTH, usize::MAX).unwrap();
        assert_eq!(&text[r.text.unwrap().start..r.text.unwrap().end], "\"BBBB\"", "the last occurrence");
        assert_eq!(r.rows.unwrap().values, vec![1.0], "both members in one body");
        assert_eq!(r.values, 1 + 3 + 1, "the object, three keys, and the first string");
        let text = "{\"targets_b64\": \"AAAA\", \"targets_b64\": \"\\u0041\"}";
        assert!(scan(text.as_bytes(), BOTH, usize::MAX).unwrap().text.is_none(), "the last occurrence has an escape");
    }
}
