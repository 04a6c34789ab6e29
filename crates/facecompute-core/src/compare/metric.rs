//! The four DeepFace distance metrics (reference §4.1), finished from per-row sums accumulated in f64.

use crate::error::{CoreError, CoreResult};

/// DeepFace adds this to norms before dividing in `euclidean_l2` (and in its batch cosine form).
pub const L2_EPSILON: f64 = 1e-10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Cosine,
    Euclidean,
    EuclideanL2,
    Angular,
}

impl Metric {
    pub const ALL: [Metric; 4] = [Metric::Cosine, Metric::Euclidean, Metric::EuclideanL2, Metric::Angular];

    pub fn parse(name: &str) -> CoreResult<Metric> {
        match name {
            "cosine" => Ok(Metric::Cosine),
            "euclidean" => Ok(Metric::Euclidean),
            "euclidean_l2" => Ok(Metric::EuclideanL2),
            "angular" => Ok(Metric::Angular),
            other => Err(CoreError::invalid_request(format!(
                "unknown distance_metric '{}': expected cosine, euclidean, euclidean_l2 or angular",
                other.chars().take(40).collect::<String>()
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::Euclidean => "euclidean",
            Metric::EuclideanL2 => "euclidean_l2",
            Metric::Angular => "angular",
        }
    }

    /// Euclidean needs Σ(q−t)² read directly: expanding it as |q|²+|t|²−2q·t cancels catastrophically
    /// for large, nearly equal vectors. The other three only need q·t and |t|².
    #[inline(always)]
    pub(crate) fn reads_difference(self) -> bool {
        matches!(self, Metric::Euclidean)
    }

    /// Turns one row's sums into its distance. For `reads_difference` metrics `a` is Σ(q−t)²; for the
    /// others `a` is q·t and `b` is |t|². A non-finite sum can only come from a non-finite input
    /// (f32 values squared and summed stay far inside f64's range), so it is reported as NaN, which
    /// the caller turns into `invalid_embedding` naming the row.
    #[inline(always)]
    pub(crate) fn finish(self, q: &QueryStats, a: f64, b: f64) -> f64 {
        match self {
            Metric::Euclidean => {
                if a.is_finite() {
                    a.sqrt()
                } else {
                    f64::NAN
                }
            }
            Metric::Cosine => {
                if !b.is_finite() {
                    return f64::NAN;
                }
                1.0 - cosine_similarity(q, a, b)
            }
            Metric::Angular => {
                if !b.is_finite() {
                    return f64::NAN;
                }
                // DeepFace does not clamp, so rounding noise just above 1 gives NaN there; clamping
                // into arccos' domain keeps the answer defined and changes nothing else.
                cosine_similarity(q, a, b).clamp(-1.0, 1.0).acos() / std::f64::consts::PI
            }
            Metric::EuclideanL2 => {
                if !b.is_finite() {
                    return f64::NAN;
                }
                // ‖q/(‖q‖+ε) − t/(‖t‖+ε)‖ expanded so one pass over t suffices. In f64 the
                // cancellation near 0 costs at most √(1e-15) ≈ 3e-8, well inside the 1e-6 we promise.
                let tn = b.sqrt() + L2_EPSILON;
                let sq = q.qq / (q.l2_denominator * q.l2_denominator) + b / (tn * tn)
                    - 2.0 * a / (q.l2_denominator * tn);
                sq.max(0.0).sqrt()
            }
        }
    }
}

/// A zero vector has no direction; its similarity is taken as 0, which is what DeepFace's batch
/// form (rows normalised with ε = 1e-10) gives, instead of the 0/0 NaN of the pairwise form.
#[inline(always)]
fn cosine_similarity(q: &QueryStats, dot: f64, tt: f64) -> f64 {
    let denominator = q.norm * tt.sqrt();
    if denominator == 0.0 {
        0.0
    } else {
        dot / denominator
    }
}

/// What every row's distance needs to know about the query, computed once.
#[derive(Debug, Clone, Copy)]
pub struct QueryStats {
    pub qq: f64,
    pub norm: f64,
    pub l2_denominator: f64,
}

impl QueryStats {
    pub fn of(query: &[f64]) -> QueryStats {
        let qq: f64 = query.iter().map(|x| x * x).sum();
        let norm = qq.sqrt();
        QueryStats { qq, norm, l2_denominator: norm + L2_EPSILON }
    }
}
