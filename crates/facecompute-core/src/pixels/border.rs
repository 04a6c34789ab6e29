//! Constant-black borders and crops that may extend past the image (`cv2.copyMakeBorder` with
//! BORDER_CONSTANT 0, and DeepFace's `extract_sub_image` padding).

use super::Image;
use crate::error::{CoreError, CoreResult};

/// Largest side any padded output may have; keeps a hostile request from allocating gigabytes.
const MAX_SIDE: i64 = 1 << 16;

fn valid(img: &Image) -> CoreResult<()> {
    if img.channels == 0 || img.data.len() != img.width as usize * img.height as usize * img.channels as usize {
        return Err(CoreError::invalid_request("image buffer does not match its dimensions"));
    }
    Ok(())
}

/// `cv2.copyMakeBorder(img, top, bottom, left, right, BORDER_CONSTANT, value=0)`.
pub fn copy_make_border(img: &Image, top: u32, bottom: u32, left: u32, right: u32) -> CoreResult<Image> {
    let w = img.width as i64 + left as i64 + right as i64;
    let h = img.height as i64 + top as i64 + bottom as i64;
    crop_padded_checked(img, -(left as i64), -(top as i64), w, h)
}

/// The `w`×`h` window at (x, y), which may extend past any edge; outside pixels are black.
pub fn crop_padded(img: &Image, x: i64, y: i64, w: i64, h: i64) -> CoreResult<Image> {
    crop_padded_checked(img, x, y, w, h)
}

fn crop_padded_checked(img: &Image, x: i64, y: i64, w: i64, h: i64) -> CoreResult<Image> {
    valid(img)?;
    if w < 0 || h < 0 || w > MAX_SIDE || h > MAX_SIDE {
        return Err(CoreError::invalid_request(format!("crop size {w}x{h} is out of range")));
    }
    let cn = img.channels as usize;
    let mut out = Image::new(w as u32, h as u32, img.channels);
    let (sw, sh) = (img.width as i64, img.height as i64);
    let x0 = x.max(0);
    let x1 = (x + w).min(sw);
    let y0 = y.max(0);
    let y1 = (y + h).min(sh);
    if x0 < x1 && y0 < y1 {
        let n = (x1 - x0) as usize * cn;
        for sy in y0..y1 {
            let s = (sy as usize * sw as usize + x0 as usize) * cn;
            let d = ((sy - y) as usize * w as usize + (x0 - x) as usize) * cn;
            out.data[d..d + n].copy_from_slice(&img.data[s..s + n]);
        }
    }
    Ok(out)
}

/// The part of `img` inside [x0, x1) × [y0, y1), clipped to the image (numpy slicing after clamping).
pub fn crop_clipped(img: &Image, x0: i64, y0: i64, x1: i64, y1: i64) -> Image {
    let x0 = x0.clamp(0, img.width as i64);
    let x1 = x1.clamp(x0, img.width as i64);
    let y0 = y0.clamp(0, img.height as i64);
    let y1 = y1.clamp(y0, img.height as i64);
    let cn = img.channels as usize;
    let (w, h) = ((x1 - x0) as usize, (y1 - y0) as usize);
    let mut data = Vec::with_capacity(w * h * cn);
    for y in y0 as usize..y1 as usize {
        let s = (y * img.width as usize + x0 as usize) * cn;
        data.extend_from_slice(&img.data[s..s + w * cn]);
    }
    Image { width: w as u32, height: h as u32, channels: img.channels, data }
}
