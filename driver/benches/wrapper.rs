//! What building through `regtune-hipcc` costs next to the plain compile,
//! measured side by side in one run (reps interleaved, so a noisy machine
//! slows all alike; medians) and printed as ratios. Not a test: nothing
//! here fails on a slow day.
//!
//!     cargo bench -p regtune --bench wrapper [-- REPS]
//!
//! Per example (gfx90a, `-O3 -c`, host and device):
//!   plain    the exact clang++-22 command the wrapper runs, without the wrapper;
//!   use      regtune-hipcc with the file's decisions in the db (warm: its
//!            input hash is in the wrapper's cache);
//!   use/new  the same with the hash cache emptied, as after an edit;
//!   tune     REGTUNE_MODE=tune with an empty db and an empty wrapper cache:
//!            it tunes the file, then builds with the decisions.
//! Targets (issue 5): use ≤ 1.05×, tune ≤ 3× (medians over examples/).

// A benchmark fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use regtune::gpu::Arch;
use regtune::toolchain::Toolchain;
use regtune::wrapper::cache::Cache;
use regtune::wrapper::command::CompileCommand;
use regtune::wrapper::compiler::{self, Compiler};

const ARCH: &str = "gfx90a";

fn time(cmd: &mut Command) -> f64 {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("regtune: warning"), "{}", String::from_utf8_lossy(&out.stderr));
    start.elapsed().as_secs_f64()
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

fn args(file: &Path, object: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![format!("--offload-arch={ARCH}").into(), "-O3".into(), "-c".into(), file.into()];
    v.extend(["-o".into(), object.into()]);
    v
}

/// The compile the wrapper runs for `args`, as a command of its own.
fn plain(toolchain: &Toolchain, cache: &Cache, args: &[OsString]) -> Command {
    let strings: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let cmd = CompileCommand::parse(&strings).unwrap();
    let archs = [Arch::parse(ARCH).unwrap()];
    let flags = compiler::debian_flags(toolchain, &archs, &cmd.device_args, false, cache).unwrap();
    let stand_in = Compiler { path: toolchain.llvm_bin.join("clang++"), stand_in: true };
    stand_in.plain(args, Some(&cmd), &flags)
}

fn wrapper(release: &Path, dir: &Path, db: &Path, cache: &Path, mode: &str, args: &[OsString]) -> Command {
    let mut cmd = Command::new(release.join("regtune-hipcc"));
    for v in ["REGTUNE_COMPILER", "REGTUNE_VERBOSE", "REGTUNE_PLUGIN", "REGTUNE_WRAPPED"] {
        cmd.env_remove(v);
    }
    cmd.current_dir(dir).env("REGTUNE_MODE", mode).env("REGTUNE_DB", db).env("REGTUNE_CACHE_DIR", cache).args(args);
    cmd
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(3);
    let status = Command::new("cargo").args(["build", "--release", "--workspace", "--quiet"]).status().unwrap();
    assert!(status.success(), "release build failed");
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    let toolchain = Toolchain::detect().expect("toolchain");
    let dir = tempfile::tempdir().unwrap();
    let bench_cache = Cache::from_env();
    let warm_db = dir.path().join("warm.json");
    let warm_cache = dir.path().join("warm-cache");

    println!(
        "{:<26} {:>8} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7}",
        "example", "plain s", "use s", "ratio", "use/new", "ratio", "tune s", "ratio"
    );
    let (mut use_ratios, mut new_ratios, mut tune_ratios) = (vec![], vec![], vec![]);
    for file in common::examples() {
        let object = dir.path().join("out.o");
        let a = args(&file, &object);
        // Decisions for this file, with these flags, for the `use` runs.
        time(&mut wrapper(&release, dir.path(), &warm_db, &warm_cache, "tune", &a));
        let (mut p, mut u, mut n, mut t) = (vec![], vec![], vec![], vec![]);
        for rep in 0..=reps {
            let tp = time(&mut plain(&toolchain, &bench_cache, &a));
            let tu = time(&mut wrapper(&release, dir.path(), &warm_db, &warm_cache, "use", &a));
            let _ = std::fs::remove_dir_all(warm_cache.join("hashes"));
            let tn = time(&mut wrapper(&release, dir.path(), &warm_db, &warm_cache, "use", &a));
            let cold: PathBuf = dir.path().join(format!("cold{rep}"));
            let tt = time(&mut wrapper(&release, dir.path(), &cold.join("db.json"), &cold.join("cache"), "tune", &a));
            if rep > 0 {
                // The first round warms the page cache and is not counted.
                p.push(tp);
                u.push(tu);
                n.push(tn);
                t.push(tt);
            }
        }
        let (p, u, n, t) = (median(p), median(u), median(n), median(t));
        use_ratios.push(u / p);
        new_ratios.push(n / p);
        tune_ratios.push(t / p);
        let name = file.file_name().unwrap().to_string_lossy();
        println!("{name:<26} {p:>8.3} {u:>8.3} {:>6.3}× {n:>8.3} {:>6.3}× {t:>8.3} {:>6.2}×", u / p, n / p, t / p);
    }
    println!(
        "median over {} examples, {reps} interleaved runs each: use {:.3}× (target ≤ 1.05×), \
         use after an edit {:.3}×, tune from cold {:.2}× (target ≤ 3×)",
        use_ratios.len(),
        median(use_ratios),
        median(new_ratios),
        median(tune_ratios)
    );
}
