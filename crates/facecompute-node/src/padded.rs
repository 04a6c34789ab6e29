//! Padded image views. An image argument may carry `pad`: its `width` and `height` then include a
//! black border that `data` does not hold, and `data` holds only the inner
//! (width − left − right) × (height − top − bottom) pixels.
//!
//! The model server passes DeepFace's align border this way. The border is three quarters of the
//! bordered pixels, and as a JS Buffer it counted against V8's external memory, which started a full
//! collection on the model server's JS thread every ~150 ms under load. Now the bordered image is
//! built only inside the native calls that read it (detection, extraction).

use facecompute_core::pixels::{copy_make_border_raw, Image};
use facecompute_core::CoreError;
use napi_derive::napi;

#[napi(object)]
#[derive(Clone, Copy)]
pub struct Padding {
    pub top: u32,
    pub bottom: u32,
    pub left: u32,
    pub right: u32,
}

/// The image an argument stands for: its own pixels, or the padded image built from them.
/// `mismatch` is the caller's error for a buffer that does not fill an unpadded image.
pub fn core_image(width: u32, height: u32, channels: u32, data: &[u8], pad: Option<&Padding>, mismatch: impl FnOnce() -> CoreError) -> Result<Image, CoreError> {
    match pad {
        None => Image::from_raw(width, height, channels, data.to_vec()).ok_or_else(mismatch),
        Some(p) => bordered(width, height, channels, data, p),
    }
}

/// The padded image of a view: `width` × `height` with `data` inside the border.
pub fn bordered(width: u32, height: u32, channels: u32, data: &[u8], p: &Padding) -> Result<Image, CoreError> {
    let (iw, ih) = inner_size(width, height, p)?;
    copy_make_border_raw(iw, ih, channels, data, p.top, p.bottom, p.left, p.right)
}

/// The size of the pixels `data` holds: the view's size less the padding.
pub fn inner_size(width: u32, height: u32, p: &Padding) -> Result<(u32, u32), CoreError> {
    let inner = |side: u32, a: u32, b: u32| side.checked_sub(a).and_then(|s| s.checked_sub(b));
    match (inner(width, p.left, p.right), inner(height, p.top, p.bottom)) {
        (Some(iw), Some(ih)) => Ok((iw, ih)),
        _ => Err(CoreError::invalid_request("image padding exceeds its width or height")),
    }
}
