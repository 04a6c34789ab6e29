//! Lossless PNG of an 8-bit image: how /represent returns a face crop (`return_face`). BGR becomes
//! RGB (PNG has no BGR), grey stays grey; every row uses filter 0 (None), so a client can read the
//! pixels back with zlib alone, and the encoding is the same on every CPU.

use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;

pub fn encode_png(img: &Image) -> CoreResult<Vec<u8>> {
    let color = match img.channels {
        1 => ::png::ColorType::Grayscale,
        3 => ::png::ColorType::Rgb,
        c => return Err(CoreError::invalid_request(format!("a PNG face crop has 1 or 3 channels, not {c}"))),
    };
    if img.width == 0 || img.height == 0 {
        return Err(CoreError::invalid_request("an empty image has no PNG"));
    }
    let rgb: std::borrow::Cow<'_, [u8]> = if img.channels == 3 {
        let mut out = img.data.clone();
        for px in out.chunks_exact_mut(3) {
            px.swap(0, 2);
        }
        out.into()
    } else {
        img.data.as_slice().into()
    };
    let mut bytes = Vec::with_capacity(img.data.len() / 2 + 1024);
    {
        let mut encoder = ::png::Encoder::new(&mut bytes, img.width, img.height);
        encoder.set_color(color);
        encoder.set_depth(::png::BitDepth::Eight);
        encoder.set_compression(::png::Compression::Fast);
        encoder.set_filter(::png::Filter::NoFilter);
        let fail = |e: ::png::EncodingError| CoreError::new(crate::error::ErrorCode::InternalError, format!("PNG encoding failed: {e}"));
        let mut writer = encoder.write_header().map_err(fail)?;
        writer.write_image_data(&rgb).map_err(fail)?;
        writer.finish().map_err(fail)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{decode, ChannelOrder, DecodeLimits};

    #[test]
    fn png_round_trips_bgr_and_grey_exactly() {
        let w = 37;
        let h = 11;
        let data: Vec<u8> = (0..w * h * 3).map(|i| ((i * 7919) % 251) as u8).collect();
        let img = Image::from_raw(w, h, 3, data).unwrap();
        let png = encode_png(&img).unwrap();
        let limits = DecodeLimits { max_bytes: 1 << 20, max_pixels: 1 << 20 };
        let back = decode(&png, limits, ChannelOrder::Bgr).unwrap();
        assert_eq!(back, img);
        let grey = Image::from_raw(w, h, 1, (0..w * h).map(|i| (i % 256) as u8).collect()).unwrap();
        let back = decode(&encode_png(&grey).unwrap(), limits, ChannelOrder::Bgr).unwrap();
        assert_eq!(back.channels, 3);
        assert!(back.data.chunks_exact(3).zip(&grey.data).all(|(p, g)| p == [*g, *g, *g]));
    }
}
