//! What regtune costs next to a plain device compile, measured side by side
//! in one run (interleaved, so a noisy machine slows both alike) and printed
//! as ratios. Not a test: nothing here fails on a slow day.
//!
//!     cargo bench -p regtune --bench overhead [-- REPS]
//!
//! Targets (from the issues): report ≤ 1.10×, tune ≤ 3× (medians over examples/).

// A benchmark fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn time(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    start.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn regtune(args: &[&str], file: &Path, db: &Path) -> Command {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/regtune");
    let mut cmd = Command::new(bin);
    cmd.args(args).arg("--format").arg("json").arg(file);
    if args[0] == "tune" {
        cmd.arg("--db").arg(db);
    }
    cmd
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5);
    let status = Command::new("cargo").args(["build", "--release", "--workspace", "--quiet"]).status().unwrap();
    assert!(status.success(), "release build failed");
    let arch = "gfx90a";
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("plain.o");
    println!("{:<28} {:>9} {:>9} {:>8} {:>9} {:>8}", "example", "plain s", "report s", "ratio", "tune s", "ratio");
    let (mut report_ratios, mut tune_ratios) = (vec![], vec![]);
    for file in common::examples() {
        let (mut plain, mut report, mut tune) = (vec![], vec![], vec![]);
        for rep in 0..=reps {
            let mut p = common::hip_device_compile(&file, arch);
            p.arg("-c").arg("-o").arg(&obj);
            let t_plain = time(p).as_secs_f64();
            let t_report = time(regtune(&["report", "--offload-arch", arch], &file, dir.path())).as_secs_f64();
            // A fresh db each time: tuning from a cold start.
            let db = dir.path().join(format!("db{rep}.json"));
            let t_tune = time(regtune(&["tune", "--offload-arch", arch], &file, &db)).as_secs_f64();
            if rep > 0 {
                // The first round warms caches and is not counted.
                plain.push(t_plain);
                report.push(t_report);
                tune.push(t_tune);
            }
        }
        let (p, r, t) = (median(plain), median(report), median(tune));
        report_ratios.push(r / p);
        tune_ratios.push(t / p);
        let name = file.file_name().unwrap().to_string_lossy();
        println!("{name:<28} {p:>9.3} {r:>9.3} {:>7.2}× {t:>9.3} {:>7.2}×", r / p, t / p);
    }
    println!(
        "median over {} examples, {reps} interleaved runs each: report {:.2}× (target ≤ 1.10×), tune {:.2}× (target ≤ 3×)",
        report_ratios.len(),
        median(report_ratios),
        median(tune_ratios)
    );
}
