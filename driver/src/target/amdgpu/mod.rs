//! AMDGPU through HIP: code objects, clang's resource-usage remarks, waves
//! per SIMD.

use std::ffi::OsString;
use std::path::Path;

use super::{Arch, Spelling, Target};
use crate::compile::{self, Location};
use crate::toolchain::{Toolchain, ToolchainError};

#[derive(Debug)]
pub struct Amdgpu;

impl Target for Amdgpu {
    fn family(&self) -> &'static str {
        "amdgpu"
    }

    fn occupancy_unit(&self) -> &'static str {
        "waves/SIMD"
    }

    /// Debian: the device-library overlay and the prelude; ROCm: nothing.
    fn prepare(&self, toolchain: &Toolchain, arch: &Arch) -> Result<(), ToolchainError> {
        toolchain.prepare(arch)
    }

    fn device_args(&self, toolchain: &Toolchain, arch: &Arch, user_args: &[String]) -> Result<Vec<OsString>, ToolchainError> {
        Ok(toolchain.hip_device_args(arch, user_args))
    }

    fn hash_inputs(&self, _toolchain: &Toolchain) -> Vec<String> {
        vec![]
    }

    /// From the "Function Name:" resource-usage remarks of the compile.
    fn locations(&self, _source: &Path, compiler_output: &str, _symbols: &[String]) -> Vec<Location> {
        compile::remark_locations(compiler_output)
    }

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
}
