//! Face crops to one model input batch, the way DeepFace's `represent` prepares them: each BGR uint8
//! face is divided by 255 (float64), letterboxed with `resize_image`, cast to float32 and passed
//! through `normalize_input`; models fed integers (Dlib, SFace) then truncate to uint8. With the
//! detector `skip`, DeepFace's `represent` letterboxes the uint8 image itself and divides afterwards
//! ([`Letterbox::Uint8`]).

use super::letterbox::{letterbox, letterbox_f64};
use super::resize::ImageF64;
use super::Image;
use crate::error::{CoreError, CoreResult};
use crate::image::ChannelOrder;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Nchw,
    Nhwc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preprocess {
    /// BGR float [0,1] letterboxed, then `normalize_input` (the Keras models).
    DeepfaceFloat,
    /// Then ×255 when the values are in [0,1] and truncated to uint8 (Dlib's `astype(uint8)`,
    /// SFace's `(img*255).astype(uint8)`), fed as float.
    Uint8Truncate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    Base,
    Raw,
    Facenet,
    Facenet2018,
    VggFace,
    VggFace2,
    ArcFace,
}

impl Normalization {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "base" => Self::Base,
            "raw" => Self::Raw,
            "Facenet" => Self::Facenet,
            "Facenet2018" => Self::Facenet2018,
            "VGGFace" => Self::VggFace,
            "VGGFace2" => Self::VggFace2,
            "ArcFace" => Self::ArcFace,
            _ => return None,
        })
    }
}

/// What `resize_image` receives: the order of DeepFace's letterbox and its division by 255.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Letterbox {
    /// The face divided by 255 (float64), then letterboxed as floats: every face a detector cut,
    /// and the whole image as `verify` (and `find`) embed it with `skip` (`extract_faces` divides).
    #[default]
    Float,
    /// The uint8 image letterboxed (OpenCV's fixed-point INTER_LINEAR, results rounded to uint8),
    /// then divided by 255 in float32 when its maximum is above 1: `represent` with `skip`.
    Uint8,
}

#[derive(Clone, Copy, Debug)]
pub struct TensorSpec {
    pub width: u32,
    pub height: u32,
    pub layout: Layout,
    /// Channel order the network receives.
    pub channel_order: ChannelOrder,
    pub preprocess: Preprocess,
    pub normalization: Normalization,
    pub letterbox: Letterbox,
}

/// Largest model input side accepted; real models use ≤ 224.
const MAX_INPUT_SIDE: u32 = 4096;

/// DeepFace's `normalize_input` on a BGR float32 HWC buffer (channel 0 is B).
pub fn normalize_input(x: &mut [f32], mode: Normalization) {
    if mode == Normalization::Base {
        return;
    }
    for v in x.iter_mut() {
        *v *= 255.0;
    }
    match mode {
        Normalization::Base | Normalization::Raw => {}
        Normalization::Facenet => {
            let n = x.len().max(1) as f64;
            let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            // A constant face has no deviation: numpy divides 0 by 0 and DeepFace's model answers a
            // NaN embedding. The floor TensorFlow's per_image_standardization uses (1/sqrt(N)) keeps
            // the input finite (zeros for a constant face) and changes nothing for a real face.
            let std = var.sqrt().max(1.0 / n.sqrt());
            let (mean, std) = (mean as f32, std as f32);
            for v in x.iter_mut() {
                *v = (*v - mean) / std;
            }
        }
        Normalization::Facenet2018 => {
            for v in x.iter_mut() {
                *v /= 127.5;
                *v -= 1.0;
            }
        }
        Normalization::VggFace | Normalization::VggFace2 => {
            let m: [f32; 3] = if mode == Normalization::VggFace {
                [93.5940, 104.7624, 129.1863]
            } else {
                [91.4953, 103.8827, 131.0912]
            };
            for p in x.chunks_exact_mut(3) {
                for c in 0..3 {
                    p[c] -= m[c];
                }
            }
        }
        Normalization::ArcFace => {
            for v in x.iter_mut() {
                *v -= 127.5;
                *v /= 128.0;
            }
        }
    }
}

