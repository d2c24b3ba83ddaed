//! `regtune report`: compile each file for each target and list every
//! kernel's resource usage, occupancy and what limits it.
//!
//! NVPTX rows use the same keys (see [`crate::gpu::resources`] for what each holds
//! there) and add `nvidia`: the numbers under ptxas's names, the block size
//! occupancy was computed for and where it came from.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use regtune_decisions::Usage;
use serde::Serialize;

use crate::context::Context;
use crate::gpu::compile::{self, compile_failure, Unit};
use crate::gpu::resources::{self, Measured, NvidiaUsage};
use crate::gpu::{self, Arch, Limiter};
use crate::names::{demangle, short_name};
use crate::output::{Failure, Tabular};
use crate::rdc;
use crate::toolchain::Toolchain;

/// One row of the report; the JSON keys are stable.
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// Demangled name.
    pub name: String,
    pub symbol: String,
    pub file: String,
    pub line: u32,
    pub arch: String,
    pub usage: Usage,
    pub limiter: Limiter,
    pub vgprs_to_next_step: Option<u32>,
    /// NVPTX only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvidia: Option<NvidiaUsage>,
}

impl KernelReport {
    pub(crate) fn new(m: Measured, arch: &Arch, location: Option<&compile::Location>, fallback_file: &str) -> Self {
        KernelReport {
            name: demangle(&m.symbol),
            file: location.map_or_else(|| fallback_file.to_string(), |l| l.file.clone()),
            line: location.map_or(0, |l| l.line),
            symbol: m.symbol,
            arch: arch.to_string(),
            usage: m.usage,
            limiter: m.limiter,
            vgprs_to_next_step: m.vgprs_to_next_step,
            nvidia: m.nvidia,
        }
    }
}

/// Report every kernel of every file on every target, measuring with
/// `options` (NVPTX: the block size). Files are independent: one that
/// fails to compile is reported and the rest still come back.
pub fn run(ctx: &Context, files: &[PathBuf], options: &resources::Options) -> (Vec<KernelReport>, Vec<Failure>) {
    let (toolchain, archs, user_args) = (&ctx.toolchain, &ctx.archs[..], &ctx.user_args[..]);
    let jobs: Vec<(&PathBuf, &Arch)> = files.iter().flat_map(|f| archs.iter().map(move |a| (f, a))).collect();
    // -fgpu-rdc: every file compiled once per target, to link with the others.
    let sets = if ctx.nvcc.is_some() { vec![] } else { rdc::link_sets(toolchain, files, archs, user_args) };
    let results: Vec<(Vec<KernelReport>, Vec<Failure>)> = jobs
        .par_iter()
        .map(|(file, arch)| match sets.iter().find(|(a, _)| a.name() == arch.name()) {
            Some((_, Ok(set))) => one_linked(toolchain, set, file, files.len() > 1, options),
            Some((_, Err(f))) => (vec![], vec![f.clone()]),
            None if ctx.nvcc.is_some() => match one_nvcc(ctx, file, arch, options) {
                Ok(rows) => (rows, vec![]),
                Err(f) => (vec![], vec![f]),
            },
            None => match one(toolchain, file, arch, user_args, options) {
                Ok(rows) => (rows, vec![]),
                Err(f) => (vec![], vec![f]),
            },
        })
        .collect();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (r, f) in results {
        rows.extend(r);
        failures.extend(f);
    }
    (rows, failures)
}

/// One `-fgpu-rdc` file of a link set: its kernels as the device link
/// builds them, and one failure per kernel whose callees no file defines.
/// Linked with other files, a file without kernels is a library of device
/// functions, not a failure.
fn one_linked(
    toolchain: &Toolchain,
    set: &rdc::LinkSet,
    file: &Path,
    linked_with_others: bool,
    options: &resources::Options,
) -> (Vec<KernelReport>, Vec<Failure>) {
    if let Err(f) = set.unit(file) {
        return (vec![], vec![f]);
    }
    let mut failures = set.unresolved_failures(file, rdc::Given::Files { command: "report", done: "reported" });
    let plain = tempfile::tempdir()
        .map_err(|e| rdc::RdcError::Other(format!("cannot create a temporary directory: {e}")))
        .and_then(|dir| set.plain(toolchain, file, dir.path(), options).map(|p| (p.measured, p.locations)));
    let (measured, locations) = match plain {
        Ok(found) => found,
        Err(rdc::RdcError::Compile(e)) => return (vec![], vec![compile_failure(e)]),
        Err(e) => return (vec![], vec![Failure::new(e.to_string())]),
    };
    if measured.is_empty() && failures.is_empty() && !linked_with_others {
        failures.push(Failure::new(format!("{} defines no kernels (no __global__ functions for {})", file.display(), set.arch)));
    }
    (rows_of(measured, &set.arch, &locations, &file.display().to_string()), failures)
}

