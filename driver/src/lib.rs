//! regtune: rewrite GPU kernels so they need fewer registers, and prove each
//! rewrite with the real backend: AMDGPU (HIP), or NVPTX and ptxas (CUDA).
//!
//! Data flows one way: toolchain → compile → codeobj → measure → search/cost →
//! verdict → tune/report/predict → output. Each stage is one module; `main.rs`
//! is only the CLI.

pub mod batch;
pub mod codeobj;
pub mod compile;
pub mod cost;
pub mod cubin;
pub mod cuda;
pub mod explain;
pub mod fix;
pub mod hash;
pub mod job;
pub mod launch;
pub mod limits;
pub mod measure;
pub mod nvidia;
pub mod occupancy;
pub mod output;
pub mod plugin;
pub mod predict;
pub mod progress;
pub mod ptxas;
pub mod report;
pub mod runtime;
pub mod search;
pub mod session;
pub mod target;
pub mod toolchain;
pub mod tools;
pub mod tune;
pub mod verdict;
pub mod wrapper;

