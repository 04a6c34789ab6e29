//! GIF, first frame only, drawn on the logical screen. OpenCV 4.9 cannot read GIF at all, so there is
//! no DeepFace behaviour to match: pixels outside the first frame or transparent in it are black,
//! the same colour DeepFace pads with.

use super::{check_pixels, try_buffer, ChannelOrder};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;
use std::io::Cursor;

pub fn decode(bytes: &[u8], max_pixels: u64, order: ChannelOrder) -> CoreResult<Image> {
    let bad = |e: ::gif::DecodingError| CoreError::invalid_image(format!("undecodable GIF: {e}"));
    let mut opts = ::gif::DecodeOptions::new();
    opts.set_color_output(::gif::ColorOutput::RGBA);
    opts.set_memory_limit(::gif::MemoryLimit::Bytes(std::num::NonZeroU64::new(max_pixels.saturating_mul(4).max(1)).expect("non-zero")));
    let mut dec = opts.read_info(Cursor::new(bytes)).map_err(bad)?;
    let (width, height) = (dec.width() as u32, dec.height() as u32);
    check_pixels(width, height, max_pixels)?;
    let frame = dec.read_next_frame().map_err(bad)?.ok_or_else(|| CoreError::invalid_image("GIF has no frame"))?;
    let mut out = try_buffer(width as usize * height as usize * 3)?;
    let (fw, fh) = (frame.width as usize, frame.height as usize);
    let (left, top) = (frame.left as usize, frame.top as usize);
    for fy in 0..fh {
        let y = top + fy;
        if y >= height as usize {
            break;
        }
        for fx in 0..fw {
            let x = left + fx;
            if x >= width as usize {
                break;
            }
            let s = (fy * fw + fx) * 4;
            let Some(p) = frame.buffer.get(s..s + 4) else { continue };
            if p[3] == 0 {
                continue;
            }
            let d = (y * width as usize + x) * 3;
            let px = match order {
                ChannelOrder::Bgr => [p[2], p[1], p[0]],
                ChannelOrder::Rgb => [p[0], p[1], p[2]],
            };
            out[d..d + 3].copy_from_slice(&px);
        }
    }
    Ok(Image { width, height, channels: 3, data: out })
}
