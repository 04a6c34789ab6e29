//! The `results` of a /compare answer written as JSON text straight from the kernel's arrays
//! `{"index":i,"distance":d,"verified":b,"confidence":c}` per result, with DeepFace's
//! rounding and confidence calibration (`src/deepface/decision.ts` is the reference; the TypeScript
//! tests compare both byte for byte). 100,000 results took ~130 ms as objects and JSON in
//! JavaScript, most of it formatting doubles; here every number is an integer count of 1e-6 or 1e-2
//! printed with its decimal point, a few nanoseconds each.
//!
//! The text equals JavaScript's `JSON.stringify` of the same values: a distance rounded to 6
//! decimals is the double nearest m/10⁶, whose shortest round-trip form is m's digits with the point
//! inserted and trailing zeros dropped (any shorter decimal would be another multiple of 10⁻⁶).

/// DeepFace's logistic calibration of one model and metric (`ConfidenceCoefficients` in TS).
#[derive(Debug, Clone, Copy)]
pub struct Confidence {
    pub w: f64,
    pub b: f64,
    pub normalizer: f64,
    pub max_true: f64,
    pub min_true: f64,
    pub max_false: f64,
    pub min_false: f64,
}

/// What every result's decision needs.
#[derive(Debug, Clone, Copy)]
pub struct Decide {
    /// `verified = distance <= threshold`.
    pub threshold: f64,
    /// The model's calibrated threshold, on which the confidence is calibrated.
    pub pretuned: f64,
    /// `None`: the model has no calibration (confidence 51 or 49).
    pub confidence: Option<Confidence>,
}

/// Appends the JSON array of one result list, or with `offsets` (K+1 entries) a JSON array of K lists.
pub fn write_results(out: &mut Vec<u8>, indices: &[u32], distances: &[f64], offsets: Option<&[u32]>, decide: &Decide) {
    out.reserve(indices.len() * 72 + 2);
    match offsets {
        None => write_list(out, indices, distances, decide),
        Some(offsets) => {
            out.push(b'[');
            for (i, w) in offsets.windows(2).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let (a, b) = (w[0] as usize, w[1] as usize);
                write_list(out, &indices[a..b], &distances[a..b], decide);
            }
            out.push(b']');
        }
    }
}

fn write_list(out: &mut Vec<u8>, indices: &[u32], distances: &[f64], decide: &Decide) {
    out.push(b'[');
    for (i, (&index, &raw)) in indices.iter().zip(distances).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let distance = round_distance(raw);
        let verified = distance <= decide.threshold;
        let confidence = find_confidence(distance, decide.confidence.as_ref(), distance <= decide.pretuned);
        out.extend_from_slice(b"{\"index\":");
        write_uint(out, index as u64);
        out.extend_from_slice(b",\"distance\":");
        write_scaled(out, distance, 1e6, 6);
        out.extend_from_slice(if verified { b",\"verified\":true,\"confidence\":" } else { b",\"verified\":false,\"confidence\":" });
        write_scaled(out, confidence, 1e2, 2);
        out.push(b'}');
    }
    out.push(b']');
}

/// `np.round(d, 6)` as DeepFace applies it: scale, round half to even, scale back.
pub fn round_distance(d: f64) -> f64 {
    if !d.is_finite() {
        return d;
    }
    (d * 1e6).round_ties_even() / 1e6
}

/// DeepFace's `find_confidence` in percent, rounded as Python's `round(x, 2)`.
pub fn find_confidence(distance: f64, c: Option<&Confidence>, verified: bool) -> f64 {
    if distance <= 0.0 {
        return if verified { 100.0 } else { 0.0 };
    }
    let Some(c) = c else {
        return if verified { 51.0 } else { 49.0 };
    };
    // A normalizer <= 1 is deliberately not applied: DeepFace divides only when it is > 1.
    let d = if c.normalizer > 1.0 { distance / c.normalizer } else { distance };
    let p = 100.0 * sigmoid(c.w * d + c.b);
    let (lo, hi, target_min, target_max) = if verified {
        (c.min_true, c.max_true, c.min_true.max(51.0), 100.0)
    } else {
        (c.min_false, c.max_false, 0.0, c.max_false.trunc().min(49.0))
    };
    let mut confidence = ((p - lo) / (hi - lo)) * (target_max - target_min) + target_min;
    confidence = if verified { confidence.max(51.0) } else { confidence.min(49.0) };
    round_confidence(confidence.clamp(0.0, 100.0))
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Python's `round(x, 2)`: exact ties (odd multiples of 1/8) to even, otherwise the decimal nearest
/// the exact binary value, as JavaScript's `toFixed(2)` picks it (ties there go up).
fn round_confidence(x: f64) -> f64 {
    let y8 = x * 8.0;
    if y8 == y8.trunc() && (x * 4.0) != (x * 4.0).trunc() {
        return (x * 100.0).round_ties_even() / 100.0;
    }
    // The exact x·100 is y + e (FMA gives the product's rounding error); decide the rounding of the
    // exact value, not of y.
    let y = x * 100.0;
    let e = x.mul_add(100.0, -y);
    let floor = y.floor();
    let above_half = (y - floor - 0.5) + e;
    let n = if above_half >= 0.0 { floor + 1.0 } else { floor };
    n / 100.0
}

fn write_uint(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

/// `value`, a multiple of 1/`scale` (scale = 10^decimals) rounded as above, printed as JavaScript
/// prints it. Values too large for that (never a realistic distance) use Rust's shortest form.
fn write_scaled(out: &mut Vec<u8>, value: f64, scale: f64, decimals: u32) {
    let m = (value * scale).round_ties_even();
    if m.is_nan() || m.abs() >= 9.0e15 || value.abs() >= 1e21 {
        out.extend_from_slice(format!("{value}").as_bytes());
        return;
    }
    let negative = m < 0.0;
    let m = m.abs() as u64;
    if m == 0 {
        out.push(b'0');
        return;
    }
    if negative {
        out.push(b'-');
    }
    let unit = 10u64.pow(decimals);
    write_uint(out, m / unit);
    let mut frac = m % unit;
    if frac == 0 {
        return;
    }
    let mut digits = decimals;
    while frac.is_multiple_of(10) {
        frac /= 10;
        digits -= 1;
    }
    out.push(b'.');
    let mut buf = [b'0'; 20];
    for i in (0..digits as usize).rev() {
        buf[i] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    out.extend_from_slice(&buf[..digits as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: f64, scale: f64, decimals: u32) -> String {
        let mut v = Vec::new();
        write_scaled(&mut v, value, scale, decimals);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        assert_eq!(text(0.727701, 1e6, 6), "0.727701");
        assert_eq!(text(0.5, 1e6, 6), "0.5");
        assert_eq!(text(0.000001, 1e6, 6), "0.000001");
        assert_eq!(text(1.0, 1e6, 6), "1");
        assert_eq!(text(-0.0, 1e6, 6), "0");
        assert_eq!(text(-0.25, 1e6, 6), "-0.25");
        assert_eq!(text(12345.000789, 1e6, 6), "12345.000789");
        assert_eq!(text(100.0, 1e2, 2), "100");
        assert_eq!(text(51.07, 1e2, 2), "51.07");
    }

    #[test]
    fn confidence_rounds_like_python() {
        assert_eq!(round_confidence(2.675), 2.67); // 2.675 is 2.67499999… in binary: JS toFixed and Python agree
        assert_eq!(round_confidence(0.125), 0.12); // an exact tie goes to even
        assert_eq!(round_confidence(0.375), 0.38);
        assert_eq!(round_confidence(99.999), 100.0);
    }
}
