//! A kernel's listing (AMDGPU assembly, PTX) as the cost model reads it:
//! instructions and loops in layout order, each loop with the trip count
//! its code shows. Each target reads its own dialect into a [`Listing`]
//! (`amdgpu/listing.rs`, `nvptx/listing.rs`) and says which [`Machine`]
//! runs it; the cost model (`cost.rs`) simulates a wave over it.

use serde::Serialize;

/// Trip count assumed for a loop whose count the code does not show.
pub(crate) const UNKNOWN_TRIPS: f64 = 8.0;

/// What the model assumes about the hardware (cycles are the SIMD's, or
/// an NVIDIA SM sub-partition's). The constants each target gives are
/// first guesses except those fitted by bench/calibrate (it times every
/// candidate `regtune predict` estimates, and correlates the two); each
/// says which it is.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Machine {
    /// Issue cycles of one vector instruction (wave64 on 16 lanes: 4).
    pub valu_cycles: f64,
    /// Global or scratch memory latency.
    pub memory_latency: f64,
    /// Scalar memory (AMDGPU) latency.
    pub scalar_latency: f64,
    /// LDS / shared memory latency.
    pub lds_latency: f64,
    /// Latency of an ALU result (PTX dataflow).
    pub alu_latency: f64,
    /// Memory bytes per cycle one SIMD (sub-partition) may move.
    pub bytes_per_cycle: f64,
    /// Threads per wave (warp).
    pub lanes: f64,
    /// Vector stores count in `vmcnt` (gfx9); gfx10+ count them apart.
    pub stores_in_vmcnt: bool,
    /// Latency of reloading a value ptxas spilled (local memory, mostly
    /// an L1 hit). NVPTX only: PTX has virtual registers, so its spills are
    /// not in the listing, only in ptxas's report.
    pub spill_latency: f64,
    /// How much of one wave's latency more waves hide: latency / waves^h.
    /// 1 is perfect hiding.
    pub hiding: f64,
}

/// A kernel's code as instructions and loops; `dataflow`: waits follow
/// the registers an instruction reads (PTX), not explicit wait
/// instructions (AMDGPU's `s_waitcnt`).
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub(crate) items: Vec<Item>,
    pub(crate) dataflow: bool,
}

/// One instruction as the simulation needs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// An ALU instruction: its issue cycles (a vector one at the machine's
    /// VALU rate), the register it writes and those it reads (PTX only;
    /// AMDGPU waits are explicit).
    Alu { cycles: f64, vector: bool, dest: Option<String>, srcs: Vec<String> },
    /// A memory access: `queue` is vm (global, scratch) or lgkm (scalar,
    /// LDS); PTX uses `dest`/`srcs` instead of queues.
    Mem { kind: MemKind, bytes: f64, load: bool, dest: Option<String>, srcs: Vec<String> },
    /// AMDGPU `s_waitcnt`: wait until at most this many are outstanding.
    Wait { vm: Option<usize>, lgkm: Option<usize> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemKind {
    Global,
    Scratch,
    Scalar,
    Lds,
}

/// Straight-line code and loops, in layout order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Op(Op),
    /// `assumed`: the trips taken when the code does not show the count.
    Loop {
        header: String,
        trips: Option<u64>,
        assumed: f64,
        body: Vec<Item>,
    },
}

/// One line of a listing: the label it defines, or the instruction it
/// holds as (mnemonic, operands).
pub(crate) type Line = (Option<String>, Option<(String, String)>);

/// A loop's trip count from the listing and the loop's (first, last) line,
/// where the code shows it.
pub(crate) type TripCount = dyn Fn(&[Line], usize, usize) -> Option<u64>;

/// A dialect's lines into a [`Listing`]: `target` names a branch's label,
/// `op` reads an instruction, `trips` a loop's count where the code shows it.
pub(crate) fn read(
    lines: &[Line],
    target: &dyn Fn(&str, &str) -> Option<String>,
    op: &dyn Fn(&str, &str) -> Option<Op>,
    trips: &TripCount,
    dataflow: bool,
) -> Listing {
    Listing { items: structure(lines, target, op, trips), dataflow }
}

/// Lines into items: a branch back to an earlier label closes a loop from
/// that label to the branch. Loops that overlap without nesting are
/// flattened (counted once).
fn structure(
    lines: &[Line],
    target: &dyn Fn(&str, &str) -> Option<String>,
    op: &dyn Fn(&str, &str) -> Option<Op>,
    trips: &TripCount,
) -> Vec<Item> {
    // Back edges: (label line, branch line).
    let label_at = |name: &str| lines.iter().position(|(l, _)| l.as_deref() == Some(name));
    let mut loops: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, (_, ins))| {
            let (m, o) = ins.as_ref()?;
            let start = label_at(&target(m, o)?)?;
            (start < i).then_some((start, i))
        })
        .collect();
    // Outermost first; one loop per header (the last back edge closes it).
    loops.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
    loops.dedup_by_key(|(s, _)| *s);
    build(lines, 0, lines.len(), &loops, op, trips)
}

