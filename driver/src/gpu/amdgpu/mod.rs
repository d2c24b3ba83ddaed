//! AMDGPU through HIP: code objects, clang's resource-usage remarks, waves
//! per SIMD.

pub(crate) mod codeobj;
pub(crate) mod device_libs;
mod listing;
pub(crate) mod occupancy;
pub(crate) mod rdc;
mod remarks;
pub(crate) mod usage;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Arch, Compile, Identity, Limiter, OccupancyModel, ReadUsage, SourceCompiler, SourceSpelling, Spelling, Steps, Target};
use crate::gpu::compile::{self, CompileError, Compiled, Emit, Location, Temps, Unit, Variant};
use crate::gpu::listing::{Listing, Machine};
use crate::gpu::resources::{self, MeasureError, Measured, Object};
use crate::toolchain::{Toolchain, ToolchainError};
use regtune_decisions::{Occupancy, Usage};

#[derive(Debug)]
pub(crate) struct Amdgpu {
    pub(crate) arch: Arch,
}

impl Identity for Amdgpu {
    fn family(&self) -> &'static str {
        "amdgpu"
    }

    fn arch(&self) -> &Arch {
        &self.arch
    }
}

impl Compile for Amdgpu {
    /// Debian: the device-library overlay and the prelude; ROCm: nothing.
    fn prepare(&self, toolchain: &Toolchain) -> Result<(), ToolchainError> {
        let arch = &self.arch;
        device_libs::prepare(toolchain, arch)
    }

    fn device_args(&self, toolchain: &Toolchain, user_args: &[String]) -> Result<Vec<OsString>, ToolchainError> {
        let arch = &self.arch;
        Ok(device_libs::device_args(toolchain, arch, user_args))
    }

    fn hash_inputs(&self, _toolchain: &Toolchain) -> Vec<String> {
        vec![]
    }

    fn relocatable(&self) -> Result<(), &'static str> {
        Ok(())
    }

    fn ir_to_bitcode(&self, toolchain: &Toolchain, ir: &Path, out: &Path, variant: &Variant) -> Result<Compiled, CompileError> {
        let arch = &self.arch;
        rdc::ir_to_bitcode(toolchain, arch, ir, out, variant)
    }

    fn device_link(
        &self,
        toolchain: &Toolchain,
        inputs: &[PathBuf],
        out: &Path,
        emit: Emit,
        user_args: &[String],
        variant: &Variant,
    ) -> Result<Compiled, CompileError> {
        let arch = &self.arch;
        rdc::device_link(toolchain, arch, inputs, out, emit, user_args, variant)
    }

    fn needs_hip(&self) -> bool {
        true
    }

    fn code_object(&self, unit: &Unit<'_>, mut cmd: Command, out: &Path) -> Result<Compiled, CompileError> {
        cmd.args(["-c", "-Rpass-analysis=kernel-resource-usage", "-o"]).arg(out).arg(unit.source);
        compile::run(cmd, unit)
    }

    /// `-save-temps=obj`: the object with remarks, the `.hipi` and the
    /// pre-optimization `.bc` from one compile.
    fn build_keeping_temps(&self, unit: &Unit<'_>, mut cmd: Command, dir: &Path, object: PathBuf) -> Result<Temps, CompileError> {
        cmd.args(["-c", "-save-temps=obj", "-fno-discard-value-names", "-Rpass-analysis=kernel-resource-usage", "-o"])
            .arg(&object)
            .arg(unit.source);
        let compiled = compile::run(cmd, unit)?;
        let find = |ext: &str| -> Result<PathBuf, CompileError> {
            let found = std::fs::read_dir(dir).ok().into_iter().flatten().flatten().map(|e| e.path()).find(|p| {
                p.extension().is_some_and(|x| x == ext)
                    && p.file_name().is_some_and(|n| n.to_string_lossy().contains(unit.arch.processor()))
            });
            found.ok_or_else(|| CompileError::Input {
                file: dir.join(format!("*.{ext}")),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "clang kept no such intermediate file"),
            })
        };
        Ok(Temps { object, pre_opt_ir: find("bc")?, preprocessed: find("hipi")?, stderr: compiled.stderr })
    }

    fn ir_to_object(
        &self,
        toolchain: &Toolchain,
        ir: &Path,
        out: &Path,
        variant: &Variant,
        _user_args: &[String],
    ) -> Result<Compiled, CompileError> {
        let arch = &self.arch;
        let mut cmd = Command::new(&toolchain.clang);
        cmd.args(device_libs::ir_args(toolchain, arch)).arg(compile::DEFAULT_OPT).args(&variant.args);
        cmd.arg("-c").arg("-o").arg(out).arg(ir);
        compile::run_variant(cmd, toolchain, arch, ir, variant)
    }
}

impl ReadUsage for Amdgpu {
    /// From the "Function Name:" resource-usage remarks of the compile.
    fn locations(&self, _source: &Path, compiler_output: &str, _symbols: &[String]) -> Vec<Location> {
        remarks::locations(compiler_output)
    }

    /// The code object for `arch` in a code object, bundle or host object:
    /// its metadata note and the backend's occupancy model.
    fn read_usage(&self, objects: &[Object<'_>], _options: &resources::Options) -> Vec<Result<Vec<Measured>, MeasureError>> {
        objects.iter().map(|o| usage::read(o.path, o.bytes, &self.arch)).collect()
    }

    fn reads_built_objects(&self) -> Result<(), &'static str> {
        Ok(())
    }

