//! `regtune-noalias-rank`, the ranking: one JSON line per kernel, each
//! candidate with a `score` and a `reason`; the tuner measures the first
//! few. It scores the accesses [`super::trace`] lists.
//!
//! A store is in the way of a load when it may run before it (earlier, or
//! in a loop around both) and may write the same kind of memory through
//! another pointer. Noalias on P takes out of the way of
//!
//! - a load through P: every store through other pointers;
//! - a load through another pointer: the stores through P, which frees it
//!   when they are all that is in its way (or all that lies between it and
//!   an earlier access to the same address).
//!
//! A freed load is worth 6 when an earlier access to the same address
//! through the same pointer comes before a store in its way (GVN reuses the
//! value instead of reloading it), else 4 when it shares a loop with such a
//! store (LICM, loop-carried reuse), else 1 (the schedulers may move it
//! above the stores); plus 4 when its address is uniform and in global
//! memory and no store through its own pointer is in the way (it can become
//! a scalar load, which frees VGPRs). A parameter nothing stores through
//! gets 1 more point per loop level around each of its loads (read-only
//! noalias loads move, and re-issue, freely in the backend; it matters for
//! arrays read in loop nests). The score is the sum. Parameters scoring 0
//! (never dereferenced, nothing in the way of their loads) are left out, as
//! are those already noalias. Best first, ties by index.
//!
//!   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so \
//!     -passes=regtune-noalias-rank -disable-output pre-O3.bc

use std::collections::{BTreeMap, BTreeSet, HashMap};

use inkwell::values::FunctionValue;
use serde::Serialize;

use super::origins::Origin;
use super::trace::{spaces_may_alias, trace, Access, GLOBAL};
use super::transform::{has_noalias, legality, Legality};

/// A parameter worth marking `noalias`, as `regtune-noalias-rank` reports it
/// (the driver reads each candidate as a `regtune_decisions::Param` and
/// ignores `score` and `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub index: u32,
    /// The parameter's source name (clang's `.coerce` suffix dropped); empty
    /// when clang discarded value names.
    pub name: String,
    pub score: u32,
    /// Why, in a few words.
    pub reason: String,
}

/// The pointer parameters of `kernel` worth marking noalias, best first.
pub fn rank(kernel: FunctionValue<'_>) -> Vec<Candidate> {
    let params = pointer_params(kernel);
    if params.iter().all(|p| p.noalias) {
        return Vec::new();
    }
    profitability(&trace(kernel), &params)
}

/// Every pointer parameter that could still take `noalias`: the ranked
/// ones first, then the rest in order with score 0. The backend also reacts
/// to noalias in ways no IR rule predicts (kernel-argument load layout,
/// scalar loads), so the tuner may measure beyond the ranking.
pub fn rank_all(kernel: FunctionValue<'_>) -> Vec<Candidate> {
    let mut all = rank(kernel);
    for p in pointer_params(kernel).into_iter().filter(|p| !p.noalias) {
        if !all.iter().any(|c| c.index == p.index) {
            all.push(Candidate { index: p.index, name: p.name, score: 0, reason: "no access pattern noalias helps".into() });
        }
    }
    all
}

/// A kernel pointer parameter, as the ranking sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParamInfo {
    index: u32,
    name: String,
    noalias: bool,
}

fn pointer_params(kernel: FunctionValue<'_>) -> Vec<ParamInfo> {
    (0..kernel.count_params())
        .filter(|&i| !matches!(legality(kernel, i), Legality::NoSuchParameter | Legality::NotAPointer))
        .map(|i| ParamInfo { index: i, name: source_name(kernel, i), noalias: has_noalias(kernel, i) })
        .collect()
}

/// clang names a HIP kernel's pointer parameter `<name>.coerce` (it is
/// passed as a global pointer and cast back); the user knows `<name>`.
fn source_name(f: FunctionValue<'_>, index: u32) -> String {
    let Some(arg) = f.get_nth_param(index) else {
        return String::new();
    };
    let name = arg.get_name().to_string_lossy();
    name.strip_suffix(".coerce").unwrap_or(&name).to_string()
}

// ---------------------------------------------------------------------------
// Profitability: score each parameter from the kernel's memory accesses.

/// A reload that GVN can replace with a value it already has.
const REUSE: u32 = 6;
/// A load in a loop that also stores elsewhere: LICM, loop-carried reuse.
const LOOP: u32 = 4;
/// A load that may only move above the stores (scheduling freedom).
const REORDER: u32 = 1;
/// A uniform global load that becomes a scalar load once nothing clobbers it.
const SCALAR: u32 = 4;

