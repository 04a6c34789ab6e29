//! DeepFace's `project_facial_area`: where the detected box lands after the sub-image is rotated
//! about its centre, with its int() truncations and clipping to the rotated image.

/// `area` = (x1, y1, x2, y2) in the sub-image, `angle` in degrees, `size` = (height, width).
pub fn project_facial_area(area: (i64, i64, i64, i64), angle: f64, size: (i64, i64)) -> (i64, i64, i64, i64) {
    let direction = if angle >= 0.0 { 1.0 } else { -1.0 };
    let angle = angle.abs() % 360.0;
    if angle == 0.0 {
        return area;
    }
    let rad = angle * std::f64::consts::PI / 180.0;
    let (height, width) = (size.0 as f64, size.1 as f64);
    let (ax1, ay1, ax2, ay2) = (area.0 as f64, area.1 as f64, area.2 as f64, area.3 as f64);
    let x = (ax1 + ax2) / 2.0 - width / 2.0;
    let y = (ay1 + ay2) / 2.0 - height / 2.0;
    let x_new = x * rad.cos() + y * direction * rad.sin() + width / 2.0;
    let y_new = -x * direction * rad.sin() + y * rad.cos() + height / 2.0;
    let x1 = x_new - (ax2 - ax1) / 2.0;
    let y1 = y_new - (ay2 - ay1) / 2.0;
    let x2 = x_new + (ax2 - ax1) / 2.0;
    let y2 = y_new + (ay2 - ay1) / 2.0;
    (
        (x1.trunc() as i64).max(0),
        (y1.trunc() as i64).max(0),
        (x2.trunc() as i64).min(size.1),
        (y2.trunc() as i64).min(size.0),
    )
}
