//! MTCNN as DeepFace's two backends run it, between ONNX Runtime's network runs:
//! - `mtcnn`: ipazc's mtcnn 1.0.0 (TensorFlow), flavour [`Flavor::Mtcnn`], module `tf`;
//! - `fastmtcnn`: facenet-pytorch 2.6.0's MTCNN (PyTorch), flavour [`Flavor::FacenetPytorch`],
//!   module `torch`.
//!
//! The same three networks, but each library builds its pyramid, crops, thresholds, suppresses and
//! regresses its own way, in its own float width (mtcnn: float32 pixels, float64 boxes; facenet-pytorch:
//! float32 throughout), so each flavour reproduces its library's arithmetic step by step.
//!
//! The flow, with the networks run by the caller in between (crates/facecompute-node, ONNX Runtime):
//!   [`pyramid`] -> PNet on each level -> [`after_pnet`] -> [`crops`] 24 -> RNet -> [`after_rnet`]
//!   -> [`crops`] 48 -> ONet -> [`after_onet`] -> faces in DeepFace's integers.
//! Boxes travel as `[x1, y1, x2, y2, score]` rows in f64 (facenet-pytorch's f32 values exactly).
//! Images are the pipeline's BGR; both libraries see RGB, which the tensors are written in.

mod sorts;
mod tf;
mod torch;
mod xss_argsort;

pub use sorts::{numpy_argsort, torch_sort_desc, torch_stable_sort_desc};
pub use xss_argsort::numpy_avx2_argsort;

use super::{FaceBox, IntFace, Tensor};
use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// ipazc mtcnn 1.0.0: DeepFace's `mtcnn`.
    Mtcnn,
    /// facenet-pytorch 2.6.0: DeepFace's `fastmtcnn`.
    FacenetPytorch,
}

/// One level of the image pyramid: the PNet input `[1, 3, height, width]` (RGB, normalised).
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub scale: f64,
    pub width: u32,
    pub height: u32,
    pub tensor: Vec<f32>,
}

pub type Row = [f64; 5];

/// A face as the library hands it to DeepFace, and as DeepFace's wrapper turns it into integers.
#[derive(Clone, Debug, PartialEq)]
pub struct Face {
    pub raw: FaceBox,
    pub int: IntFace,
}

/// The most candidate boxes a stage keeps: far above what a photo gives (a few hundred), it bounds
/// the all-pairs suppression (mtcnn's is quadratic) and the crop tensors for a hostile image.
pub const MAX_CANDIDATES: usize = 20_000;

/// A pyramid level with more PNet candidates than [`MAX_CANDIDATES`] is refused before its
/// quadratic suppression runs (DeepFace itself would build a 20,000² IoU matrix there: 3.2 GB).
fn too_many(n: usize) -> CoreResult<()> {
    if n > MAX_CANDIDATES {
        return Err(CoreError::invalid_image(format!("mtcnn: {n} face candidates on one pyramid level (at most {MAX_CANDIDATES}): not an image mtcnn can search")));
    }
    Ok(())
}

fn check_image(img: &Image) -> CoreResult<()> {
    if img.channels != 3 || img.width == 0 || img.height == 0 || img.data.len() != img.stride() * img.height as usize {
        return Err(CoreError::invalid_image("mtcnn expects a non-empty 3-channel BGR image"));
    }
    Ok(())
}

/// The library's pyramid scales for an image of `width`×`height`, largest first.
pub fn scales(flavor: Flavor, width: u32, height: u32) -> Vec<f64> {
    match flavor {
        Flavor::Mtcnn => tf::scales(width, height),
        Flavor::FacenetPytorch => torch::scales(width, height),
    }
}

/// The PNet input of one pyramid level, at one of [`scales`]; none when the library skips it (a
/// level that truncates to nothing). Built one at a time, a large image's pyramid never exists
/// whole: the first level alone is 0.36 of the image in float32 RGB.
pub fn pyramid_level(img: &Image, flavor: Flavor, scale: f64) -> CoreResult<Option<Level>> {
    check_image(img)?;
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(CoreError::invalid_request("mtcnn: a pyramid scale is within (0, 1]"));
    }
    Ok(match flavor {
        Flavor::Mtcnn => tf::level(img, scale),
        Flavor::FacenetPytorch => torch::level(img, scale),
    })
}

