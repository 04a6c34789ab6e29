//! BMP through the `image` crate's decoder; alpha (32-bit files) is dropped as OpenCV does.

use super::{check_pixels, to_three_channels, try_buffer, ChannelOrder};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;
use ::image::codecs::bmp::BmpDecoder;
use ::image::ImageDecoder;
use std::io::Cursor;

pub fn decode(bytes: &[u8], max_pixels: u64, order: ChannelOrder) -> CoreResult<Image> {
    let bad = |e: ::image::ImageError| CoreError::invalid_image(format!("undecodable BMP: {e}"));
    let dec = BmpDecoder::new(Cursor::new(bytes)).map_err(bad)?;
    let (width, height) = dec.dimensions();
    check_pixels(width, height, max_pixels)?;
    let channels = dec.color_type().channel_count() as usize;
    if dec.color_type().bytes_per_pixel() as usize != channels {
        return Err(CoreError::invalid_image("unsupported BMP sample depth"));
    }
    let mut buf = try_buffer(dec.total_bytes() as usize)?;
    dec.read_image(&mut buf).map_err(bad)?;
    to_three_channels(&buf, width, height, channels, order)
}
