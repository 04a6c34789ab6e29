//! DeepFace's `resize_image` (preprocessing.py): aspect-preserving resize with `int()` truncated
//! sizes, centred black padding (top `dh // 2`), and a final plain resize if the shape still differs.

use super::resize::{resize, resize_linear_f64, ImageF64};
use super::{Image, Interpolation};
use crate::error::CoreResult;

/// Size after the aspect-preserving resize, and the top/left padding, for a `w`×`h` input.
pub fn letterbox_geometry(w: u32, h: u32, target_w: u32, target_h: u32) -> (u32, u32, u32, u32) {
    let factor = (target_h as f64 / h as f64).min(target_w as f64 / w as f64);
    // DeepFace would fail in cv2.resize on a zero size (a face 1 pixel thin); one pixel keeps going.
    let rw = ((w as f64 * factor) as u32).clamp(1, target_w);
    let rh = ((h as f64 * factor) as u32).clamp(1, target_h);
    let top = (target_h - rh) / 2;
    let left = (target_w - rw) / 2;
    (rw, rh, top, left)
}

/// Letterbox of an 8-bit image (INTER_LINEAR resize in OpenCV's fixed point).
pub fn letterbox(img: &Image, target_w: u32, target_h: u32) -> CoreResult<Image> {
    let (rw, rh, top, left) = letterbox_geometry(img.width, img.height, target_w, target_h);
    let resized = resize(img, rw, rh, Interpolation::Linear)?;
    super::border::copy_make_border(&resized, top, target_h - rh - top, left, target_w - rw - left)
}

/// Letterbox of a float image, as DeepFace runs it on faces already divided by 255.
pub fn letterbox_f64(img: &ImageF64, target_w: u32, target_h: u32) -> CoreResult<ImageF64> {
    let (rw, rh, top, left) = letterbox_geometry(img.width, img.height, target_w, target_h);
    let resized = resize_linear_f64(img, rw, rh)?;
    let cn = img.channels as usize;
    let mut data = vec![0f64; target_w as usize * target_h as usize * cn];
    let row = rw as usize * cn;
    for y in 0..rh as usize {
        let d = ((y + top as usize) * target_w as usize + left as usize) * cn;
        data[d..d + row].copy_from_slice(&resized.data[y * row..(y + 1) * row]);
    }
    Ok(ImageF64 { width: target_w, height: target_h, channels: img.channels, data })
}
