//! Dimensions from the header alone: no decoder is constructed and nothing proportional to the
//! pixel count is allocated, so limits can be enforced before decoding.

use super::sniff::{sniff, Format};
use crate::error::{CoreError, CoreResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    pub format: Format,
    /// Stored width, before EXIF orientation.
    pub width: u32,
    /// Stored height, before EXIF orientation.
    pub height: u32,
}

pub fn probe(bytes: &[u8]) -> CoreResult<ImageInfo> {
    let format = sniff(bytes).ok_or_else(|| {
        CoreError::invalid_image("unrecognised image format (accepted: JPEG, PNG, WebP, GIF, BMP)")
    })?;
    let dims = match format {
        Format::Jpeg => jpeg(bytes),
        Format::Png => png(bytes),
        Format::Gif => gif(bytes),
        Format::Bmp => bmp(bytes),
        Format::Webp => webp(bytes),
    };
    let (width, height) =
        dims.ok_or_else(|| CoreError::invalid_image(format!("truncated or malformed {} header", format.as_str())))?;
    Ok(ImageInfo { format, width, height })
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?) as u32)
}
fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u32)
}
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Walks the marker segments up to the first start-of-frame.
fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut pos = 2;
    loop {
        if *b.get(pos)? != 0xFF {
            return None;
        }
        while *b.get(pos)? == 0xFF {
            pos += 1;
        }
        let marker = *b.get(pos)?;
        pos += 1;
        match marker {
            0x01 | 0xD0..=0xD7 => continue,
            0xD8 | 0xD9 | 0xDA => return None,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let height = be16(b, pos + 3)?;
                let width = be16(b, pos + 5)?;
                return Some((width, height));
            }
            _ => {
                let len = be16(b, pos)? as usize;
                if len < 2 {
                    return None;
                }
                pos += len;
            }
        }
    }
}

fn png(b: &[u8]) -> Option<(u32, u32)> {
    if b.get(12..16)? != b"IHDR" {
        return None;
    }
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// The logical screen: the canvas the first frame is drawn on.
fn gif(b: &[u8]) -> Option<(u32, u32)> {
    Some((le16(b, 6)?, le16(b, 8)?))
}

fn bmp(b: &[u8]) -> Option<(u32, u32)> {
    let dib = le32(b, 14)?;
    if dib == 12 {
        return Some((le16(b, 18)?, le16(b, 20)?));
    }
    let w = le32(b, 18)? as i32;
    let h = le32(b, 22)? as i32;
    // A negative height means rows are stored top-down; a negative width is malformed.
    (w > 0).then_some((w as u32, h.unsigned_abs()))
}

fn webp(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            if b.get(23..26)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            Some((le16(b, 26)? & 0x3fff, le16(b, 28)? & 0x3fff))
        }
        b"VP8L" => {
            if *b.get(20)? != 0x2f {
                return None;
            }
            let bits = le32(b, 21)?;
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8X" => {
            let w = le32(b, 24)? & 0x00ff_ffff;
            let h = le32(b, 27)? & 0x00ff_ffff;
            Some((w + 1, h + 1))
        }
        _ => None,
    }
}