/// What freeing one load from its blockers is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gain {
    kind: GainKind,
    scalar: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GainKind {
    Reuse,
    Loop,
    Reorder,
}

impl Gain {
    fn points(self) -> u32 {
        let base = match self.kind {
            GainKind::Reuse => REUSE,
            GainKind::Loop => LOOP,
            GainKind::Reorder => REORDER,
        };
        base + if self.scalar { SCALAR } else { 0 }
    }
}

/// What one parameter would free.
#[derive(Debug, Clone, Default)]
struct Tally {
    reuse: u32,
    looped: u32,
    reorder: u32,
    scalar: u32,
    /// Loads through other pointers that only this parameter's stores block.
    unblocked: u32,
    /// Loop levels around the loads of a parameter nothing stores through.
    read_only_depth: u32,
    points: u32,
}

impl Tally {
    fn frees(&mut self, gain: Gain) {
        match gain.kind {
            GainKind::Reuse => self.reuse += 1,
            GainKind::Loop => self.looped += 1,
            GainKind::Reorder => self.reorder += 1,
        }
        self.scalar += u32::from(gain.scalar);
        self.points += gain.points();
    }

    /// A load through another pointer that this parameter's stores alone
    /// keep in place.
    fn unblocks(&mut self, gain: Gain) {
        self.unblocked += 1;
        self.points += gain.points();
    }

    fn score(&self) -> u32 {
        self.points + self.read_only_depth
    }

    fn reason(&self) -> String {
        let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.reuse > 0 {
            parts.push(format!("{} reusable across stores through other pointers", plural(self.reuse, "reload", "reloads")));
        }
        if self.looped > 0 {
            parts.push(format!("{} in loops that store through other pointers", plural(self.looped, "load", "loads")));
        }
        if self.reorder > 0 {
            parts.push(format!("{} could move above stores through other pointers", plural(self.reorder, "load", "loads")));
        }
        if self.scalar > 0 {
            parts.push(format!("{} could become scalar", plural(self.scalar, "uniform load", "uniform loads")));
        }
        if self.unblocked > 0 {
            parts.push(format!("its stores alone block {} through other pointers", plural(self.unblocked, "load", "loads")));
        }
        if self.read_only_depth > 0 {
            parts.push("read-only, loaded in loops".to_string());
        }
        parts.join("; ")
    }
}

fn profitability(trace: &[Access], params: &[ParamInfo]) -> Vec<Candidate> {
    let already: BTreeSet<u32> = params.iter().filter(|p| p.noalias).map(|p| p.index).collect();
    let mut tallies: BTreeMap<u32, Tally> = BTreeMap::new();
    let writes: Vec<&Access> = trace.iter().filter(|a| a.write).collect();
    let mut by_key: HashMap<u32, Vec<&Access>> = HashMap::new();
    for a in trace {
        by_key.entry(a.key).or_default().push(a);
    }

    for load in trace.iter().filter(|a| a.is_movable_load()) {
        let own = load.single_param();
        // Alias analysis already separates a noalias parameter's loads.
        if own.is_some_and(|p| already.contains(&p)) {
            continue;
        }
        let in_the_way: Vec<&Access> = writes.iter().copied().filter(|w| in_the_way(w, load, &already)).collect();
        let in_the_way = behind_fences(load, in_the_way);
        // Stores through the load's own pointer are real dependences, and
        // fences order everything: noalias removes neither. It removes the
        // others.
        let (blockers, own_stores): (Vec<&Access>, Vec<&Access>) =
            in_the_way.into_iter().partition(|w| !w.fence && w.origins.is_disjoint(&load.origins));
        if blockers.is_empty() {
            continue;
        }
        let blocked = Blocked {
            load,
            blockers: &blockers,
            own_stores: &own_stores,
            same_address: by_key.get(&load.key).map_or(&[][..], Vec::as_slice),
        };
        if let Some(p) = own {
            tallies.entry(p).or_default().frees(blocked.gain());
        }
        let writers: BTreeSet<u32> = blockers.iter().filter_map(|w| w.single_param()).collect();
        for q in writers {
            if let Some(gain) = blocked.gain_without(q) {
                tallies.entry(q).or_default().unblocks(gain);
            }
        }
    }

    for p in params.iter().filter(|p| !p.noalias) {
        let through_p = |a: &&Access| a.origins.contains(&Origin::Param(p.index));
        if trace.iter().filter(through_p).any(|a| a.write) {
            continue;
        }
        let depth: usize = trace.iter().filter(through_p).filter(|a| a.is_movable_load()).map(|a| a.loops.len()).sum();
        if depth > 0 {
            tallies.entry(p.index).or_default().read_only_depth = u32::try_from(depth).unwrap_or(u32::MAX);
        }
    }

    let mut out: Vec<Candidate> = params
        .iter()
        .filter(|p| !p.noalias)
        .filter_map(|p| {
            let t = tallies.get(&p.index)?;
            let score = t.score();
            (score > 0).then(|| Candidate { index: p.index, name: p.name.clone(), score, reason: t.reason() })
        })
        .collect();
    out.sort_by(|a, b| b.score.cmp(&a.score).then(a.index.cmp(&b.index)));
    out
}

