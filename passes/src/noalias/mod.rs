//! `regtune-noalias<P;...>`: mark chosen pointer parameters of a kernel
//! `noalias`; `regtune-noalias-rank`: rank which ones are worth trying.
//!
//! `transform.rs` is the pass that adds the attribute, and says why that is a
//! promise only the user can make. `ranking.rs` scores each parameter from
//! the kernel's memory accesses, which `trace.rs` lists; the trace follows
//! pointers with the facts of `origins.rs`, tells addresses apart with
//! `keys.rs`, and reads each function's blocks in the order `body.rs` gives
//! them. This file holds the state they share while one kernel is read.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes='regtune-noalias<3;5>' in.ll -S -o out.ll
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

mod body;
mod keys;
mod origins;
mod ranking;
mod trace;
mod transform;

use std::collections::HashMap;
use std::rc::Rc;

use inkwell::values::FunctionValue;

use body::Body;
use keys::KeyNode;
use origins::{Fact, Solution};
pub use ranking::{rank, rank_all, Candidate};
use trace::{space_of, Access};
pub use transform::run;

/// Bounds that keep the ranking cheap on big modules.
const MAX_CALL_DEPTH: usize = 6;
const MAX_CALLEE_INSTRUCTIONS: usize = 5_000;
/// Instruction visits over all functions, fixpoint rounds included.
const VISIT_BUDGET: usize = 500_000;
const MAX_ROUNDS: usize = 16;
const MAX_KEY_DEPTH: u32 = 48;

struct Analyzer<'ctx> {
    /// Each kernel parameter's address space (flat for non-pointers).
    param_spaces: Vec<u32>,
    bodies: HashMap<FunctionValue<'ctx>, Rc<Body<'ctx>>>,
    solved: HashMap<(FunctionValue<'ctx>, Vec<Fact>), Rc<Solution<'ctx>>>,
    solving: Vec<FunctionValue<'ctx>>,
    collecting: Vec<FunctionValue<'ctx>>,
    budget: usize,
    pure: HashMap<FunctionValue<'ctx>, bool>,
    keys: HashMap<KeyNode<'ctx>, u32>,
    seq: u32,
    next_loop: u32,
    next_instance: u32,
    trace: Vec<Access>,
}

impl<'ctx> Analyzer<'ctx> {
    fn new(kernel: FunctionValue<'ctx>) -> Self {
        Analyzer {
            param_spaces: kernel.get_params().into_iter().map(space_of).collect(),
            bodies: HashMap::new(),
            solved: HashMap::new(),
            solving: Vec::new(),
            collecting: Vec::new(),
            budget: VISIT_BUDGET,
            pure: HashMap::new(),
            keys: HashMap::new(),
            seq: 0,
            next_loop: 0,
            next_instance: 0,
            trace: Vec::new(),
        }
    }

    fn body(&mut self, f: FunctionValue<'ctx>) -> Rc<Body<'ctx>> {
        self.bodies.entry(f).or_insert_with(|| Rc::new(Body::of(f))).clone()
    }
}