    /// `.max_flat_workgroup_size` from the code object's metadata.
    fn max_block_sizes(&self, object: &Path) -> Result<Vec<(String, u32)>, String> {
        let arch = &self.arch;
        let bytes = std::fs::read(object).map_err(|e| format!("cannot read {}: {e}", object.display()))?;
        Ok(codeobj::read(&bytes)
            .map_err(|e| format!("{}: {e}", object.display()))?
            .into_iter()
            .find(|o| o.processor() == arch.processor())
            .map(|o| o.kernels.into_iter().map(|k| (k.name, k.max_flat_workgroup_size)).collect())
            .unwrap_or_default())
    }

    fn pressure_timeline(&self) -> Result<(), &'static str> {
        Ok(())
    }

    /// From `symbol:` to its `.Lfunc_end` label.
    fn kernel_listing(&self, listing: &str, symbol: &str) -> String {
        let start = format!("{symbol}:");
        crate::gpu::listing::cut(listing, |l| l.starts_with(&start), |l| l.starts_with(".Lfunc_end"), false)
    }

    fn machine(&self) -> Machine {
        let arch = &self.arch;
        listing::machine(arch)
    }

    fn read_listing(&self, kernel_listing: &str) -> Listing {
        listing::read(kernel_listing)
    }

    fn listing_shows_spills(&self) -> bool {
        true
    }
}

impl OccupancyModel for Amdgpu {
    fn occupancy_unit(&self) -> &'static str {
        "waves/SIMD"
    }

    /// The VGPR cap of a kernel whose block of `threads` must be resident
    /// on one CU (four SIMDs).
    fn register_cap_for_block(&self, threads: u32) -> Option<u32> {
        let arch = &self.arch;
        Some(arch.gfx().max_vgprs_for_waves(waves_per_simd(threads, arch.wave_size())))
    }

    fn lane_spills(&self) -> bool {
        true
    }

    fn registers_word(&self) -> &'static str {
        "VGPRs"
    }

    /// The backend's own names (`Limiter`'s display).
    fn limiter_name(&self, limiter: Limiter) -> String {
        limiter.to_string()
    }

    fn occupancy_field(&self) -> Occupancy {
        Occupancy::WavesPerEu
    }

    /// The target's maximum waves per SIMD.
    fn occupancy_ceiling(&self, _base: &Measured) -> u32 {
        let arch = &self.arch;
        arch.gfx().max_waves_per_simd
    }

    /// Each step above the current one whose VGPR budget is within a third
    /// of what the kernel uses now.
    fn occupancy_targets(&self, base: &Measured) -> Vec<u32> {
        let arch = &self.arch;
        let target = arch.gfx();
        (base.usage.occupancy + 1..=target.max_waves_per_simd)
            .filter(|&w| 3 * target.max_vgprs_for_waves(w) >= 2 * base.usage.vgpr)
            .collect()
    }

    /// No: the backend spills to scratch (regtune's `lds-spill` pass
    /// moves values to LDS instead).
    fn backend_spills_to_shared(&self) -> bool {
        false
    }

    /// Never asked: the backend has no spilling to LDS.
    fn shared_spill_pays(&self, _cap: &Usage) -> bool {
        false
    }

    /// Not read from the code object here: `--block-size` says it.
    fn promised_block(&self, _base: &Measured) -> Option<u32> {
        None
    }

    /// `amdgpu-waves-per-eu` reaches every step: the backend spills to fit.
    fn occupancy_steps(&self, _base: &Measured, _launched: Option<u32>) -> Steps {
        let arch = &self.arch;
        Steps { all: (1..=arch.gfx().max_waves_per_simd).collect(), own: None }
    }

    fn waves(&self, occupancy: u32) -> f64 {
        f64::from(occupancy)
    }
}

impl SourceSpelling for Amdgpu {
    fn occupancy_spelling(&self, waves: u32) -> Spelling {
        Spelling {
            ir: vec![("amdgpu-waves-per-eu", waves.to_string())],
            source: Some(format!("__attribute__((amdgpu_waves_per_eu({waves})))")),
            runtime: None,
        }
    }

    fn launch_bounds_spelling(&self, threads: u32) -> Spelling {
        Spelling {
            ir: vec![("amdgpu-flat-work-group-size", format!("1,{threads}"))],
            source: Some(format!("__launch_bounds__({threads})")),
            runtime: None,
        }
    }

    fn source_attributes(&self, launch_bounds: Option<u32>, waves: Option<u32>, _compiler: SourceCompiler) -> Result<Vec<String>, String> {
        let mut parts: Vec<String> = launch_bounds.map(|n| format!("__launch_bounds__({n})")).into_iter().collect();
        parts.extend(waves.map(|w| format!("__attribute__((amdgpu_waves_per_eu({w})))")));
        Ok(parts)
    }

    fn device_macro(&self) -> String {
        let arch = &self.arch;
        format!("defined(__{}__)", arch.processor())
    }

    fn pow_library(&self) -> (&'static str, &'static str) {
        ("ocml's `pow`", "the device library's (ocml)")
    }
}

impl Target for Amdgpu {}

/// Waves per SIMD that a block of `threads` needs resident on one CU (four SIMDs).
fn waves_per_simd(threads: u32, wave_size: u32) -> u32 {
    threads.div_ceil(wave_size).div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_per_simd_follow_the_block_size() {
        assert_eq!(waves_per_simd(1024, 64), 4);
        assert_eq!(waves_per_simd(256, 64), 1);
        assert_eq!(waves_per_simd(1024, 32), 8);
    }
}
