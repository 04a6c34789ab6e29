//! PNG with OpenCV's IMREAD_COLOR transformations: palette and low-bit grey expanded to 8 bits,
//! 16-bit samples reduced to their high byte (libpng's strip_16), alpha stripped without blending.

use super::{exif, to_three_channels, try_buffer, ChannelOrder};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;
use std::io::Cursor;

pub fn decode(bytes: &[u8], max_pixels: u64, order: ChannelOrder) -> CoreResult<(Image, u16)> {
    let bad = |e: ::png::DecodingError| CoreError::invalid_image(format!("undecodable PNG: {e}"));
    // The decoder's own allocation cap: the full 8-bit RGBA frame plus slack for filter rows.
    let limit = (max_pixels.saturating_mul(8)).min(usize::MAX as u64) as usize;
    let mut decoder = ::png::Decoder::new_with_limits(Cursor::new(bytes), ::png::Limits { bytes: limit });
    decoder.set_transformations(::png::Transformations::EXPAND | ::png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(bad)?;
    let (width, height) = { let i = reader.info(); (i.width, i.height) };
    super::check_pixels(width, height, max_pixels)?;
    let size = reader.output_buffer_size().ok_or_else(|| CoreError::invalid_image("PNG frame too large"))?;
    let mut buf = try_buffer(size)?;
    let frame = reader.next_frame(&mut buf).map_err(bad)?;
    let channels = frame.color_type.samples();
    if frame.bit_depth != ::png::BitDepth::Eight {
        return Err(CoreError::invalid_image("unsupported PNG bit depth"));
    }
    let img = to_three_channels(&buf[..frame.buffer_size()], width, height, channels, order)?;
    Ok((img, exif::png_orientation(bytes)))
}
