//! regtune: rewrite GPU kernels so they need fewer registers, and prove each
//! rewrite with the real backend: AMDGPU (HIP), or NVPTX and ptxas (CUDA).
//!
//! Data flows one way: the toolchain and the targets ([`gpu`]) below, then
//! a file's frontend run and variants ([`session`]), the search and the
//! rule ([`search`], [`cost`], [`verdict`]), the commands on top (tune,
//! report, predict, fix, batch, explain, the wrapper); docs/ARCHITECTURE.md
//! lists the layers, and tests/modules.rs holds every import to them.
//! What differs between AMDGPU and NVPTX is behind [`gpu::Target`], one
//! folder per target; `main.rs` is only the CLI, built on one
//! [`context::Context`].

pub mod batch;
pub(crate) mod candidates;
pub mod confirm;
pub mod context;
pub(crate) mod cost;
pub mod evidence;
pub mod explain;
pub mod fix;
pub mod gpu;
pub(crate) mod hash;
pub(crate) mod ir;
pub(crate) mod job;
pub(crate) mod launch;
pub(crate) mod limits;
pub mod measure;
pub mod names;
pub mod output;
pub mod plugin;
pub mod predict;
pub(crate) mod progress;
pub mod rdc;
pub mod report;
pub mod search;
pub mod session;
pub mod toolchain;
pub(crate) mod tools;
pub mod tune;
pub(crate) mod verdict;
pub mod wrapper;
