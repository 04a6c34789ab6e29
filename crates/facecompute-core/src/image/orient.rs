//! EXIF orientation applied to pixels, with OpenCV's mapping (`ApplyExifOrientation`).

use crate::pixels::Image;

/// Returns the image as it should be displayed for `orientation` (1..=8; anything else is 1).
pub fn apply(img: Image, orientation: u16) -> Image {
    // (transpose, then flip x, then flip y)
    let (transpose, flip_x, flip_y) = match orientation {
        2 => (false, true, false),
        3 => (false, true, true),
        4 => (false, false, true),
        5 => (true, false, false),
        6 => (true, true, false),
        7 => (true, true, true),
        8 => (true, false, true),
        _ => return img,
    };
    let c = img.channels as usize;
    let (sw, sh) = (img.width as usize, img.height as usize);
    let (dw, dh) = if transpose { (sh, sw) } else { (sw, sh) };
    let mut out = vec![0u8; img.data.len()];
    for (dy, row) in out.chunks_exact_mut(dw * c).enumerate() {
        let ty = if flip_y { dh - 1 - dy } else { dy };
        if !transpose {
            // Whole source rows: copy, reversing pixel order when mirrored.
            let src = &img.data[ty * sw * c..(ty + 1) * sw * c];
            if flip_x {
                for (d, s) in row.chunks_exact_mut(c).zip(src.chunks_exact(c).rev()) {
                    d.copy_from_slice(s);
                }
            } else {
                row.copy_from_slice(src);
            }
            continue;
        }
        // Transposed: output row `ty` is source column `ty`.
        for (dx, d) in row.chunks_exact_mut(c).enumerate() {
            let tx = if flip_x { dw - 1 - dx } else { dx };
            let s = (tx * sw + ty) * c;
            d.copy_from_slice(&img.data[s..s + c]);
        }
    }
    Image { width: dw as u32, height: dh as u32, channels: img.channels, data: out }
}
