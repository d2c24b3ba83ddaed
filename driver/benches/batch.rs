//! `regtune batch` throughput over a compile_commands.json covering
//! examples/: units per minute with `-j 1` and `-j 2` (cold: a fresh db each
//! time), and what a second run over an unchanged codebase costs next to a
//! cold one. Interleaved, so a noisy machine slows each alike. Not a test:
//! nothing here fails on a slow day.
//!
//!     cargo bench -p regtune --bench batch [-- REPS]
//!
//! Target (issue 6): a warm run costs at most 5% of a cold one.

// A benchmark fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Seconds for one `regtune batch`; it must succeed.
fn batch(compile_db: &Path, db: &Path, jobs: &str) -> f64 {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/regtune");
    let mut cmd = Command::new(bin);
    cmd.args(["batch", "--format", "json", "-j", jobs, "-p"]).arg(compile_db).arg("--db").arg(db);
    let start = Instant::now();
    let out = cmd.output().expect("run regtune");
    let elapsed = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    elapsed
}

/// The 1-minute load average.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| l.split_whitespace().next().map(str::to_string)).unwrap_or_default()
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(3);
    let status = Command::new("cargo").args(["build", "--release", "--workspace", "--quiet"]).status().unwrap();
    assert!(status.success(), "release build failed");
    let dir = tempfile::tempdir().unwrap();
    let examples = common::examples();
    let entries: Vec<serde_json::Value> = examples
        .iter()
        .map(|f| {
            serde_json::json!({
                "directory": dir.path(),
                "file": f,
                "arguments": ["clang++", "-x", "hip", "--offload-arch=gfx90a", "-O3", "-c", f, "-o", "k.o"],
            })
        })
        .collect();
    let compile_db = dir.path().join("compile_commands.json");
    std::fs::write(&compile_db, serde_json::to_string(&entries).unwrap()).unwrap();
    let units = entries.len() as f64;

    // Other work on the machine skews the -j comparison: say how busy it was.
    let load_before = load();
    // A first round warms the file cache and the device-library overlay.
    batch(&compile_db, &dir.path().join("warmup.json"), "2");
    let (mut j1, mut j2, mut warm) = (vec![], vec![], vec![]);
    for rep in 0..reps {
        j1.push(batch(&compile_db, &dir.path().join(format!("j1-{rep}.json")), "1"));
        let db = dir.path().join(format!("j2-{rep}.json"));
        j2.push(batch(&compile_db, &db, "2"));
        warm.push(batch(&compile_db, &db, "2"));
    }
    let (t1, t2, tw) = (median(j1), median(j2), median(warm));
    println!("{} units (examples/, gfx90a), median of {reps} interleaved runs each", entries.len());
    println!("load average before / after: {load_before} / {}", load());
    println!("cold -j 1: {t1:>7.2} s  {:>6.1} units/min", units * 60.0 / t1);
    println!("cold -j 2: {t2:>7.2} s  {:>6.1} units/min   speed-up over -j 1: {:.2}×", units * 60.0 / t2, t1 / t2);
    println!("warm -j 2: {tw:>7.2} s  = {:.1}% of the cold run (target ≤ 5%)", 100.0 * tw / t2);
}
