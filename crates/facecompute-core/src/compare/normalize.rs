//! L2 normalisation as DeepFace's `represent(l2_normalize=True)` does it: x/‖x‖, left alone when the
//! norm is 0. The norm is summed in f64 so long vectors keep full f32 precision.

use super::validate::first_non_finite;
use crate::error::{CoreError, CoreResult, ErrorCode};

pub fn l2_normalize(v: &[f32]) -> CoreResult<Vec<f32>> {
    if let Some(at) = first_non_finite(v) {
        return Err(CoreError::new(
            ErrorCode::InvalidEmbedding,
            format!("the vector has a non-finite value (NaN or Infinity) at position {at}"),
        ));
    }
    let norm = v.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>().sqrt();
    if norm == 0.0 {
        return Ok(v.to_vec());
    }
    Ok(v.iter().map(|&x| ((x as f64) / norm) as f32).collect())
}
