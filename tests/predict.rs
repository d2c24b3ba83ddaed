//! `regtune predict` on a real compile: the cost model's view of the
//! Laplacian's candidates, from the assembly the backend printed.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

mod common;

use assert_cmd::Command;
use common::repo;
use serde_json::Value;

fn candidates() -> Vec<Value> {
    let out = Command::cargo_bin("regtune")
        .unwrap()
        .current_dir(repo())
        .args(["predict", "--noalias", "off", "examples/laplacian3d.hip"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("predict prints JSON");
    assert_eq!(doc["machines"][0][0], "gfx90a", "{}", doc["machines"]);
    doc["candidates"].as_array().unwrap().clone()
}

#[test]
fn the_laplacian_candidates_as_the_model_sees_them() {
    let all = candidates();
    let find = |labels: &[&str]| {
        all.iter()
            .find(|c| c["transforms"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).eq(labels.iter().copied()))
            .unwrap_or_else(|| panic!("no candidate {labels:?}"))
    };
    let plain = find(&[]);
    assert_eq!(plain["decision"], "plain");
    assert_eq!(plain["predicted_speedup"], 1.0);
    // Fully unrolled: no loop left. Capped at 1: the tile loop, 16 trips.
    assert_eq!(plain["profile"]["loops"], serde_json::json!([]));
    let capped = find(&["unroll-cap=1"]);
    assert_eq!(capped["profile"]["loops"][0]["trips"], 16, "{capped}");
    // The same global traffic, more instructions (loop overhead).
    assert_eq!(capped["profile"]["memory_bytes"], plain["profile"]["memory_bytes"]);
    assert!(capped["profile"]["instructions"].as_f64() > plain["profile"]["instructions"].as_f64());
    // waves-per-eu=6 keeps the instructions but serializes the loads: one
    // wave alone takes several times as long, and it is held back.
    let hinted = find(&["waves-per-eu=6"]);
    let ratio = |c: &Value, key: &str| c["profile"][key].as_f64().unwrap() / plain["profile"][key].as_f64().unwrap();
    assert!(ratio(hinted, "instructions") < 1.05, "{hinted}");
    assert!(ratio(hinted, "latency_cycles") > 3.0, "{hinted}");
    assert!(hinted["predicted_speedup"].as_f64() < Some(0.98), "{hinted}");
    assert_ne!(hinted["decision"], "applied");
    assert_eq!(find(&["unroll-cap=1", "waves-per-eu=6"])["decision"], "suggested");
}
