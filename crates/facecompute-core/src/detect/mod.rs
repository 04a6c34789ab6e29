//! Face detectors' pure parts: the Haar cascade (`haar`), RetinaFace and YuNet output decoding and
//! non-maximum suppression. Inference of the ONNX detectors runs in ONNX Runtime, not here.

pub mod haar;
pub mod opencv;