fn build(
    lines: &[Line],
    from: usize,
    to: usize,
    loops: &[(usize, usize)],
    op: &dyn Fn(&str, &str) -> Option<Op>,
    trips_fn: &TripCount,
) -> Vec<Item> {
    let mut items = Vec::new();
    let mut i = from;
    while i < to {
        if let Some(&(s, e)) = loops.iter().find(|&&(s, e)| s == i && e < to) {
            let inner: Vec<(usize, usize)> = loops.iter().copied().filter(|&(a, b)| a > s && b <= e).collect();
            let header = lines[s].0.clone().unwrap_or_default();
            let (trips, assumed) = (trips_fn(lines, s, e), assumed_trips(lines, s));
            items.push(Item::Loop { header, trips, assumed, body: build(lines, s, e + 1, &inner, op, trips_fn) });
            i = e + 1;
            continue;
        }
        if let Some((m, o)) = &lines[i].1 {
            if let Some(op) = op(m, o) {
                items.push(Item::Op(op));
            }
        }
        i += 1;
    }
    items
}

/// Trips assumed for a loop whose count the code does not show: the
/// [`UNKNOWN_TRIPS`] iterations of the source loop, shared among the loops
/// a runtime unroll by K (4 to 64) made of it, so that an unrolled build is not
/// charged K times the work of a rolled one. The unrolled loop is guarded
/// by `n < K` just before it (`setp.lt`, `s_cmp_lt`, `v_cmp_gt`...) and runs
/// UNKNOWN_TRIPS / K times; the remainder loop counts `n & (K - 1)` and runs
/// UNKNOWN_TRIPS mod K times.
fn assumed_trips(lines: &[Line], start: usize) -> f64 {
    const WINDOW: usize = 12;
    let before = lines[start.saturating_sub(WINDOW)..start].iter().filter_map(|(_, i)| i.as_ref());
    let constant = |o: &str| -> Vec<i64> { o.split(',').skip(1).filter_map(|a| parse_int(a.trim())).collect() };
    let mut guess = UNKNOWN_TRIPS;
    for (m, o) in before {
        let k = if m.starts_with("setp.") || m.starts_with("s_cmp_") || m.starts_with("v_cmp_") {
            constant(o).into_iter().find(|&k| (4..=64).contains(&k) && k & (k - 1) == 0).map(|k| (k, false))
        } else if m.starts_with("and.") || m.starts_with("s_and_b32") || m.starts_with("v_and_b32") {
            constant(o).into_iter().find(|&k| (3..=63).contains(&k) && (k + 1) & k == 0).map(|k| (k + 1, true))
        } else {
            None
        };
        if let Some((k, remainder)) = k {
            let k = k as f64;
            guess = if remainder { UNKNOWN_TRIPS % k } else { (UNKNOWN_TRIPS / k).max(1.0) };
        }
    }
    guess
}

/// Bytes a memory mnemonic moves per lane: `global_load_dwordx4` 16,
/// `global_load_b64` 8, `ld.global.v2.f64` 16, ...
pub(crate) fn access_bytes(mnemonic: &str) -> f64 {
    let width = |s: &str| -> Option<f64> {
        Some(match s {
            "dword" | "b32" | "u32" | "s32" | "f32" => 4.0,
            "dwordx2" | "b64" | "u64" | "s64" | "f64" => 8.0,
            "dwordx3" | "b96" => 12.0,
            "dwordx4" | "b128" => 16.0,
            "short" | "ushort" | "sshort" | "b16" | "u16" | "i16" | "s16" | "d16" | "f16" => 2.0,
            "byte" | "ubyte" | "sbyte" | "b8" | "u8" | "i8" | "s8" => 1.0,
            _ => return None,
        })
    };
    let parts: Vec<&str> = mnemonic.split(['_', '.']).collect();
    let lanes = parts.iter().find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<f64>().ok())).unwrap_or(1.0);
    parts.iter().rev().find_map(|p| width(p)).unwrap_or(4.0) * lanes
}

pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok().map(|v| v as i32 as i64);
    }
    if let Some(h) = s.strip_prefix("-0x") {
        return i64::from_str_radix(h, 16).ok().map(|v| -v);
    }
    s.parse().ok()
}

/// Iterations of a loop counted in a register from `init` by `step` until
/// a compare against `bound` ends it: (bound - init) / step when whole.
pub(crate) fn count(init: i64, step: i64, bound: i64, inclusive: bool) -> Option<u64> {
    if step == 0 {
        return None;
    }
    let span = bound - init + if inclusive { step.signum() } else { 0 };
    (span % step == 0 && span / step > 0).then(|| (span / step) as u64)
}

/// The lines of a listing from the first that `starts` to the next that
/// `ends` (that one kept when `keep_end`): one function's part.
pub(crate) fn cut(listing: &str, starts: impl Fn(&str) -> bool, ends: impl Fn(&str) -> bool, keep_end: bool) -> String {
    let mut out = String::new();
    let mut lines = listing.lines().skip_while(|l| !starts(l));
    for line in lines.by_ref() {
        let last = ends(line);
        if !last || keep_end {
            out.push_str(line);
            out.push('\n');
        }
        if last {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trip_counts_need_a_constant_counter() {
        assert_eq!(count(0, 1, 16, false), Some(16));
        assert_eq!(count(16, -1, 0, false), Some(16));
        assert_eq!(count(0, 4, 16, false), Some(4));
        assert_eq!(count(0, 3, 16, false), None);
        assert_eq!(count(1, 1, 16, true), Some(16));
        assert_eq!(parse_int("0xfffffff0"), Some(-16));
    }
}