/// Whether store `w` may stand between `load` and an optimisation: it may
/// run before the load, may write the same kind of memory, and alias
/// analysis cannot already tell them apart (a noalias parameter's stores).
fn in_the_way(w: &Access, load: &Access, already: &BTreeSet<u32>) -> bool {
    w.may_run_before(load) && spaces_may_alias(w.space, load.space) && !w.single_param().is_some_and(|q| already.contains(&q))
}

/// Drop the stores a fence already separates from the load: nothing moves
/// a load above a fence, so a store before the last fence on the way to the
/// load (or, with a fence in the loop, a store from the previous iteration)
/// no longer matters. The fences stay.
fn behind_fences<'a>(load: &Access, in_the_way: Vec<&'a Access>) -> Vec<&'a Access> {
    let last_fence = in_the_way.iter().filter(|w| w.fence && w.seq < load.seq).map(|w| w.seq).max();
    let fence_in_loop = in_the_way.iter().any(|w| w.fence && w.shares_loop(load));
    in_the_way
        .into_iter()
        .filter(|w| {
            let after_fence = match last_fence {
                Some(f) => w.seq > f,
                None => true,
            };
            w.fence || (after_fence && (w.seq < load.seq || !fence_in_loop))
        })
        .collect()
}

/// A load and the stores through other pointers that keep it in place.
struct Blocked<'a> {
    load: &'a Access,
    blockers: &'a [&'a Access],
    /// Stores through the load's own pointer, and fences, that may run
    /// before it.
    own_stores: &'a [&'a Access],
    /// Accesses to the same address (the load among them).
    same_address: &'a [&'a Access],
}

