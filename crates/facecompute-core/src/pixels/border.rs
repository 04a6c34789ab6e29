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
    crop_padded_raw(img.width, img.height, img.channels, &img.data, x, y, w, h)
}

/// `copy_make_border` of pixels held as a bare slice, in one allocation and one copy. The binding
/// passes DeepFace's align border as a padded view (the inner pixels and the border widths) and
/// builds the bordered image here, inside the native call that needs it, so the bordered bytes never
/// become a JS buffer.
#[allow(clippy::too_many_arguments)]
pub fn copy_make_border_raw(width: u32, height: u32, channels: u32, data: &[u8], top: u32, bottom: u32, left: u32, right: u32) -> CoreResult<Image> {
    let (w, h) = bordered_size(width, height, channels, data.len(), top, bottom, left, right)?;
    crop_padded_raw(width, height, channels, data, -(left as i64), -(top as i64), w as i64, h as i64)
}

/// The size of `copy_make_border_raw`'s result, checked before anything is allocated: `data_len`
/// must fill the inner image, and each bordered side stay within the size any crop may take.
#[allow(clippy::too_many_arguments)]
pub fn bordered_size(width: u32, height: u32, channels: u32, data_len: usize, top: u32, bottom: u32, left: u32, right: u32) -> CoreResult<(u32, u32)> {
    if channels == 0 || data_len != width as usize * height as usize * channels as usize {
        return Err(CoreError::invalid_request("image buffer does not match its dimensions"));
    }
    let w = width as i64 + left as i64 + right as i64;
    let h = height as i64 + top as i64 + bottom as i64;
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(CoreError::invalid_request(format!("crop size {w}x{h} is out of range")));
    }
    Ok((w as u32, h as u32))
}

#[allow(clippy::too_many_arguments)]
fn crop_padded_raw(sw: u32, sh: u32, channels: u32, data: &[u8], x: i64, y: i64, w: i64, h: i64) -> CoreResult<Image> {
    if w < 0 || h < 0 || w > MAX_SIDE || h > MAX_SIDE {
        return Err(CoreError::invalid_request(format!("crop size {w}x{h} is out of range")));
    }
    let cn = channels as usize;
    let mut out = Image::new(w as u32, h as u32, channels);
    let (sw, sh) = (sw as i64, sh as i64);
    let x0 = x.max(0);
    let x1 = (x + w).min(sw);
    let y0 = y.max(0);
    let y1 = (y + h).min(sh);
    if x0 < x1 && y0 < y1 {
        let n = (x1 - x0) as usize * cn;
        for sy in y0..y1 {
            let s = (sy as usize * sw as usize + x0 as usize) * cn;
            let d = ((sy - y) as usize * w as usize + (x0 - x) as usize) * cn;
            out.data[d..d + n].copy_from_slice(&data[s..s + n]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_border_is_copy_make_border() {
        for (w, h, c) in [(5u32, 3u32, 3u32), (1, 1, 1), (7, 4, 1), (2, 6, 3)] {
            let data: Vec<u8> = (0..w * h * c).map(|i| (i * 37 % 251) as u8 + 1).collect();
            let img = Image::from_raw(w, h, c, data.clone()).unwrap();
            for (t, b, l, r) in [(0, 0, 0, 0), (h / 2, h / 2, w / 2, w / 2), (1, 2, 3, 4), (0, 5, 0, 1)] {
                let want = copy_make_border(&img, t, b, l, r).unwrap();
                let got = copy_make_border_raw(w, h, c, &data, t, b, l, r).unwrap();
                assert_eq!((got.width, got.height, got.channels), (want.width, want.height, want.channels));
                assert_eq!(got.data, want.data, "{w}x{h}x{c} border {t},{b},{l},{r}");
            }
        }
    }

    #[test]
    fn raw_border_refuses_bad_buffers_and_huge_sides() {
        assert!(copy_make_border_raw(4, 4, 3, &[0; 47], 1, 1, 1, 1).is_err());
        assert!(copy_make_border_raw(4, 4, 0, &[], 1, 1, 1, 1).is_err());
        assert!(copy_make_border_raw(1, 1, 1, &[9], 0, 0, 1 << 16, 0).is_err());
    }
}