/// One face as the model's HWC float32 input in BGR order, before layout and channel order.
pub fn face_input(face: &Image, spec: &TensorSpec) -> CoreResult<Vec<f32>> {
    if face.channels != 3 || face.width == 0 || face.height == 0 {
        return Err(CoreError::invalid_request("a face must be a non-empty 3-channel image"));
    }
    let mut x: Vec<f32> = match spec.letterbox {
        Letterbox::Float => {
            let f = ImageF64 {
                width: face.width,
                height: face.height,
                channels: 3,
                data: face.data.iter().map(|&v| v as f64 / 255.0).collect(),
            };
            letterbox_f64(&f, spec.width, spec.height)?.data.iter().map(|&v| v as f32).collect()
        }
        Letterbox::Uint8 => {
            let boxed = letterbox(face, spec.width, spec.height)?;
            // `if img.max() > 1: img = (img.astype(np.float32) / 255.0).astype(np.float32)`
            let divide = boxed.data.iter().any(|&v| v > 1);
            boxed.data.iter().map(|&v| if divide { v as f32 / 255.0 } else { v as f32 }).collect()
        }
    };
    normalize_input(&mut x, spec.normalization);
    if spec.preprocess == Preprocess::Uint8Truncate {
        let scale = if x.iter().fold(f32::MIN, |a, &b| a.max(b)) <= 1.0 { 255.0 } else { 1.0 };
        for v in x.iter_mut() {
            // numpy's astype(uint8) truncates toward zero; out-of-range values saturate here.
            *v = (*v * scale).trunc().clamp(0.0, 255.0);
        }
    }
    Ok(x)
}

/// All faces letterboxed and preprocessed into one batch tensor.
pub fn faces_to_tensor(faces: &[Image], spec: &TensorSpec) -> CoreResult<Vec<f32>> {
    if spec.width == 0 || spec.height == 0 || spec.width > MAX_INPUT_SIDE || spec.height > MAX_INPUT_SIDE {
        return Err(CoreError::invalid_request("model input size is out of range"));
    }
    let plane = spec.width as usize * spec.height as usize;
    let mut out = Vec::with_capacity(faces.len() * plane * 3);
    for face in faces {
        let x = face_input(face, spec)?;
        // Source channel index for each output channel: the buffer is BGR.
        let order: [usize; 3] = match spec.channel_order {
            ChannelOrder::Bgr => [0, 1, 2],
            ChannelOrder::Rgb => [2, 1, 0],
        };
        match spec.layout {
            Layout::Nhwc => {
                for p in x.chunks_exact(3) {
                    out.extend(order.iter().map(|&c| p[c]));
                }
            }
            Layout::Nchw => {
                for &c in &order {
                    out.extend(x.chunks_exact(3).map(|p| p[c]));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found by the OpenAPI fuzz: /represent of a uniform image with normalization=Facenet gave NaN
    // embeddings, which the response serializer refused (500).
    #[test]
    fn facenet_normalization_of_a_constant_face_is_finite() {
        let mut x = vec![0.5f32; 12];
        normalize_input(&mut x, Normalization::Facenet);
        assert!(x.iter().all(|v| *v == 0.0), "{x:?}");
        // A real face keeps the plain standardization.
        let mut y: Vec<f32> = (0..12).map(|i| i as f32 / 11.0).collect();
        let (n, mean) = (12.0f64, (0..12).map(|i| i as f64 / 11.0 * 255.0).sum::<f64>() / 12.0);
        let std = ((0..12).map(|i| (i as f64 / 11.0 * 255.0 - mean).powi(2)).sum::<f64>() / n).sqrt();
        normalize_input(&mut y, Normalization::Facenet);
        assert!((y[11] as f64 - (255.0 - mean) / std).abs() < 1e-5, "{}", y[11]);
    }

    // Found by the `pixels` fuzz target: a constant face under Facenet's normalization divided by a
    // zero deviation; a model fed integers must get integers in [0, 255], never NaN.
    #[test]
    fn uint8_truncation_never_yields_nan() {
        let face = Image::from_raw(4, 4, 3, vec![128; 48]).unwrap();
        for letterbox in [Letterbox::Float, Letterbox::Uint8] {
            let spec = TensorSpec {
                width: 4,
                height: 4,
                layout: Layout::Nchw,
                channel_order: ChannelOrder::Rgb,
                preprocess: Preprocess::Uint8Truncate,
                normalization: Normalization::Facenet,
                letterbox,
            };
            let t = faces_to_tensor(&[face.clone()], &spec).unwrap();
            assert!(t.iter().all(|v| (0.0..=255.0).contains(v) && v.fract() == 0.0), "{letterbox:?}: {:?}", &t[..4]);
        }
    }
}
