//! Face detectors' pure parts: the Haar cascade (`haar`), RetinaFace and YuNet output decoding and
//! non-maximum suppression. Inference of the ONNX detectors runs in ONNX Runtime, not here.

pub mod haar;
pub mod opencv;
pub mod mtcnn;
pub mod nms;
pub mod retinaface;
pub mod yunet;

use crate::error::{CoreError, CoreResult};

/// A dense float32 tensor as ONNX Runtime hands it over (row-major, `dims` multiply to `data.len()`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dims: Vec<usize>,
    pub data: Vec<f32>,
}

impl Tensor {
    pub fn new(dims: Vec<usize>, data: Vec<f32>) -> CoreResult<Self> {
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(data.len()) {
            return Err(CoreError::invalid_request(format!("tensor dims {dims:?} do not match its {} values", data.len())));
        }
        Ok(Self { dims, data })
    }

    pub(crate) fn expect_shape(&self, dims: &[usize], name: &str) -> CoreResult<()> {
        if self.dims != dims || self.data.len() != dims.iter().product::<usize>() {
            return Err(CoreError::invalid_request(format!("{name}: expected shape {dims:?}, got {:?}", self.dims)));
        }
        Ok(())
    }
}

/// One detection in original-image pixels, before any DeepFace integer casting.
/// `landmarks` are the person's `[right_eye, left_eye, nose, mouth_right, mouth_left]`: index 0 is
/// on the image's left for a frontal face.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaceBox {
    pub x1: f32,
    pub y1: f32,
    pub x2: f32,
    pub y2: f32,
    pub score: f32,
    pub landmarks: [[f32; 2]; 5],
}

/// A detection as DeepFace's detector wrappers hand it to `detect_faces`: integer box and points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntFace {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    /// Same order as [`FaceBox::landmarks`].
    pub landmarks: [[i32; 2]; 5],
}

impl FaceBox {
    /// DeepFace's RetinaFace wrapper: `facial_area` is `astype(int)` of x1,y1,x2,y2 (truncation),
    /// `w = x2 - x1`, `h = y2 - y1`, landmarks `int()` each.
    pub fn deepface_retinaface(&self) -> IntFace {
        let (x1, y1, x2, y2) = (self.x1 as i32, self.y1 as i32, self.x2 as i32, self.y2 as i32);
        let mut lm = [[0i32; 2]; 5];
        for (o, p) in lm.iter_mut().zip(self.landmarks.iter()) {
            *o = [p[0] as i32, p[1] as i32];
        }
        IntFace { x: x1, y: y1, w: x2 - x1, h: y2 - y1, landmarks: lm }
    }
}