/// The PNet inputs for every pyramid level, largest first (the library's scales and sizes).
pub fn pyramid(img: &Image, flavor: Flavor) -> CoreResult<Vec<Level>> {
    check_image(img)?;
    let mut levels = Vec::new();
    for s in scales(flavor, img.width, img.height) {
        levels.extend(pyramid_level(img, flavor, s)?);
    }
    Ok(levels)
}

/// PNet's outputs of each level (`reg` [1,4,h,w], `prob` [1,2,h,w], in [`pyramid`]'s order) to the
/// squared candidate boxes RNet is given.
pub fn after_pnet(flavor: Flavor, width: u32, height: u32, levels: &[(f64, &Tensor, &Tensor)]) -> CoreResult<Vec<Row>> {
    for (_, reg, prob) in levels {
        let [n, c, h, w] = dims4(reg, "pnet reg")?;
        prob.expect_shape(&[n, 2, h, w], "pnet prob")?;
        if n != 1 || c != 4 {
            return Err(CoreError::invalid_request("pnet outputs must be [1,4,h,w] and [1,2,h,w]"));
        }
    }
    let rows = match flavor {
        Flavor::Mtcnn => tf::after_pnet(levels)?,
        Flavor::FacenetPytorch => torch::after_pnet(width, height, levels)?,
    };
    Ok(cap(rows))
}

/// The `size`×`size` crops of `boxes` (24 for RNet, 48 for ONet), NCHW RGB normalised as the
/// library normalises them.
pub fn crops(img: &Image, flavor: Flavor, boxes: &[Row], size: u32) -> CoreResult<Vec<f32>> {
    check_image(img)?;
    if size != 24 && size != 48 {
        return Err(CoreError::invalid_request("mtcnn crops are 24 or 48 pixels"));
    }
    check_rows(boxes)?;
    Ok(match flavor {
        Flavor::Mtcnn => tf::crops(img, boxes, size as usize),
        Flavor::FacenetPytorch => torch::crops(img, boxes, size as usize),
    })
}

/// RNet's outputs (`reg` [N,4], `prob` [N,2]) on the crops of `boxes` to the boxes ONet is given.
pub fn after_rnet(flavor: Flavor, boxes: &[Row], reg: &Tensor, prob: &Tensor) -> CoreResult<Vec<Row>> {
    check_rows(boxes)?;
    reg.expect_shape(&[boxes.len(), 4], "rnet reg")?;
    prob.expect_shape(&[boxes.len(), 2], "rnet prob")?;
    Ok(match flavor {
        Flavor::Mtcnn => tf::after_rnet(boxes, &reg.data, &prob.data),
        Flavor::FacenetPytorch => torch::after_rnet(boxes, &reg.data, &prob.data),
    })
}

/// ONet's outputs (`reg` [N,4], `landmarks` [N,10], `prob` [N,2]) to the faces, in the order the
/// library returns them, for an image of `width`×`height` (the one given to [`pyramid`]).
pub fn after_onet(flavor: Flavor, width: u32, height: u32, boxes: &[Row], reg: &Tensor, landmarks: &Tensor, prob: &Tensor) -> CoreResult<Vec<Face>> {
    if width == 0 || height == 0 {
        return Err(CoreError::invalid_request("mtcnn: empty image size"));
    }
    check_rows(boxes)?;
    reg.expect_shape(&[boxes.len(), 4], "onet reg")?;
    landmarks.expect_shape(&[boxes.len(), 10], "onet landmarks")?;
    prob.expect_shape(&[boxes.len(), 2], "onet prob")?;
    Ok(match flavor {
        Flavor::Mtcnn => tf::after_onet(width, height, boxes, &reg.data, &landmarks.data, &prob.data),
        Flavor::FacenetPytorch => torch::after_onet(boxes, &reg.data, &landmarks.data, &prob.data),
    })
}

fn dims4(t: &Tensor, name: &str) -> CoreResult<[usize; 4]> {
    match t.dims.as_slice() {
        &[a, b, c, d] if t.data.len() == a * b * c * d => Ok([a, b, c, d]),
        _ => Err(CoreError::invalid_request(format!("{name}: expected 4 dimensions, got {:?}", t.dims))),
    }
}

