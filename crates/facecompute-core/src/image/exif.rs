//! The EXIF Orientation tag, from where OpenCV 4.9 reads it: the JPEG APP1 "Exif" segment and the
//! PNG eXIf chunk before the image data. Anything unreadable means "as stored" (1), like OpenCV.

/// Orientation of a JPEG stream (1..=8; 1 when absent or malformed).
pub fn jpeg_orientation(b: &[u8]) -> u16 {
    let mut pos = 2;
    while pos + 4 <= b.len() {
        if b[pos] != 0xFF {
            return 1;
        }
        let marker = b[pos + 1];
        if marker == 0xFF {
            pos += 1;
            continue;
        }
        if matches!(marker, 0x01 | 0xD0..=0xD7) {
            pos += 2;
            continue;
        }
        if matches!(marker, 0xD9 | 0xDA) {
            return 1;
        }
        let len = u16::from_be_bytes([b[pos + 2], b[pos + 3]]) as usize;
        if len < 2 {
            return 1;
        }
        let body = match b.get(pos + 4..pos + 2 + len) {
            Some(body) => body,
            None => return 1,
        };
        if marker == 0xE1 && body.starts_with(b"Exif\0\0") {
            return tiff_orientation(&body[6..]);
        }
        pos += 2 + len;
    }
    1
}

/// Orientation from a PNG eXIf chunk that precedes IDAT.
pub fn png_orientation(b: &[u8]) -> u16 {
    let mut pos = 8;
    while let Some(head) = b.get(pos..pos + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        if kind == b"IDAT" || kind == b"IEND" {
            return 1;
        }
        if kind == b"eXIf" {
            return b.get(pos + 8..pos + 8 + len).map_or(1, tiff_orientation);
        }
        pos = match pos.checked_add(12 + len) {
            Some(p) => p,
            None => return 1,
        };
    }
    1
}

fn tiff_orientation(tiff: &[u8]) -> u16 {
    let Ok(parsed) = exif::Reader::new().read_raw(tiff.to_vec()) else { return 1 };
    parsed
        .get_field(exif::Tag::Orientation, exif::In::PRIMARY)
        .and_then(|f| f.value.get_uint(0))
        .filter(|v| (1..=8).contains(v))
        .map_or(1, |v| v as u16)
}
