//! Pixel operations matching OpenCV (issue 2). Owned by the image work.
