//! `regtune-nvcc`: a drop-in nvcc that builds CUDA sources with the
//! decisions `regtune tune --compiler nvcc` recorded and never breaks a
//! build. Every argument is nvcc's; the nvcc is $REGTUNE_COMPILER, else the
//! one `regtune doctor` finds; REGTUNE_MODE and REGTUNE_DB as for
//! regtune-hipcc (see `regtune::wrapper`).
//!
//!     cmake -S . -B build -DCMAKE_CUDA_COMPILER_LAUNCHER="regtune;cc"   (CMake puts nvcc after it)
//!     regtune-nvcc -O3 -arch=sm_90 -c kernel.cu -o kernel.o

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let nvcc = regtune::toolchain::nvcc::Nvcc::detect().map(|n| n.path.into_os_string()).ok();
    regtune::wrapper::run(regtune::wrapper::Invocation::nvcc(nvcc, args))
}
