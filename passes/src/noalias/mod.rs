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
use std::io::Write;
use std::rc::Rc;

use inkwell::module::Module;
use inkwell::values::FunctionValue;
use regtune_decisions::Param;

use crate::ir;
use crate::spec::ParamRef;

use body::Body;
use keys::KeyNode;
use origins::{Fact, Solution};
pub use ranking::{rank, rank_all, Candidate};
use trace::{space_of, Access};
pub use transform::run;

/// `regtune-noalias<P;...>`: resolve each parameter against each kernel
/// (an index, or the IR name of an argument) and hand them to the noalias
/// transform. A name a kernel does not have is skipped for that kernel.
pub fn run_named(module: &Module<'_>, params: &[ParamRef]) -> bool {
    let mut changed = false;
    for kernel in ir::kernels(module) {
        let resolved: Vec<_> = params.iter().filter_map(|p| resolve_param(kernel, p)).collect();
        if resolved.is_empty() {
            continue;
        }
        changed |= run(kernel, &resolved);
    }
    changed
}

/// A kernel parameter named by a pass parameter, with both its index and its
/// IR name; `None` when the kernel has no such parameter.
fn resolve_param(kernel: FunctionValue<'_>, p: &ParamRef) -> Option<Param> {
    let params = kernel.get_params();
    let name_of = |i: usize| params[i].get_name().to_string_lossy().into_owned();
    match p {
        ParamRef::Index(i) => {
            let idx = *i as usize;
            (idx < params.len()).then(|| Param { index: *i, name: name_of(idx) })
        }
        // HIP passes some pointers as `%name.coerce`; the source name is `name`.
        ParamRef::Name(n) => (0..params.len())
            .find(|&i| {
                let ir_name = name_of(i);
                ir_name == *n || ir_name.strip_suffix(".coerce") == Some(n.as_str())
            })
            .map(|i| Param { index: i as u32, name: n.clone() }),
    }
}

/// `regtune-noalias-rank`: one JSON line per kernel on stdout, for the
/// driver (`opt -disable-output -passes=regtune-noalias-rank`).
pub fn print_rank(module: &Module<'_>) {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        kernel: &'a str,
        candidates: Vec<Candidate>,
    }
    let mut out = std::io::stdout().lock();
    for kernel in ir::kernels(module) {
        let name = ir::symbol(kernel);
        let line = Line { kernel: &name, candidates: rank(kernel) };
        match serde_json::to_string(&line) {
            // A closed stdout is the reader's choice; nothing to report.
            Ok(json) => {
                let _ = writeln!(out, "{json}");
            }
            Err(e) => eprintln!("regtune: warning: cannot print noalias ranking for {name}: {e}"),
        }
    }
    let _ = out.flush();
}

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
