//! Base64 of little-endian f32, row-major N×dims, decoded straight into an f32 buffer (no byte
//! vector in between). Strict RFC 4648 standard alphabet; padding optional; no whitespace, since a
//! JSON string field never needs it and silently skipping characters hides corrupt input.

use super::validate::{check_dims, first_non_finite, non_finite_error};
use crate::error::{CoreError, CoreResult, ErrorCode};

const FLOAT_BYTES: usize = 4;

/// Decodes and validates; the result holds `len / dims` finite vectors.
pub fn decode_vectors_b64(text: &[u8], dims: usize) -> CoreResult<Vec<f32>> {
    check_dims(dims)?;
    let row_bytes = dims * FLOAT_BYTES;
    let unpadded = strip_padding(text);
    let Some(byte_len) = decoded_len(unpadded.len()) else {
        return Err(locate_error(unpadded, row_bytes));
    };
    if byte_len % row_bytes != 0 {
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
    let mut floats = vec![0f32; byte_len / FLOAT_BYTES];
    // SAFETY: any byte pattern is a valid f32, the view covers exactly the allocation, and `floats`
    // is not touched while `bytes` lives.
    let bytes = unsafe { std::slice::from_raw_parts_mut(floats.as_mut_ptr().cast::<u8>(), byte_len) };
    if base64_simd::STANDARD_NO_PAD.decode(unpadded, base64_simd::Out::from_slice(bytes)).is_err() {
        return Err(locate_error(unpadded, row_bytes));
    }
    #[cfg(target_endian = "big")]
    for f in floats.iter_mut() {
        *f = f32::from_bits(u32::from_le(f.to_bits()));
    }
    if let Some(at) = first_non_finite(&floats) {
        return Err(non_finite_error(at / dims, at % dims));
    }
    Ok(floats)
}

/// Up to two '=' are accepted, and only where they complete a 4-character group.
fn strip_padding(text: &[u8]) -> &[u8] {
    if text.len() % 4 != 0 {
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
