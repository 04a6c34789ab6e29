//! WebP through libwebp, the library OpenCV uses (`WebPDecodeBGRInto`): lossy files get libwebp's
//! own fancy upsampling and YUV conversion, so pixels match cv2.imdecode exactly; alpha is dropped.

use super::{try_buffer, ChannelOrder};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;
use libwebp_sys as w;

pub fn decode(bytes: &[u8], order: ChannelOrder) -> CoreResult<Image> {
    let (mut width, mut height) = (0i32, 0i32);
    // SAFETY: pointer and length describe `bytes`; outputs are plain ints.
    let ok = unsafe { w::WebPGetInfo(bytes.as_ptr(), bytes.len(), &mut width, &mut height) };
    if ok == 0 || width <= 0 || height <= 0 {
        return Err(CoreError::invalid_image("undecodable WebP"));
    }
    let (width, height) = (width as u32, height as u32);
    let stride = width as usize * 3;
    let mut buf = try_buffer(stride * height as usize)?;
    // SAFETY: `buf` holds stride*height bytes; libwebp writes at most that many.
    let out = unsafe {
        match order {
            ChannelOrder::Bgr => w::WebPDecodeBGRInto(bytes.as_ptr(), bytes.len(), buf.as_mut_ptr(), buf.len(), stride as i32),
            ChannelOrder::Rgb => w::WebPDecodeRGBInto(bytes.as_ptr(), bytes.len(), buf.as_mut_ptr(), buf.len(), stride as i32),
        }
    };
    if out.is_null() {
        return Err(CoreError::invalid_image("undecodable WebP (animated, truncated or corrupt)"));
    }
    Ok(Image { width, height, channels: 3, data: buf })
}