fn check_rows(rows: &[Row]) -> CoreResult<()> {
    if rows.len() > MAX_CANDIDATES {
        return Err(CoreError::invalid_request(format!("mtcnn: more than {MAX_CANDIDATES} candidate boxes")));
    }
    if rows.iter().any(|r| r.iter().any(|v| !v.is_finite())) {
        return Err(CoreError::invalid_request("mtcnn: candidate boxes must be finite"));
    }
    Ok(())
}

fn cap(mut rows: Vec<Row>) -> Vec<Row> {
    rows.truncate(MAX_CANDIDATES);
    rows.retain(|r| r.iter().all(|v| v.is_finite()));
    rows
}

/// `[x1, y1, x2, y2, score]` rows from flat values (the binding's transport), checked.
pub fn rows_from_flat(flat: &[f64]) -> CoreResult<Vec<Row>> {
    if flat.len() % 5 != 0 {
        return Err(CoreError::invalid_request("mtcnn boxes must be rows of 5 values"));
    }
    let rows: Vec<Row> = flat.chunks_exact(5).map(|c| [c[0], c[1], c[2], c[3], c[4]]).collect();
    check_rows(&rows)?;
    Ok(rows)
}

/// The mtcnn/facenet-pytorch "rerec": squares a box about its centre on its longer side.
fn square_f64(r: &mut Row) {
    let h = r[3] - r[1];
    let w = r[2] - r[0];
    let l = w.max(h);
    r[0] = r[0] + w * 0.5 - l * 0.5;
    r[1] = r[1] + h * 0.5 - l * 0.5;
    r[2] = r[0] + l;
    r[3] = r[1] + l;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_inputs_without_panicking() {
        let img = Image::new(0, 0, 3);
        assert!(pyramid(&img, Flavor::Mtcnn).is_err());
        let img = Image::new(30, 30, 1);
        assert!(pyramid(&img, Flavor::FacenetPytorch).is_err());
        assert!(rows_from_flat(&[1.0, 2.0]).is_err());
        assert!(rows_from_flat(&[0.0, 0.0, f64::NAN, 1.0, 0.5]).is_err());
        let img = Image::new(30, 30, 3);
        assert!(crops(&img, Flavor::Mtcnn, &[[0.0, 0.0, 10.0, 10.0, 0.9]], 12).is_err());
        let t = Tensor::new(vec![1, 4], vec![0.0; 4]).unwrap();
        assert!(after_rnet(Flavor::Mtcnn, &[], &t, &t).is_err());
    }

    #[test]
    fn levels_one_at_a_time_are_the_pyramid() {
        let data: Vec<u8> = (0..61 * 47 * 3).map(|i| (i * 7 % 251) as u8).collect();
        let img = Image::from_raw(61, 47, 3, data).unwrap();
        for flavor in [Flavor::Mtcnn, Flavor::FacenetPytorch] {
            let whole = pyramid(&img, flavor).unwrap();
            let one: Vec<Level> = scales(flavor, 61, 47).into_iter().filter_map(|s| pyramid_level(&img, flavor, s).unwrap()).collect();
            assert!(!whole.is_empty());
            assert_eq!(whole, one);
            assert!(pyramid_level(&img, flavor, 0.0).is_err());
            assert!(pyramid_level(&img, flavor, f64::NAN).is_err());
        }
    }

    #[test]
    fn a_level_with_too_many_candidates_is_refused_not_searched() {
        // Every cell of a 150×150 PNet output says "face": 22,500 candidates > 20,000.
        let (h, w) = (150, 150);
        let reg = Tensor::new(vec![1, 4, h, w], vec![0.0; 4 * h * w]).unwrap();
        let mut p = vec![0.0f32; 2 * h * w];
        p[h * w..].iter_mut().for_each(|v| *v = 0.99);
        let prob = Tensor::new(vec![1, 2, h, w], p).unwrap();
        for flavor in [Flavor::Mtcnn, Flavor::FacenetPytorch] {
            let err = after_pnet(flavor, 400, 400, &[(0.6, &reg, &prob)]).unwrap_err();
            assert_eq!(err.code.as_str(), "invalid_image");
        }
    }

    #[test]
    fn tiny_images_have_no_levels_and_no_faces() {
        for flavor in [Flavor::Mtcnn, Flavor::FacenetPytorch] {
            let img = Image::new(15, 15, 3);
            assert!(pyramid(&img, flavor).unwrap().is_empty());
            assert!(after_pnet(flavor, 15, 15, &[]).unwrap().is_empty());
        }
    }
}
