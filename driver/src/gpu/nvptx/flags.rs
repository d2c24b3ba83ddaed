//! The flags of a CUDA device-only compile, and of a compile of the
//! pre-optimization IR it made, for one installation ([`Cuda`]).

use std::ffi::OsString;
use std::path::Path;

use crate::gpu::Arch;
use crate::toolchain::cuda::Cuda;

/// Flags for a CUDA device-only compile for `arch` (no input, output or
/// optimization level: the caller adds those and the user's flags).
pub(crate) fn device_args(cuda: &Cuda, arch: &Arch) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-x", "cuda", "--cuda-device-only", "-Wno-unknown-cuda-version"].iter().map(OsString::from).collect();
    args.push(format!("--cuda-gpu-arch={}", arch.processor()).into());
    args.push(format!("--cuda-path={}", cuda.root.display()).into());
    args
}

/// Flags that compile pre-optimization NVPTX IR (from the frontend run)
/// exactly as the CUDA compile would have. clang reads no language
/// options for `-x ir` input, and the NVPTX backend's FMA contraction
/// follows them (CUDA: `-ffp-contract=fast`), so IR is compiled as a CUDA
/// job instead: an empty CUDA file, without CUDA's headers and libdevice
/// (both already in the IR), with the IR linked in whole
/// (`-mlink-bitcode-file`). The caller adds `-O3`, the user's flags, the
/// output and the empty file.
pub(crate) fn ir_args(cuda: &Cuda, arch: &Arch, ir: &Path) -> Vec<OsString> {
    let mut args = device_args(cuda, arch);
    args.extend(["-nocudainc", "-nocudalib", "-Xclang", "-mlink-bitcode-file", "-Xclang"].map(OsString::from));
    args.push(ir.into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_args_name_the_arch_and_the_installation() {
        let cuda = Cuda { root: "/opt/regtune-cuda".into(), version: "12.9.86".into(), ptxas_version: String::new() };
        let args: Vec<String> =
            device_args(&cuda, &Arch::parse("sm_90").unwrap()).iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.contains(&"--cuda-gpu-arch=sm_90".to_string()), "{args:?}");
        assert!(args.contains(&"--cuda-path=/opt/regtune-cuda".to_string()), "{args:?}");
    }
}
