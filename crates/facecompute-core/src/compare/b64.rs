//! Base64 of little-endian f32, row-major N×dims, decoded straight into an f32 buffer (no byte
//! vector in between). Strict RFC 4648 standard alphabet; padding optional; no whitespace, since a
//! JSON string field never needs it and silently skipping characters hides corrupt input.

use super::validate::{check_dims, first_non_finite, non_finite_error};
use crate::error::{CoreError, CoreResult, ErrorCode};

const FLOAT_BYTES: usize = 4;

/// A checked base64 matrix: its alphabet is not yet verified (the decoder does that block by
/// block), but its length is a whole number of rows.
pub(crate) struct B64Rows<'a> {
    /// The text without its padding.
    text: &'a [u8],
    row_bytes: usize,
    pub count: usize,
    /// Rows per 4-character-aligned step: a row boundary falls on a character boundary only every
    /// 3 bytes, so blocks decoded on their own must start at a multiple of this.
    pub group_rows: usize,
}

impl<'a> B64Rows<'a> {
    pub fn parse(text: &'a [u8], dims: usize) -> CoreResult<B64Rows<'a>> {
        check_dims(dims)?;
        let row_bytes = dims * FLOAT_BYTES;
        let unpadded = strip_padding(text);
        let Some(byte_len) = decoded_len(unpadded.len()) else {
            return Err(locate_error(unpadded, row_bytes));
        };
        if !byte_len.is_multiple_of(row_bytes) {
            // Bad characters are the more useful report when both are wrong.
            if unpadded.iter().any(|&c| !is_alphabet(c)) {
                return Err(locate_error(unpadded, row_bytes));
            }
            return Err(CoreError::new(
                ErrorCode::EmbeddingDimensionMismatch,
                format!(
                    "the base64 decodes to {byte_len} bytes, not a whole number of {dims}-dimensional float32 vectors ({row_bytes} bytes each)"
                ),
            ));
        }
        let group_rows = if row_bytes.is_multiple_of(3) { 1 } else { 3 };
        Ok(B64Rows { text: unpadded, row_bytes, count: byte_len / row_bytes, group_rows })
    }

    /// Decodes rows `first..first + out.len() / dims` into `out`. `first` must be a multiple of
    /// `group_rows`. Returns false on a character outside the alphabet (see [`Self::error`]).
    pub fn decode_rows(&self, first: usize, out: &mut [f32]) -> bool {
        debug_assert_eq!(first % self.group_rows, 0);
        let byte_start = first * self.row_bytes;
        let byte_len = out.len() * FLOAT_BYTES;
        let char_start = byte_start / 3 * 4;
        let char_end = ((byte_start + byte_len) / 3 * 4 + match (byte_start + byte_len) % 3 {
            0 => 0,
            r => r + 1,
        })
        .min(self.text.len());
        // SAFETY: any byte pattern is a valid f32 and the view covers exactly `out`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), byte_len) };
        let ok = match base64_simd::STANDARD_NO_PAD.decode(&self.text[char_start..char_end], base64_simd::Out::from_slice(bytes)) {
            Ok(decoded) => decoded.len() == byte_len,
            Err(_) => false,
        };
        #[cfg(target_endian = "big")]
        for f in out.iter_mut() {
            *f = f32::from_bits(u32::from_le(f.to_bits()));
        }
        ok
    }

    /// The error for text that failed to decode, naming the first bad character's vector.
    pub fn error(&self) -> CoreError {
        locate_error(self.text, self.row_bytes)
    }
}

/// Decodes and validates; the result holds `len / dims` finite vectors.
pub fn decode_vectors_b64(text: &[u8], dims: usize) -> CoreResult<Vec<f32>> {
    let rows = B64Rows::parse(text, dims)?;
    let mut floats = vec![0f32; rows.count * dims];
    if !rows.decode_rows(0, &mut floats) {
        return Err(rows.error());
    }
    if let Some(at) = first_non_finite(&floats) {
        return Err(non_finite_error(at / dims, at % dims));
    }
    Ok(floats)
}

/// Up to two '=' are accepted, and only where they complete a 4-character group.
fn strip_padding(text: &[u8]) -> &[u8] {
    if !text.len().is_multiple_of(4) {
        return text;
    }
    let pads = text.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    &text[..text.len() - pads]
}

fn decoded_len(chars: usize) -> Option<usize> {
    match chars % 4 {
        0 => Some(chars / 4 * 3),
        2 => Some(chars / 4 * 3 + 1),
        3 => Some(chars / 4 * 3 + 2),
        _ => None,
    }
}

fn is_alphabet(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

/// The fast decoder only says "invalid"; find where, to name the vector.
fn locate_error(unpadded: &[u8], row_bytes: usize) -> CoreError {
    match unpadded.iter().position(|&c| !is_alphabet(c)) {
        Some(at) => {
            let shown = unpadded[at];
            let what = if shown.is_ascii_graphic() { format!("'{}'", shown as char) } else { format!("byte 0x{shown:02x}") };
            invalid_b64(format!("unexpected {what} at offset {at}"), at, row_bytes)
        }
        None => {
            let at = unpadded.len().saturating_sub(1);
            let why = if decoded_len(unpadded.len()).is_none() {
                format!("a lone character at offset {at} cannot encode a byte")
            } else {
                "its last character has bits set beyond the data".to_string()
            };
            invalid_b64(why, at, row_bytes)
        }
    }
}

fn invalid_b64(why: String, char_offset: usize, row_bytes: usize) -> CoreError {
    let vector = char_offset / 4 * 3 / row_bytes;
    CoreError::new(ErrorCode::InvalidEmbedding, format!("the base64 is invalid in vector {vector}: {why}"))
}
