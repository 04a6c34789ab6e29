//! Pixel operations matching OpenCV, on 8-bit interleaved images.
//!
//! Signatures here are the seam the detectors and the model pipeline code against. Each operation
//! reproduces OpenCV 4.9's arithmetic (fixed point where OpenCV uses it), and is checked against
//! fixtures from tools/reference/opencv_pixels.py.

mod border;
mod downscale;
pub(crate) mod gray;
mod letterbox;
mod resize;
mod tensor;
mod warp;

pub use border::{bordered_size, copy_make_border, copy_make_border_raw, crop_clipped, crop_padded};
pub use downscale::downscale_max_side;
pub use gray::bgr_to_gray;
pub use letterbox::{letterbox, letterbox_f64, letterbox_geometry};
pub use resize::{resize, resize_factor, resize_linear_f64, ImageF64};
pub use tensor::{face_input, faces_to_tensor, normalize_input, Layout, Letterbox, Normalization, Preprocess, TensorSpec};
pub use warp::{rotate, rotate_roi, rotation_matrix, warp_affine_cubic, warp_affine_cubic_roi};

/// An 8-bit image, rows top to bottom, channels interleaved (`channels` is 1 or 3). The channel order
/// of a 3-channel image is whatever its producer documents; the pipeline keeps BGR like OpenCV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Vec<u8>,
}

impl Image {
    pub fn new(width: u32, height: u32, channels: u32) -> Self {
        Self { width, height, channels, data: vec![0; width as usize * height as usize * channels as usize] }
    }
    pub fn from_raw(width: u32, height: u32, channels: u32, data: Vec<u8>) -> Option<Self> {
        (data.len() == width as usize * height as usize * channels as usize).then_some(Self { width, height, channels, data })
    }
    #[inline]
    pub fn stride(&self) -> usize {
        self.width as usize * self.channels as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// OpenCV INTER_LINEAR.
    Linear,
    /// OpenCV INTER_CUBIC.
    Cubic,
    /// OpenCV INTER_AREA.
    Area,
}
