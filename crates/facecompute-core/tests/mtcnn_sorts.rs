//! The MTCNN references' tie orders (tools/reference/mtcnn_sort_orders.py ran numpy 2.1 and 1.26 and
//! torch 2.2 on tie-heavy float32 arrays): numpy_argsort must give numpy 1.26's permutations and
//! torch_sort_desc torch's, ties included. A sort that only orders values (a stable sort, say) fails
//! here. numpy 2.1's orders are recorded but not matched: on x86-64 it hands argsort to x86-simd-sort
//! (AVX2 or AVX-512, whichever the CPU has), whose tie order depends on the machine; numpy 1.26 on a CPU
//! without AVX-512, which facenet-pytorch's reference runs, takes the portable introsort.

use facecompute_core::detect::mtcnn::{numpy_argsort, torch_sort_desc};
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
    assert_eq!(checked, 2 * 8, "numpy 1.26, float32 and float64, 8 arrays");
}

#[test]
fn torch_sort_desc_gives_torchs_tie_order() {
    let f = fixture();
    let arrs = arrays(&f);
    let (lib, o) = f["orders"].as_object().unwrap().iter().find(|(k, _)| k.starts_with("torch-")).expect("torch orders");
    let want = orders(&o["sort_desc_float32"]);
    assert_eq!(want.len(), 8);
    for (a, w) in arrs.iter().zip(want) {
        assert_eq!(torch_sort_desc(a), w, "{lib} n={}", a.len());
    }
}
