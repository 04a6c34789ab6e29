//! The MTCNN references' tie orders (tools/reference/mtcnn_sort_orders.py ran numpy 2.1 and 1.26 and
//! torch 2.2 on tie-heavy float32 arrays): numpy_argsort must give numpy 1.26's permutations (the
//! portable introsort, facenet-pytorch's reference), numpy_avx2_argsort numpy 2.1.3's on float64 (on
//! x86-64 with AVX2 it hands argsort to x86-simd-sort: mtcnn 1.0.0's reference, whose candidate
//! scores are float64), torch_sort_desc torch's unstable descending sort and torch_stable_sort_desc
//! the order torchvision 0.17's CPU nms keeps tied scores in (recorded through nms itself), ties included. A sort that only orders values (a
//! stable sort, say) fails here. numpy 2.1's float32 orders (x86-simd-sort's 32-bit path) are
//! recorded but not used by either detector.

use facecompute_core::detect::mtcnn::{numpy_argsort, numpy_avx2_argsort, torch_sort_desc, torch_stable_sort_desc};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../test/fixtures/mtcnn/sort-orders.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("sort-orders.json")).expect("json")
}

fn arrays(v: &Value) -> Vec<Vec<f32>> {
    v["arrays"].as_array().unwrap().iter().map(|a| a.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()).collect()
}

fn orders(v: &Value) -> Vec<Vec<usize>> {
    v.as_array().unwrap().iter().map(|a| a.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()).collect()
}

#[test]
fn numpy_argsort_gives_numpys_tie_order() {
    let f = fixture();
    let arrs = arrays(&f);
    let mut checked = 0;
    for (lib, o) in f["orders"].as_object().unwrap() {
        if !lib.starts_with("numpy-1.") {
            continue;
        }
        for key in ["argsort_float32", "argsort_float64"] {
            for (a, want) in arrs.iter().zip(orders(&o[key])) {
                let v: Vec<f64> = a.iter().map(|&x| x as f64).collect();
                assert_eq!(numpy_argsort(&v), want, "{lib} {key} n={}", a.len());
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 12, "numpy 1.26, float32 and float64, 12 arrays");
}

/// Checks `sort` against the 12 orders the fixture recorded under `key` for the first library whose
/// name starts with `prefix` (e.g. "numpy-2.", "torch-").
fn assert_orders(prefix: &str, key: &str, sort: impl Fn(&[f32]) -> Vec<usize>) {
    let f = fixture();
    let arrs = arrays(&f);
    let (lib, o) = f["orders"].as_object().unwrap().iter().find(|(k, _)| k.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix} orders"));
    let want = orders(&o[key]);
    assert_eq!(want.len(), 12);
    for (a, w) in arrs.iter().zip(want) {
        assert_eq!(sort(a), w, "{lib} {key} n={}", a.len());
    }
}

#[test]
fn numpy_avx2_argsort_gives_numpy_2s_tie_order_on_float64() {
    assert_orders("numpy-2.", "argsort_float64", |a| numpy_avx2_argsort(&a.iter().map(|&x| x as f64).collect::<Vec<f64>>()));
}

#[test]
fn torch_sort_desc_gives_torchs_tie_order() {
    assert_orders("torch-", "sort_desc_float32", torch_sort_desc);
}

#[test]
fn torch_stable_sort_desc_gives_torchvision_nms_order() {
    assert_orders("torchvision-", "nms_order_float32", torch_stable_sort_desc);
}
