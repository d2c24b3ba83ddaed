//! NVPTX through CUDA: PTX, ptxas and cubins, warps per SM.

use std::ffi::OsString;
use std::path::Path;

use super::{Arch, Spelling, Target};
use crate::compile::{self, Location};
use crate::nvidia;
use crate::toolchain::{Toolchain, ToolchainError};

#[derive(Debug)]
pub struct Nvptx;

impl Target for Nvptx {
    fn family(&self) -> &'static str {
        "nvptx"
    }

    fn occupancy_unit(&self) -> &'static str {
        "warps/SM"
    }

    /// A CUDA installation.
    fn prepare(&self, toolchain: &Toolchain, _arch: &Arch) -> Result<(), ToolchainError> {
        toolchain.cuda().map(drop)
    }

    fn device_args(&self, toolchain: &Toolchain, arch: &Arch, _user_args: &[String]) -> Result<Vec<OsString>, ToolchainError> {
        Ok(toolchain.cuda()?.device_args(arch))
    }

    /// ptxas decides the registers: its version is part of every key.
    fn hash_inputs(&self, toolchain: &Toolchain) -> Vec<String> {
        toolchain.cuda().ok().map(|c| c.ptxas_version.clone()).into_iter().collect()
    }

    /// NVPTX has no resource-usage remarks: read the `__global__`
    /// definitions from the source.
    fn locations(&self, source: &Path, _compiler_output: &str, symbols: &[String]) -> Vec<Location> {
        compile::source_locations(source, symbols)
    }

    /// W warps per SM become a register cap (`.maxnreg`): no `__maxnreg__`
    /// in source (clang 22 ignores it), `CU_JIT_MAX_REGISTERS` when a
    /// module is loaded from PTX.
    fn occupancy_spelling(&self, warps: u32) -> Spelling {
        let registers = nvidia::register_cap_for_warps(warps);
        Spelling {
            ir: vec![("nvvm.maxnreg", registers.to_string())],
            source: None,
            runtime: Some(format!("CU_JIT_MAX_REGISTERS={registers}")),
        }
    }

    fn launch_bounds_spelling(&self, threads: u32) -> Spelling {
        Spelling {
            ir: vec![("nvvm.maxntid", threads.to_string())],
            source: Some(format!("__launch_bounds__({threads})")),
            runtime: None,
        }
    }
}
