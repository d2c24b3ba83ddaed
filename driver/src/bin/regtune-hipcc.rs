//! `regtune-hipcc`: a drop-in hipcc that builds HIP sources with the tuned
//! decisions and never breaks a build. Every argument is the compiler's;
//! regtune's settings come from REGTUNE_MODE, REGTUNE_COMPILER and
//! REGTUNE_DB (see `regtune::wrapper`).
//!
//!     CXX=regtune-hipcc cmake -S . -B build
//!     regtune-hipcc --offload-arch=gfx90a -O3 -c kernel.hip -o kernel.o

use std::process::ExitCode;

fn main() -> ExitCode {
    regtune::wrapper::run(regtune::wrapper::Invocation::hipcc(std::env::args_os().skip(1).collect()))
}
