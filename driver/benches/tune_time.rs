//! What `regtune tune` costs on real code next to a plain device compile:
//! per file of a public corpus (bench/corpus/corpus.sh) and of examples/,
//! the plain compile and the tune run side by side (interleaved, so a noisy
//! machine slows both alike), their ratio, and the median, p95 and maximum
//! ratio. Also counts the register-limited kernels (occupancy limited by
//! VGPRs or SGPRs in the plain build) and how many of them tune raised. Not a
//! test: nothing here fails on a slow day.
//!
//!     bench/corpus/corpus.sh                      # once: writes /tmp/regtune-corpus
//!     cargo bench -p regtune --bench tune_time
//!
//! Environment: REGTUNE_CORPUS (the corpus directory), REPS (timed runs per
//! file, default 1), JOBS (tune's -j, default 1: the ratio is then work, not
//! the machine's cores), REGTUNE_BIN (another regtune to time, e.g. an older
//! build; default target/release/regtune), TUNE_ARGS (extra tune options),
//! OUT (also write every row as JSON here).
//!
//! Targets (issue 10): median ≤ 3×, p95 ≤ 10×, no file over 20×.

// A benchmark fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

const ARCH: &str = "gfx90a";

/// One file and the flags its build gives it beyond the device compile.
struct Entry {
    file: PathBuf,
    flags: Vec<String>,
}

/// The corpus's compile_commands.json entries, then the examples.
fn entries() -> Vec<Entry> {
    let corpus = std::env::var("REGTUNE_CORPUS").unwrap_or_else(|_| "/tmp/regtune-corpus".into());
    let db = Path::new(&corpus).join("compile_commands.json");
    let text = std::fs::read_to_string(&db).unwrap_or_else(|e| panic!("{}: {e}; run bench/corpus/corpus.sh first", db.display()));
    let doc: Value = serde_json::from_str(&text).expect("compile_commands.json is JSON");
    let mut out: Vec<Entry> = doc
        .as_array()
        .expect("a list of entries")
        .iter()
        .map(|e| {
            let file = PathBuf::from(e["file"].as_str().expect("file"));
            let args: Vec<String> = e["arguments"].as_array().expect("arguments").iter().map(|a| a.as_str().unwrap().to_string()).collect();
            // What the device compile does not already say.
            let mut flags = Vec::new();
            let mut it = args.iter().skip(1).peekable();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "-x" | "-o" => {
                        it.next();
                    }
                    "-c" | "-O3" => {}
                    "-include" => {
                        flags.push(a.clone());
                        flags.extend(it.next().cloned());
                    }
                    _ if a.starts_with("--offload-arch") || Path::new(a) == file => {}
                    _ => flags.push(a.clone()),
                }
            }
            Entry { file, flags }
        })
        .collect();
    out.extend(common::examples().into_iter().map(|file| Entry { file, flags: vec![] }));
    out
}

fn seconds(mut cmd: Command) -> (f64, std::process::Output) {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    (start.elapsed().as_secs_f64(), out)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Nearest-rank percentile.
fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn main() {
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1).max(1);
    let jobs = std::env::var("JOBS").unwrap_or_else(|_| "1".into());
    let extra: Vec<String> = std::env::var("TUNE_ARGS").map(|a| a.split_whitespace().map(String::from).collect()).unwrap_or_default();
    let bin = match std::env::var_os("REGTUNE_BIN") {
        Some(b) => PathBuf::from(b),
        None => {
            let status = Command::new("cargo").args(["build", "--release", "--workspace", "--quiet"]).status().unwrap();
            assert!(status.success(), "release build failed");
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/regtune")
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("plain.o");
    println!(
        "{:<58} {:>7} {:>8} {:>7} {:>7} {:>9} {:>8} {:>6}",
        "file", "plain s", "tune s", "ratio", "kernels", "reg-lim", "improved", "budget"
    );
    let (mut ratios, mut rows) = (Vec::new(), Vec::new());
    let (mut limited_total, mut improved_total, mut kernels_total) = (0, 0, 0);
    for (n, entry) in entries().iter().enumerate() {
        let plain_cmd = || {
            let mut p = common::hip_device_compile(&entry.file, ARCH);
            p.args(&entry.flags).arg("-c").arg("-o").arg(&obj);
            p
        };
        // Which kernels registers limit, from the plain build's report.
        let mut report = Command::new(&bin);
        report.args(["report", "--format", "json", "--offload-arch", ARCH]).arg(&entry.file).arg("--").args(&entry.flags);
        let (_, out) = seconds(report);
        let reported: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let limited: Vec<String> = reported["kernels"]
            .as_array()
            .map(|ks| {
                ks.iter()
                    .filter(|k| matches!(k["limiter"].as_str(), Some("vgpr") | Some("sgpr")))
                    .map(|k| k["symbol"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let _ = seconds(plain_cmd()); // warms the file cache; not counted
        let (mut plain, mut tune) = (Vec::new(), Vec::new());
        let mut last = Value::Null;
        for rep in 0..reps {
            let (t, out) = seconds(plain_cmd());
            assert!(out.status.success(), "{}: {}", entry.file.display(), String::from_utf8_lossy(&out.stderr));
            plain.push(t);
            let mut cmd = Command::new(&bin);
            cmd.args(["tune", "--format", "json", "--offload-arch", ARCH, "-j", &jobs, "--db"])
                .arg(dir.path().join(format!("db{n}-{rep}.json")))
                .args(&extra)
                .arg(&entry.file)
                .arg("--")
                .args(&entry.flags);
            let (t, out) = seconds(cmd);
            tune.push(t);
            last = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        }
        let (p, t) = (median(&plain), median(&tune));
        let kernels = last["kernels"].as_array().cloned().unwrap_or_default();
        let raised = |k: &Value| k["after"]["occupancy"].as_u64() > k["before"]["occupancy"].as_u64();
        let improved = kernels.iter().filter(|k| limited.iter().any(|s| k["symbol"] == s.as_str()) && raised(k)).count();
        let budget = kernels.iter().any(|k| k["budget_reached"] == true);
        kernels_total += kernels.len();
        limited_total += limited.len();
        improved_total += improved;
        ratios.push(t / p);
        let name = entry.file.strip_prefix("/tmp/regtune-corpus/src/").unwrap_or(&entry.file).display().to_string();
        println!(
            "{:<58} {p:>7.2} {t:>8.2} {:>6.2}× {:>7} {:>9} {:>8} {:>6}",
            name,
            t / p,
            kernels.len(),
            limited.len(),
            improved,
            if budget { "spent" } else { "-" }
        );
        rows.push(serde_json::json!({
            "file": name, "plain_seconds": p, "tune_seconds": t, "ratio": t / p, "kernels": kernels.len(),
            "register_limited": limited, "improved": improved, "budget_reached": budget,
            "timed_out": kernels.iter().map(|k| k["timed_out"].as_array().map_or(0, |a| a.len())).sum::<usize>(),
            "applied": kernels.iter().map(|k| (k["symbol"].clone(), k["applied"].clone())).collect::<Vec<_>>(),
        }));
    }
    println!(
        "{} files, {kernels_total} kernels: tune/plain median {:.2}× (target ≤ 3×), p95 {:.2}× (≤ 10×), max {:.2}× (≤ 20×); \
         register-limited kernels raised: {improved_total} of {limited_total} ({} runs each, tune -j {jobs})",
        ratios.len(),
        median(&ratios),
        percentile(&ratios, 95.0),
        ratios.iter().cloned().fold(0.0, f64::max),
        reps
    );
    if let Ok(path) = std::env::var("OUT") {
        std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    }
}
