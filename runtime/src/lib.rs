//! regtune measure's runtime side.
//!
//! Two processes share this crate. The *interposer* is loaded into the
//! user's program (CUDA: `CUDA_INJECTION64_PATH` and CUPTI callbacks; HIP:
//! `LD_PRELOAD`); at each launch of a kernel the plan names it copies the
//! memory the launch can reach and hands it, with the launch, to the
//! *replayer* (`regtune-replay`), a separate process with its own GPU
//! context that runs every candidate code object on copies of that memory.
//! The program's own memory is only ever read, and a candidate that faults
//! takes down the replayer, not the program.
//!
//! Data flows one way: plan → capture (interposer) → protocol → replay
//! (replayer) → events → regtune. After a kernel's replays, the replay's
//! choice is timed again on the program's own launches ([`confirm`]).

pub mod capture;
pub mod code;
pub mod confirm;
pub mod cuda;
pub mod cupti;
mod dl;
pub mod gate;
pub mod graph;
pub mod graph_parts;
pub mod hip;
pub mod interpose;
pub mod plan;
pub mod protocol;
pub mod replay;
