//! Downscaling before detection (FACECOMPUTE_DETECTOR_MAX_SIDE): the detector sees a smaller image
//! and its boxes are mapped back with the returned factor; faces are still cropped at full size.

use super::{resize, Image, Interpolation};
use crate::error::CoreResult;

/// Returns the image scaled so that its longer side is at most `max_side` (0 = never), and the
/// factor (≤ 1) to divide detector coordinates by to get back to the input.
pub fn downscale_max_side(img: &Image, max_side: u32) -> CoreResult<(Image, f64)> {
    let long = img.width.max(img.height);
    if max_side == 0 || long <= max_side {
        return Ok((img.clone(), 1.0));
    }
    let factor = max_side as f64 / long as f64;
    let w = ((img.width as f64 * factor).round() as u32).max(1);
    let h = ((img.height as f64 * factor).round() as u32).max(1);
    // INTER_AREA averages every source pixel, which keeps small faces' detail when shrinking.
    let out = resize(img, w, h, Interpolation::Area)?;
    Ok((out, factor))
}