impl Blocked<'_> {
    /// What freeing the load from all its blockers is worth.
    fn gain(&self) -> Gain {
        // Hoisting out of a loop, or carrying the value around it, also
        // needs no store to another address through the same pointer (or
        // fence) in the loop.
        let load = self.load;
        let in_loop = |w: &Access| w.shares_loop(load);
        let kind = if self.reusable(|_| true) {
            GainKind::Reuse
        } else if self.blockers.iter().any(|w| in_loop(w)) && !self.own_stores.iter().any(|w| in_loop(w) && w.key != load.key) {
            GainKind::Loop
        } else {
            GainKind::Reorder
        };
        // amdgpu.noclobber needs no store at all in the way.
        let scalar = load.uniform && load.space == GLOBAL && self.own_stores.is_empty();
        Gain { kind, scalar }
    }

    /// What noalias on store parameter `q` alone frees: everything when all
    /// blockers store through `q`, else a reload whose only obstacles
    /// between the two accesses are `q`'s stores.
    fn gain_without(&self, q: u32) -> Option<Gain> {
        let through_q = |w: &Access| w.single_param() == Some(q);
        if self.blockers.iter().all(|w| through_q(w)) {
            return Some(self.gain());
        }
        self.reusable(through_q).then_some(Gain { kind: GainKind::Reuse, scalar: false })
    }

    /// An earlier access to the same address through the same pointer, with
    /// blockers between the two, all of them `removable`, and no store to
    /// another address through that pointer: GVN can reuse its value once
    /// the blockers are out of the way.
    fn reusable(&self, removable: impl Fn(&Access) -> bool) -> bool {
        let load = self.load;
        let between = |a: &Access, w: &Access| a.seq < w.seq && w.seq < load.seq;
        self.same_address.iter().any(|a| {
            if a.seq >= load.seq || a.origins != load.origins {
                return false;
            }
            if self.own_stores.iter().any(|w| between(a, w) && w.key != load.key) {
                return false;
            }
            let mut blockers = self.blockers.iter().filter(|w| between(a, w)).peekable();
            blockers.peek().is_some() && blockers.all(|w| removable(w))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(index: u32) -> ParamInfo {
        ParamInfo { index, name: format!("p{index}"), noalias: false }
    }

    /// An access through parameter `p` (or through an unknown pointer), at
    /// position `seq` of the trace.
    fn access(p: Option<u32>, write: bool, seq: u32, key: u32) -> Access {
        let origin = p.map_or(Origin::Unknown, Origin::Param);
        Access {
            write,
            movable: !write,
            origins: BTreeSet::from([origin]),
            space: GLOBAL,
            uniform: false,
            key,
            seq,
            loops: vec![],
            fence: false,
        }
    }

    fn scores(c: &[Candidate]) -> Vec<(u32, u32)> {
        c.iter().map(|c| (c.index, c.score)).collect()
    }

    #[test]
    fn a_reload_across_a_foreign_store_is_freed_by_either_pointer() {
        // x = a[i]; b[i] = x; y = a[i]; c is never touched.
        let trace = [access(Some(0), false, 0, 7), access(Some(1), true, 1, 8), access(Some(0), false, 2, 7)];
        let ranked = profitability(&trace, &[param(0), param(1), param(2)]);
        assert_eq!(scores(&ranked), [(0, REUSE), (1, REUSE)]);
        assert_eq!(ranked[0].reason, "1 reload reusable across stores through other pointers");
        assert_eq!(ranked[1].reason, "its stores alone block 1 load through other pointers");
    }

    #[test]
    fn a_store_between_two_loads_frees_the_reload_even_with_other_stores_in_the_loop() {
        // loop { x = a[i]; b[k] = x; y = a[i]; c[k] = y; }
        let in_loop = |mut a: Access| {
            a.loops = vec![0];
            a
        };
        let trace = [
            in_loop(access(Some(0), false, 0, 7)),
            in_loop(access(Some(1), true, 1, 8)),
            in_loop(access(Some(0), false, 2, 7)),
            in_loop(access(Some(2), true, 3, 9)),
        ];
        let ranked = profitability(&trace, &[param(0), param(1), param(2)]);
        // a: the reload (6), the first load in a storing loop (4), and 2
        // loads at loop depth 1 of a read-only pointer; b: the reload; c:
        // nothing on its own.
        assert_eq!(scores(&ranked), [(0, REUSE + LOOP + 2), (1, REUSE)]);
    }

    #[test]
    fn loads_before_every_store_gain_nothing() {
        let trace = [access(Some(0), false, 0, 1), access(Some(1), true, 1, 2)];
        assert!(profitability(&trace, &[param(0), param(1)]).is_empty());
    }

    #[test]
    fn a_store_through_the_same_pointer_is_a_real_dependence() {
        let trace = [access(Some(0), true, 0, 1), access(Some(0), false, 1, 1)];
        assert!(profitability(&trace, &[param(0)]).is_empty());
    }

    #[test]
    fn loops_and_uniform_addresses_add_up() {
        let mut store = access(Some(1), true, 0, 1);
        store.loops = vec![3];
        let mut load = access(Some(0), false, 1, 2);
        load.loops = vec![3];
        load.uniform = true;
        let ranked = profitability(&[store, load], &[param(0), param(1)]);
        assert_eq!(scores(&ranked), [(0, LOOP + SCALAR + 1), (1, LOOP + SCALAR)]);
        assert_eq!(
            ranked[0].reason,
            "1 load in loops that store through other pointers; 1 uniform load could become scalar; read-only, loaded in loops"
        );
    }

    #[test]
    fn noalias_parameters_are_left_out_and_already_separate() {
        let trace = [access(Some(0), false, 0, 7), access(Some(1), true, 1, 8), access(Some(0), false, 2, 7)];
        let mut b = param(1);
        b.noalias = true;
        // b's stores cannot block a's loads: alias analysis knows already.
        assert!(profitability(&trace, &[param(0), b]).is_empty());
    }

    #[test]
    fn several_writers_share_no_credit_and_ties_go_by_index() {
        let trace = [access(Some(2), true, 0, 1), access(Some(3), true, 1, 2), access(Some(1), false, 2, 3), access(Some(0), false, 3, 4)];
        let ranked = profitability(&trace, &[param(0), param(1), param(2), param(3)]);
        assert_eq!(scores(&ranked), [(0, REORDER), (1, REORDER)]);
    }

    #[test]
    fn unknown_writes_block_but_earn_nothing() {
        let trace = [access(None, true, 0, 1), access(Some(0), false, 1, 2)];
        assert_eq!(scores(&profitability(&trace, &[param(0)])), [(0, REORDER)]);
    }
}
