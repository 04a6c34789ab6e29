//! Image decoding and normalization: every input goes through [`decode`], which enforces the byte
//! limit, sniffs the format from magic bytes, checks the decoded-pixel limit from the header before
//! any pixel buffer exists, decodes, applies EXIF orientation, and returns 8-bit 3-channel pixels
//! exactly as `cv2.imdecode(buf, IMREAD_COLOR)` would (DeepFace's loader), in BGR or RGB.

mod bmp;
mod exif;
mod gif;
mod jpeg;
mod orient;
mod png;
mod png_encode;
mod probe;
mod sniff;
mod webp;

pub use png_encode::encode_png;
pub use probe::{probe, ImageInfo};
pub use sniff::{sniff, Format};

use crate::error::{CoreError, CoreResult, ErrorCode};
use crate::pixels::Image;

/// Channel order of a decoded 3-channel image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelOrder {
    Bgr,
    Rgb,
}

/// Limits checked before any pixel is decoded.
#[derive(Clone, Copy, Debug)]
pub struct DecodeLimits {
    /// Largest encoded size accepted (`image_too_large`).
    pub max_bytes: usize,
    /// Largest width × height accepted, read from the header (`too_many_pixels`).
    pub max_pixels: u64,
}

/// Decodes `bytes` into an 8-bit, 3-channel image in `order`, like OpenCV's IMREAD_COLOR.
pub fn decode(bytes: &[u8], limits: DecodeLimits, order: ChannelOrder) -> CoreResult<Image> {
    if bytes.len() > limits.max_bytes {
        return Err(CoreError::new(
            ErrorCode::ImageTooLarge,
            format!("image is {} bytes; the limit is {}", bytes.len(), limits.max_bytes),
        ));
    }
    let info = probe(bytes)?;
    check_pixels(info.width, info.height, limits.max_pixels)?;
    let (img, orientation) = match info.format {
        Format::Jpeg => jpeg::decode(bytes, limits.max_pixels, order)?,
        Format::Png => png::decode(bytes, limits.max_pixels, order)?,
        // OpenCV 4.9 honours EXIF orientation only for JPEG and PNG; matching it keeps parity.
        Format::Webp => (webp::decode(bytes, order)?, 1),
        Format::Gif => (gif::decode(bytes, limits.max_pixels, order)?, 1),
        Format::Bmp => (bmp::decode(bytes, limits.max_pixels, order)?, 1),
    };
    Ok(orient::apply(img, orientation))
}

/// `too_many_pixels` unless `width × height` fits the limit; zero-sized images are invalid.
pub(crate) fn check_pixels(width: u32, height: u32, max_pixels: u64) -> CoreResult<()> {
    if width == 0 || height == 0 {
        return Err(CoreError::invalid_image("image has a zero dimension"));
    }
    let pixels = width as u64 * height as u64;
    if pixels > max_pixels {
        return Err(CoreError::new(
            ErrorCode::TooManyPixels,
            format!("image is {width}x{height} = {pixels} pixels; the limit is {max_pixels}"),
        ));
    }
    Ok(())
}

/// Allocates a zeroed buffer without aborting the process when memory is short.
pub(crate) fn try_buffer(len: usize) -> CoreResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| CoreError::new(ErrorCode::TooManyPixels, "not enough memory to decode the image"))?;
    v.resize(len, 0);
    Ok(v)
}

/// Builds the 3-channel output from interleaved 8-bit pixels with `src_channels` channels in RGB(A)
/// or grey(+alpha) order: grey is replicated, alpha dropped without blending (IMREAD_COLOR).
pub(crate) fn to_three_channels(
    src: &[u8],
    width: u32,
    height: u32,
    src_channels: usize,
    order: ChannelOrder,
) -> CoreResult<Image> {
    let n = width as usize * height as usize;
    if src.len() < n * src_channels || src_channels == 0 {
        return Err(CoreError::invalid_image("decoder returned fewer pixels than the header promised"));
    }
    let mut out = try_buffer(n * 3)?;
    match src_channels {
        1 | 2 => {
            for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(src_channels)) {
                o.fill(p[0]);
            }
        }
        _ => {
            for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(src_channels)) {
                match order {
                    ChannelOrder::Rgb => o.copy_from_slice(&p[..3]),
                    ChannelOrder::Bgr => {
                        o[0] = p[2];
                        o[1] = p[1];
                        o[2] = p[0];
                    }
                }
            }
        }
    }
    Ok(Image { width, height, channels: 3, data: out })
}
