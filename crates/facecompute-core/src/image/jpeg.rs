//! JPEG through libjpeg-turbo's TurboJPEG 3 API with OpenCV's settings: accurate integer IDCT and
//! fancy upsampling (the library defaults), BGR output straight from the decoder. Warnings such as a
//! truncated stream are not fatal, as in OpenCV's `cv2.imread`, which returns the partly grey image;
//! a failure that leaves rows unwritten is, whatever TurboJPEG calls it.

use super::{check_pixels, exif, try_buffer, ChannelOrder};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;
use turbojpeg_sys as tj;

/// Progressive files with more scans than this are refused: each scan re-walks the whole
/// coefficient buffer, so a few KB of hostile scans can cost minutes. Real encoders emit < 100.
const SCAN_LIMIT: i32 = 500;

struct Handle(tj::tjhandle);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from tj3Init and is destroyed exactly once.
        unsafe { tj::tj3Destroy(self.0) }
    }
}

impl Handle {
    fn new() -> CoreResult<Self> {
        // SAFETY: plain constructor; a null return is handled.
        let h = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as i32) };
        if h.is_null() {
            return Err(CoreError::new(crate::ErrorCode::InternalError, "could not initialise the JPEG decoder"));
        }
        Ok(Self(h))
    }
    fn set(&self, param: tj::TJPARAM, value: i32) {
        // SAFETY: valid handle; parameters are plain integers.
        unsafe { tj::tj3Set(self.0, param as i32, value) };
    }
    fn get(&self, param: tj::TJPARAM) -> i32 {
        // SAFETY: valid handle.
        unsafe { tj::tj3Get(self.0, param as i32) }
    }
    /// A failure is fatal unless TurboJPEG classes it as a warning.
    fn fatal(&self, rc: i32) -> bool {
        // SAFETY: valid handle.
        rc != 0 && unsafe { tj::tj3GetErrorCode(self.0) } == tj::TJERR_TJERR_FATAL as i32
    }
    /// One decode of `bytes` into `buf` (rows of `pitch` bytes); TurboJPEG's return code.
    fn decompress(&self, bytes: &[u8], buf: &mut [u8], pitch: usize, format: tj::TJPF) -> i32 {
        // SAFETY: valid handle; `buf` holds the header's height rows of `pitch` bytes, which is all
        // TurboJPEG writes (no scaling or cropping is set).
        unsafe { tj::tj3Decompress8(self.0, bytes.as_ptr(), bytes.len() as _, buf.as_mut_ptr(), pitch as i32, format as i32) }
    }
    /// Whether a decode that failed had written every row of `buf`. TurboJPEG writes rows top to
    /// bottom, so the last row tells; it was zero-filled, so any other byte there was written. An
    /// all-zero last row may be a black one: the row is then set to 0xFF and decoded again (the
    /// decode is deterministic and reads nothing from `buf`): a written row comes back as the zeros
    /// it was, an unwritten one stays 0xFF. Only damaged files take this path.
    fn wrote_every_row(&self, bytes: &[u8], buf: &mut [u8], pitch: usize, format: tj::TJPF) -> bool {
        let last = buf.len() - pitch;
        if buf[last..].iter().any(|&b| b != 0) {
            return true;
        }
        buf[last..].fill(0xFF);
        self.decompress(bytes, buf, pitch, format);
        let written = buf[last..].iter().any(|&b| b != 0xFF);
        if !written {
            buf[last..].fill(0);
        }
        written
    }
    fn message(&self) -> String {
        // SAFETY: tj3GetErrorStr returns a NUL-terminated string owned by the handle.
        let s = unsafe { std::ffi::CStr::from_ptr(tj::tj3GetErrorStr(self.0)) };
        s.to_string_lossy().into_owned()
    }
}

/// Returns the decoded image (stored orientation) and its EXIF orientation tag.
pub fn decode(bytes: &[u8], max_pixels: u64, order: ChannelOrder) -> CoreResult<(Image, u16)> {
    let h = Handle::new()?;
    h.set(tj::TJPARAM_TJPARAM_SCANLIMIT, SCAN_LIMIT);
    // Defence in depth: the limit was already checked from our own header parse.
    h.set(tj::TJPARAM_TJPARAM_MAXPIXELS, max_pixels.min(i32::MAX as u64) as i32);
    // SAFETY: valid handle; pointer and length describe `bytes`.
    let rc = unsafe { tj::tj3DecompressHeader(h.0, bytes.as_ptr(), bytes.len() as _) };
    if h.fatal(rc) {
        return Err(CoreError::invalid_image(format!("undecodable JPEG: {}", h.message())));
    }
    let width = h.get(tj::TJPARAM_TJPARAM_JPEGWIDTH);
    let height = h.get(tj::TJPARAM_TJPARAM_JPEGHEIGHT);
    if width <= 0 || height <= 0 {
        return Err(CoreError::invalid_image("JPEG has no valid frame size"));
    }
    let (width, height) = (width as u32, height as u32);
    check_pixels(width, height, max_pixels)?;
    let cs = h.get(tj::TJPARAM_TJPARAM_COLORSPACE);
    let cmyk = cs == tj::TJCS_TJCS_CMYK as i32 || cs == tj::TJCS_TJCS_YCCK as i32;
    let (format, channels) = if cmyk {
        (tj::TJPF_TJPF_CMYK, 4usize)
    } else if order == ChannelOrder::Bgr {
        (tj::TJPF_TJPF_BGR, 3)
    } else {
        (tj::TJPF_TJPF_RGB, 3)
    };
    let pitch = width as usize * channels;
    let len = pitch * height as usize;
    // Zero-filled: a row the decoder did not write must never hand out what the allocator had there
    // (an earlier request's pixels).
    let mut buf = try_buffer(len)?;
    let rc = h.decompress(bytes, &mut buf, pitch, format);
    if rc != 0 {
        let message = h.message();
        // Whether the image is usable is decided by its rows, not by TurboJPEG's error code: TurboJPEG 3
        // classes a failure as a warning whenever a warning came first, even when a fatal error followed
        // and stopped the decode before its rows (tj3GetErrorCode reports whether a warning happened,
        // not whether the decode went on). OpenCV's reader keeps an image once it has read all its rows,
        // even when an error follows them (in jpeg_finish_decompress), and refuses it otherwise
        // (tests/jpeg_warnings.rs: each libjpeg warning, alone and followed by a fatal error).
        if !h.wrote_every_row(bytes, &mut buf, pitch, format) {
            return Err(CoreError::invalid_image(format!("undecodable JPEG: {message}")));
        }
    }
    let img = if cmyk { cmyk_to_three(&buf, width, height, order)? } else { Image { width, height, channels: 3, data: buf } };
    Ok((img, exif::jpeg_orientation(bytes)))
}

/// OpenCV's CMYK conversion (Adobe-inverted CMYK as libjpeg returns it).
fn cmyk_to_three(src: &[u8], width: u32, height: u32, order: ChannelOrder) -> CoreResult<Image> {
    let mut out = try_buffer(width as usize * height as usize * 3)?;
    for (o, p) in out.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
        let k = p[3] as i32;
        let conv = |v: u8| (k - (((255 - v as i32) * k) >> 8)) as u8;
        let (r, g, b) = (conv(p[0]), conv(p[1]), conv(p[2]));
        match order {
            ChannelOrder::Bgr => o.copy_from_slice(&[b, g, r]),
            ChannelOrder::Rgb => o.copy_from_slice(&[r, g, b]),
        }
    }
    Ok(Image { width, height, channels: 3, data: out })
}