fn one(
    toolchain: &Toolchain,
    file: &PathBuf,
    arch: &Arch,
    user_args: &[String],
    options: &resources::Options,
) -> Result<Vec<KernelReport>, Failure> {
    let target = gpu::of(arch);
    let built = gpu::is_built_object(file);
    let (measured, locations) = if let (true, Err(why)) = (built, target.reads_built_objects()) {
        return Err(Failure::new(format!("{}: {why}", file.display())));
    } else if built {
        // A built object (code object, bundle or host object): read it back.
        (resources::object_file(file, arch).map_err(|e| Failure::new(e.to_string()))?, vec![])
    } else {
        let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
        let obj = dir.path().join("device.o");
        let unit = Unit { toolchain, arch, source: file, user_args };
        let compiled = unit.code_object(&obj).map_err(compile_failure)?;
        let measured = resources::object_file_with(&obj, arch, &compiled.stderr, options).map_err(|e| Failure::new(e.to_string()))?;
        let symbols: Vec<String> = measured.iter().map(|m| m.symbol.clone()).collect();
        let locations = target.locations(file, &compiled.stderr, &symbols);
        (measured, locations)
    };
    if measured.is_empty() {
        return Err(Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display())));
    }
    Ok(rows_of(measured, arch, &locations, &file.display().to_string()))
}

/// One file built with nvcc as the user's flags say: nvcc's own cubin,
/// with the report of its own ptxas line.
fn one_nvcc(ctx: &Context, file: &Path, arch: &Arch, options: &resources::Options) -> Result<Vec<KernelReport>, Failure> {
    let nvcc = ctx.nvcc.as_ref().expect("an nvcc context");
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let kept = crate::gpu::nvptx::nvcc::keep(nvcc, arch, file, &ctx.user_args, dir.path(), None).map_err(compile_failure)?;
    let measured = resources::object_file_with(&kept.cubin, arch, &kept.report, options).map_err(|e| Failure::new(e.to_string()))?;
    let symbols: Vec<String> = measured.iter().map(|m| m.symbol.clone()).collect();
    let locations = gpu::of(arch).locations(file, "", &symbols);
    if measured.is_empty() {
        return Err(Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display())));
    }
    Ok(rows_of(measured, arch, &locations, &file.display().to_string()))
}

/// The rows of one file's kernels, in source order.
fn rows_of(measured: Vec<Measured>, arch: &Arch, locations: &[compile::Location], file_name: &str) -> Vec<KernelReport> {
    let mut rows: Vec<KernelReport> = measured
        .into_iter()
        .map(|m| {
            let loc = locations.iter().find(|l| l.symbol == m.symbol);
            KernelReport::new(m, arch, loc, file_name)
        })
        .collect();
    rows.sort_by(|a, b| (&a.file, a.line, &a.name).cmp(&(&b.file, b.line, &b.name)));
    rows
}

impl Tabular for KernelReport {
    fn header() -> Vec<&'static str> {
        vec![
            "kernel",
            "arch",
            "VGPR",
            "AGPR",
            "SGPR",
            "scratch",
            "VGPR spill",
            "SGPR spill",
            "LDS",
            "occupancy",
            "limiter",
            "VGPRs to next",
            "code bytes",
            "location",
        ]
    }

    fn cells(&self) -> Vec<String> {
        let u = &self.usage;
        vec![
            short_name(&self.name).to_string(),
            self.arch.clone(),
            u.vgpr.to_string(),
            u.agpr.to_string(),
            u.sgpr.to_string(),
            u.scratch_bytes.to_string(),
            u.vgpr_spills.to_string(),
            u.sgpr_spills.to_string(),
            u.lds_bytes.to_string(),
            occupancy_cell(u.occupancy, self.nvidia.as_ref()),
            limiter_name(self.limiter, &self.arch),
            self.vgprs_to_next_step.map_or_else(|| "-".to_string(), |n| n.to_string()),
            u.code_bytes.to_string(),
            if self.line == 0 { self.file.clone() } else { format!("{}:{}", self.file, self.line) },
        ]
    }
}

/// Occupancy as a table shows it; NVPTX adds the block size it holds for and
/// where that came from: "24 @256 (default)".
pub(crate) fn occupancy_cell(occupancy: u32, nvidia: Option<&NvidiaUsage>) -> String {
    match nvidia {
        None => occupancy.to_string(),
        Some(n) => format!("{occupancy} @{} ({})", n.block_size, n.block_size_from),
    }
}

/// The limiter as a table names it, in the words of `arch`'s vendor.
pub(crate) fn limiter_name(limiter: Limiter, arch: &str) -> String {
    Arch::parse(arch).map_or_else(|_| limiter.to_string(), |a| gpu::of(&a).limiter_name(limiter))
}
