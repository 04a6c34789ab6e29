//! Shape and finiteness checks for embeddings, with the index of the first offending vector so that
//! a caller can point at `targets[i]`.

use crate::error::{CoreError, CoreResult, ErrorCode};

/// Exponent bits of an f32; all ones means Infinity or NaN.
const EXPONENT_MASK: u32 = 0x7f80_0000;
/// Checked in blocks: a branch-free max over a block vectorises, an early-exit loop does not.
const BLOCK: usize = 4096;

pub fn check_dims(dims: usize) -> CoreResult<()> {
    if dims == 0 {
        return Err(CoreError::invalid_request("dims must be at least 1"));
    }
    Ok(())
}

/// Number of `dims`-long vectors in `len` values, or `embedding_dimension_mismatch`.
pub fn count_vectors(len: usize, dims: usize) -> CoreResult<usize> {
    check_dims(dims)?;
    if !len.is_multiple_of(dims) {
        return Err(CoreError::new(
            ErrorCode::EmbeddingDimensionMismatch,
            format!("{len} values do not split into vectors of {dims} dimensions"),
        ));
    }
    Ok(len / dims)
}

/// Position of the first NaN or Infinity, if any.
pub fn first_non_finite(data: &[f32]) -> Option<usize> {
    let mut offset = 0;
    for block in data.chunks(BLOCK) {
        let worst = block.iter().fold(0u32, |m, x| m.max(x.to_bits() & EXPONENT_MASK));
        if worst == EXPONENT_MASK {
            return block.iter().position(|x| !x.is_finite()).map(|p| offset + p);
        }
        offset += block.len();
    }
    None
}

pub fn non_finite_error(vector: usize, position: usize) -> CoreError {
    CoreError::new(
        ErrorCode::InvalidEmbedding,
        format!("vector {vector} has a non-finite value (NaN or Infinity) at position {position}"),
    )
}

/// Checks a row-major matrix of `dims`-long vectors; returns how many vectors it holds.
pub fn validate_vectors(data: &[f32], dims: usize) -> CoreResult<usize> {
    let count = count_vectors(data.len(), dims)?;
    if let Some(at) = first_non_finite(data) {
        return Err(non_finite_error(at / dims, at % dims));
    }
    Ok(count)
}

/// Checks the one query vector.
pub fn validate_query(query: &[f32], dims: usize) -> CoreResult<()> {
    check_dims(dims)?;
    if query.len() != dims {
        return Err(CoreError::new(
            ErrorCode::EmbeddingDimensionMismatch,
            format!("the query has {} values, expected {dims}", query.len()),
        ));
    }
    if let Some(at) = first_non_finite(query) {
        return Err(CoreError::new(
            ErrorCode::InvalidEmbedding,
            format!("the query has a non-finite value (NaN or Infinity) at position {at}"),
        ));
    }
    Ok(())
}
