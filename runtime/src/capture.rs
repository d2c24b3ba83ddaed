//! What a launch can reach: the argument buffer's words that point into
//! device allocations (by-value structs included: every aligned word is a
//! candidate), and the allocations themselves, found through the driver's
//! address-range query; then the allocations that pointers stored in
//! those bytes (and in the module's variables) lead to, transitively,
//! among the allocations the program has live ([`Live`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::plan::Param;

/// A device allocation: base address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Range {
    pub addr: u64,
    pub bytes: u64,
}

impl Range {
    pub fn end(&self) -> u64 {
        self.addr + self.bytes
    }

    pub fn contains(&self, p: u64) -> bool {
        p >= self.addr && p < self.end()
    }
}

/// An argument word that points into `ranges[range]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    /// Byte offset of the word in the argument buffer.
    pub offset: usize,
    pub range: usize,
}

/// Below this no device allocation lives: small integers, flags, null.
const LOWEST_ADDRESS: u64 = 1 << 16;

/// The argument buffer of a launch, packed at each parameter's offset from
/// the per-parameter value pointers the launch API takes (`kernelParams`).
///
/// # Safety
/// `values[i]` must point to `params[i].size` readable bytes.
pub unsafe fn pack(params: &[Param], values: &[*const u8]) -> Vec<u8> {
    let len = params.iter().map(|p| p.offset + p.size).max().unwrap_or(0) as usize;
    let mut buf = vec![0u8; len];
    for (p, &v) in params.iter().zip(values) {
        let (o, n) = (p.offset as usize, p.size as usize);
        // SAFETY: the caller guarantees `v` points to `n` bytes; `buf` holds offset + size.
        unsafe { std::ptr::copy_nonoverlapping(v, buf[o..o + n].as_mut_ptr(), n) };
    }
    buf
}

/// The 8-byte-aligned words of the buffer that lie wholly inside one
/// parameter of at least 8 bytes and could be a device address: (offset, value).
pub fn pointer_words(args: &[u8], params: &[Param]) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    for p in params.iter().filter(|p| p.size >= 8) {
        let start = (p.offset as usize).next_multiple_of(8);
        let end = (p.offset + p.size) as usize;
        let mut o = start;
        while o + 8 <= end.min(args.len()) {
            let v = u64::from_le_bytes(args[o..o + 8].try_into().expect("8 bytes"));
            if v >= LOWEST_ADDRESS {
                out.push((o, v));
            }
            o += 8;
        }
    }
    out
}

/// Resolve candidate words to allocations with `lookup` (the driver's
/// address-range query: None when the value is no device address), merge
/// overlapping allocations, and say which range each pointer falls in.
pub fn reachable(words: &[(usize, u64)], lookup: impl Fn(u64) -> Option<Range>) -> (Vec<Range>, Vec<Pointer>) {
    let mut found: Vec<(usize, u64, Range)> = Vec::new();
    for &(offset, value) in words {
        // The same value twice (in and out aliasing) asks the driver once.
        let known = found.iter().find(|(_, _, r)| r.contains(value)).map(|(_, _, r)| *r);
        if let Some(r) = known.or_else(|| lookup(value).filter(|r| r.bytes > 0 && r.contains(value))) {
            found.push((offset, value, r));
        }
    }
    let ranges = union(found.iter().map(|(_, _, r)| *r).collect());
    let pointers = found
        .iter()
        .map(|&(offset, value, _)| Pointer { offset, range: ranges.iter().position(|r| r.contains(value)).expect("in the union") })
        .collect();
    (ranges, pointers)
}

/// Sorted, with overlapping ranges merged (touching ones stay apart: they
/// are distinct allocations).
pub fn union(mut ranges: Vec<Range>) -> Vec<Range> {
    ranges.sort();
    let mut out: Vec<Range> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.addr < last.end() => last.bytes = last.bytes.max(r.end() - last.addr),
            _ => out.push(r),
        }
    }
    out
}

/// The same pointers, indexed into `ranges` (which hold every one of them:
/// a superset of the ranges they were found in).
pub fn reindex(args: &[u8], pointers: &[Pointer], ranges: &[Range]) -> Vec<Pointer> {
    pointers
        .iter()
        .filter_map(|p| {
            let v = u64::from_le_bytes(args.get(p.offset..p.offset + 8)?.try_into().ok()?);
            Some(Pointer { offset: p.offset, range: ranges.iter().position(|r| r.contains(v))? })
        })
        .collect()
}

/// Where a word stored in memory points, among the copied `ranges`
/// (sorted, disjoint): the range and the offset into it. An address one
/// past a range's end (a C++ `end()`) that no range holds counts as that
/// range's end.
fn target(v: u64, ranges: &[Range]) -> Option<(usize, u64)> {
    let i = ranges.partition_point(|r| r.end() <= v);
    if let Some(r) = ranges.get(i).filter(|r| r.contains(v)) {
        return Some((i, v - r.addr));
    }
    let j = ranges.partition_point(|r| r.end() < v);
    ranges.get(j).filter(|r| r.end() == v).map(|r| (j, r.bytes))
}

/// The aligned 8-byte words of `bytes` (a copy of memory at `base`; a
/// module variable's copy counts from 0, its start being aligned) that
/// point into one of `from` (sorted, disjoint): moved to the same offset
/// in the copy at `to[i]` when `to` is given, counted either way.
pub fn move_stored(base: u64, bytes: &mut [u8], from: &[Range], to: Option<&[u64]>) -> usize {
    let (Some(lo), Some(hi)) = (from.first().map(|r| r.addr), from.last().map(Range::end)) else { return 0 };
    let skip = ((8 - base % 8) % 8) as usize;
    let Some(words) = bytes.get_mut(skip..) else { return 0 };
    let mut moved = 0;
    for chunk in words.chunks_exact_mut(8) {
        let v = u64::from_le_bytes((&*chunk).try_into().expect("8 bytes"));
        if v < lo || v > hi {
            continue;
        }
        if let Some((i, offset)) = target(v, from) {
            if let Some(to) = to {
                chunk.copy_from_slice(&(to[i] + offset).to_le_bytes());
            }
            moved += 1;
        }
    }
    moved
}

/// The argument buffer with every pointer moved from the program's copy of
/// its range to the replayer's (`bases[i]` holds `ranges[i]`).
pub fn relocate(args: &[u8], pointers: &[Pointer], ranges: &[Range], bases: &[u64]) -> Vec<u8> {
    let mut out = args.to_vec();
    for p in pointers {
        let word = &mut out[p.offset..p.offset + 8];
        let old = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let new = bases[p.range] + (old - ranges[p.range].addr);
        word.copy_from_slice(&new.to_le_bytes());
    }
    out
}

/// The regions to map for `ranges` at their own addresses: each widened
/// to whole `granularity` units (a power of two: what the driver maps),
/// then overlapping or touching regions merged. Sorted.
pub fn align_regions(ranges: &[Range], granularity: u64) -> Vec<Range> {
    let g = granularity.max(1);
    let mut regions: Vec<Range> = ranges
        .iter()
        .filter(|r| r.bytes > 0)
        .map(|r| {
            let start = r.addr / g * g;
            let end = r.end().div_ceil(g) * g;
            Range { addr: start, bytes: end - start }
        })
        .collect();
    regions.sort();
    let mut out: Vec<Range> = Vec::new();
    for r in regions {
        match out.last_mut() {
            Some(last) if r.addr <= last.end() => last.bytes = last.bytes.max(r.end() - last.addr),
            _ => out.push(r),
        }
    }
    out
}

/// The allocations a program has live, as its allocation calls made and
/// freed them (the interposer sees them through the driver's callbacks).
#[derive(Debug, Default, Clone)]
pub struct Live {
    by_base: BTreeMap<u64, u64>,
}

impl Live {
    pub fn insert(&mut self, addr: u64, bytes: u64) {
        if addr != 0 && bytes > 0 {
            self.by_base.insert(addr, bytes);
        }
    }

    pub fn remove(&mut self, addr: u64) {
        self.by_base.remove(&addr);
    }

    /// The live allocation `p` points into.
    pub fn find(&self, p: u64) -> Option<Range> {
        let (&addr, &bytes) = self.by_base.range(..=p).next_back()?;
        let r = Range { addr, bytes };
        r.contains(p).then_some(r)
    }

    pub fn all(&self) -> Vec<Range> {
        self.by_base.iter().map(|(&addr, &bytes)| Range { addr, bytes }).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.by_base.is_empty()
    }
}

/// The program's live allocations (filled by the CUDA interposer's
/// allocation callbacks; empty where nothing tracks them).
pub static LIVE: Mutex<Option<Live>> = Mutex::new(None);

/// The aligned 8-byte words of `bytes` (a copy of memory at `base`) that
/// point into an allocation `lookup` knows and no range of `known`
/// (sorted, disjoint: [`union`]'s) holds: those allocations, each once, in
/// the order first pointed to. Only words in `window` (the span of the
/// addresses `lookup` can know) are looked up: most data is no address.
pub fn pointed_to(
    base: u64,
    bytes: &[u8],
    window: (u64, u64),
    known: &[Range],
    lookup: &mut dyn FnMut(u64) -> Option<Range>,
) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    let skip = ((8 - base % 8) % 8) as usize;
    let Some(words) = bytes.get(skip..) else { return out };
    let (lo, hi) = (window.0.max(LOWEST_ADDRESS), window.1);
    let mut last: Option<Range> = None;
    for chunk in words.chunks_exact(8) {
        let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        if v < lo || v >= hi || last.is_some_and(|r| r.contains(v)) {
            continue;
        }
        let held = known.partition_point(|r| r.end() <= v);
        if known.get(held).is_some_and(|r| r.contains(v)) || out.iter().any(|r| r.contains(v)) {
            continue;
        }
        if let Some(r) = lookup(v).filter(|r| r.bytes > 0 && r.contains(v)) {
            out.push(r);
            last = Some(r);
        }
    }
    out
}

/// What following pointers stored in memory found.
#[derive(Debug, Default, PartialEq)]
pub struct Reached {
    /// Allocations beyond the known ones, in the order found, with their bytes.
    pub ranges: Vec<(Range, Vec<u8>)>,
    /// Allocations found but not copied: over the budget.
    pub left_out: Vec<Range>,
    /// Allocations found that could not be read, and why.
    pub unreadable: Vec<(Range, String)>,
}

/// Where pointers stored in memory lead: starting from `seeds` (copies of
/// memory: base address and bytes), every allocation `lookup` knows that
/// an aligned word points into and `known` does not hold is copied with
/// `read` and followed in turn (an array of pointers, a linked list), in
/// the order found, while the copies fit in `budget` bytes. `all` adds
/// every allocation of `live` first (in address order): the program's
/// whole memory. Only words within 1 TiB of `live`'s and `known`'s span
/// are looked up (`live`: the program's live allocations, sorted; empty
/// when nothing tracks them).
pub fn reach(
    seeds: &[(u64, &[u8])],
    known: &[Range],
    live: &[Range],
    all: bool,
    budget: u64,
    lookup: &mut dyn FnMut(u64) -> Option<Range>,
    read: &mut dyn FnMut(Range) -> Result<Vec<u8>, String>,
) -> Reached {
    let mut out = Reached::default();
    let mut held = union(known.to_vec());
    let mut spent = 0u64;
    // Device addresses cluster: words far from every known one are data.
    const NEAR: u64 = 1 << 40;
    let span = live.iter().chain(&held);
    let window = (
        span.clone().map(|r| r.addr).min().map_or(0, |a| a.saturating_sub(NEAR)),
        span.map(Range::end).max().map_or(0, |e| e.saturating_add(NEAR)),
    );
    let mut take = |r: Range, held: &mut Vec<Range>, out: &mut Reached| {
        if held.iter().any(|h| h.addr <= r.addr && r.end() <= h.end()) || out.left_out.contains(&r) {
            return;
        }
        if spent + r.bytes > budget {
            out.left_out.push(r);
            return;
        }
        match read(r) {
            Ok(bytes) => {
                spent += r.bytes;
                held.push(r);
                *held = union(std::mem::take(held));
                out.ranges.push((r, bytes));
            }
            Err(e) => out.unreadable.push((r, e)),
        }
    };
    if all {
        for &r in live {
            take(r, &mut held, &mut out);
        }
    }
    for (base, bytes) in seeds {
        for r in pointed_to(*base, bytes, window, &held, lookup) {
            take(r, &mut held, &mut out);
        }
    }
    // Then what each copied allocation points to, in the order they were found.
    let mut next = 0;
    while next < out.ranges.len() {
        let (r, bytes) = &out.ranges[next];
        for found in pointed_to(r.addr, bytes, window, &held, lookup) {
            take(found, &mut held, &mut out);
        }
        next += 1;
    }
    out
}

/// The one-line notes a capture leaves: what was over the budget or unreadable.
pub fn reach_notes(reached: &Reached, budget: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if !reached.left_out.is_empty() {
        let bytes: u64 = reached.left_out.iter().map(|r| r.bytes).sum();
        notes.push(format!(
            "{} allocation(s) ({}) reached through pointers in device memory were left out: over the capture budget ({}, --capture-budget); a kernel following those pointers faults in the replay",
            reached.left_out.len(),
            size(bytes),
            size(budget)
        ));
    }
    for (r, e) in &reached.unreadable {
        notes.push(format!("the allocation at {:#x} ({} bytes), reached through device memory, could not be read: {e}", r.addr, r.bytes));
    }
    notes
}

/// Bytes in words, for one-line notes.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// A region a replay compares: an allocation, or a module variable.
pub fn region_name(ranges: &[Range], globals: &[String], i: usize, len: usize) -> String {
    match ranges.get(i) {
        Some(r) => format!("allocation {i} ({} bytes at {:#x})", r.bytes, r.addr),
        None => match globals.get(i - ranges.len().min(i)) {
            Some(name) => format!("variable `{name}` ({len} bytes)"),
            None => format!("allocation {i} ({len} bytes at 0x0)"),
        },
    }
}

/// Where two snapshots of the same allocations (then module variables,
/// named by `globals`) first differ, in words a user can act on; None
/// when identical.
pub fn first_difference_named(ranges: &[Range], globals: &[String], a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<String> {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x == y {
            continue;
        }
        // Chunks compare with memcmp; only the differing chunk is scanned.
        const CHUNK: usize = 4096;
        let at = x
            .chunks(CHUNK)
            .zip(y.chunks(CHUNK))
            .position(|(p, q)| p != q)
            .map(|c| c * CHUNK + x[c * CHUNK..].iter().zip(&y[c * CHUNK..]).position(|(p, q)| p != q).unwrap_or(0))
            .unwrap_or(x.len().min(y.len()));
        return Some(format!("{} first differs at byte {at}", region_name(ranges, globals, i, x.len())));
    }
    None
}

/// Where two snapshots of the same ranges first differ, in words a user
/// can act on; None when identical.
pub fn first_difference(ranges: &[Range], a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<String> {
    first_difference_named(ranges, &[], a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn pack_places_each_value_at_its_offset() {
        let (a, b, c) = (0x7f00_0000_1000u64, 7i32, 2.5f64);
        let params = [Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }, Param { offset: 16, size: 8 }];
        let values = [&a as *const u64 as *const u8, &b as *const i32 as *const u8, &c as *const f64 as *const u8];
        // SAFETY: each value pointer points to a live local of the stated size.
        let buf = unsafe { pack(&params, &values) };
        assert_eq!(buf.len(), 24);
        assert_eq!(u64::from_le_bytes(buf[0..8].try_into().unwrap()), a);
        assert_eq!(i32::from_le_bytes(buf[8..12].try_into().unwrap()), 7);
        assert_eq!(f64::from_le_bytes(buf[16..24].try_into().unwrap()), 2.5);
    }

    #[test]
    fn pointer_words_skip_small_values_and_short_params_and_read_structs() {
        // ptr, int n (4 bytes, then padding), a 24-byte struct { int; ptr; double }.
        let mut buf = args(&[0x7f00_0000_1000, 5, 3, 0x7f00_0020_0010, 2.0f64.to_bits()]);
        buf[12..16].copy_from_slice(&0xffff_ffffu32.to_le_bytes()); // garbage padding after n
        let params = [Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }, Param { offset: 16, size: 24 }];
        let words = pointer_words(&buf, &params);
        // n's word is never read; the struct's int is small; its double is a candidate the driver will reject.
        assert_eq!(words, [(0, 0x7f00_0000_1000), (24, 0x7f00_0020_0010), (32, 2.0f64.to_bits())]);
    }

    #[test]
    fn reachable_resolves_unions_and_locates_pointers() {
        let a = Range { addr: 0x1000_0000, bytes: 0x1000 };
        let b = Range { addr: 0x2000_0000, bytes: 0x800 };
        let allocations = [a, b];
        let lookup = |p: u64| allocations.iter().find(|r| r.contains(p)).copied();
        // a's base, b's middle, a's middle again (aliasing), and a double.
        let words = [(0, a.addr), (8, b.addr + 0x10), (16, a.addr + 0x20), (24, 2.0f64.to_bits())];
        let (ranges, pointers) = reachable(&words, lookup);
        assert_eq!(ranges, [a, b]);
        assert_eq!(pointers, [Pointer { offset: 0, range: 0 }, Pointer { offset: 8, range: 1 }, Pointer { offset: 16, range: 0 }]);
    }

    #[test]
    fn union_merges_overlaps_only() {
        let r = |addr, bytes| Range { addr, bytes };
        assert_eq!(union(vec![r(300, 10), r(100, 50), r(120, 10), r(140, 30), r(170, 5)]), [r(100, 70), r(170, 5), r(300, 10)]);
    }

    #[test]
    fn relocation_keeps_offsets_into_allocations() {
        let ranges = [Range { addr: 0x1000, bytes: 0x100 }, Range { addr: 0x9000, bytes: 0x100 }];
        let buf = args(&[0x1010, 42, 0x9000]);
        let pointers = [Pointer { offset: 0, range: 0 }, Pointer { offset: 16, range: 1 }];
        assert_eq!(relocate(&buf, &pointers, &ranges, &[0x5000, 0x7000]), args(&[0x5010, 42, 0x7000]));
    }

    #[test]
    fn regions_are_whole_granules_merged_when_they_overlap_or_touch() {
        const G: u64 = 2 << 20;
        let r = |addr, bytes| Range { addr, bytes };
        // Two small allocations in one granule, one straddling two, one a granule away, one empty.
        let ranges = [
            r(0x7f00_0020_0100, 256),
            r(0x7f00_0020_0400, 512),
            r(0x7f00_005f_ff00, 0x200),
            r(0x7f00_00a0_0000, G),
            r(0x7f00_00e0_0000, 0),
        ];
        assert_eq!(align_regions(&ranges, G), [r(0x7f00_0020_0000, 3 * G), r(0x7f00_00a0_0000, G)]);
        // Every range lies inside a region; every region starts and ends on the granularity.
        for x in &ranges[..4] {
            assert!(align_regions(&ranges, G).iter().any(|g| g.addr <= x.addr && x.end() <= g.end()));
        }
        assert!(align_regions(&ranges, G).iter().all(|g| g.addr % G == 0 && g.bytes % G == 0));
        // Touching granules merge; an exact granule stays one.
        assert_eq!(align_regions(&[r(0, G), r(G, 1)], G), [r(0, 2 * G)]);
        assert_eq!(align_regions(&[r(4 * G, G)], G), [r(4 * G, G)]);
    }

    #[test]
    fn live_allocations_are_found_by_any_address_inside() {
        let mut live = Live::default();
        live.insert(0x1000, 0x100);
        live.insert(0x3000, 0x10);
        live.insert(0, 8); // never an allocation
        assert_eq!(live.find(0x10ff), Some(Range { addr: 0x1000, bytes: 0x100 }));
        assert_eq!(live.find(0x1100), None);
        assert_eq!(live.find(0xfff), None);
        live.remove(0x1000);
        assert_eq!(live.find(0x1000), None);
        assert_eq!(live.all(), [Range { addr: 0x3000, bytes: 0x10 }]);
    }

    /// Memory of a program: allocations and their bytes (pointers as words).
    fn memory(allocations: &[(u64, Vec<u64>)]) -> (Vec<Range>, impl Fn(Range) -> Result<Vec<u8>, String> + '_) {
        let live: Vec<Range> = allocations.iter().map(|(a, w)| Range { addr: *a, bytes: 8 * w.len() as u64 }).collect();
        let read = move |r: Range| {
            allocations.iter().find(|(a, _)| *a == r.addr).map(|(_, w)| args(w)).ok_or_else(|| format!("no allocation at {:#x}", r.addr))
        };
        (live, read)
    }

    #[test]
    fn pointers_stored_in_memory_are_followed_to_every_allocation_they_reach() {
        // An argument array of two pointers (into A, into the middle of B), A a list node
        // pointing at C, C pointing back at A (a cycle), D live but never pointed to.
        let (a, b, c, d, table) = (0x7f00_0010_0000u64, 0x7f00_0020_0000, 0x7f00_0030_0000, 0x7f00_0040_0000, 0x7f00_0050_0000);
        let allocations =
            vec![(a, vec![c, 1]), (b, vec![5, 6, 7]), (c, vec![a + 8, 2.0f64.to_bits()]), (d, vec![0]), (table, vec![a, b + 16])];
        let (live, mut read) = memory(&allocations);
        let mut lookup = |p: u64| live.iter().find(|r| r.contains(p)).copied();
        let known = [Range { addr: table, bytes: 16 }];
        let seed = args(&[a, b + 16]);
        let reached = reach(&[(table, &seed)], &known, &live, false, 1 << 20, &mut lookup, &mut read);
        let found: Vec<u64> = reached.ranges.iter().map(|(r, _)| r.addr).collect();
        assert_eq!(found, [a, b, c], "breadth first, each once, D never");
        assert_eq!(reached.ranges[2].1, args(&[a + 8, 2.0f64.to_bits()]));
        assert!(reached.left_out.is_empty() && reached.unreadable.is_empty());
        // Over the budget: what does not fit is left out, and said.
        let reached = reach(&[(table, &seed)], &known, &live, false, 30, &mut lookup, &mut read);
        let found: Vec<u64> = reached.ranges.iter().map(|(r, _)| r.addr).collect();
        assert_eq!(found, [a]);
        assert_eq!(reached.left_out, [Range { addr: b, bytes: 24 }, Range { addr: c, bytes: 16 }]);
        assert_eq!(
            reach_notes(&reached, 30),
            ["2 allocation(s) (40 bytes) reached through pointers in device memory were left out: over the capture budget (30 bytes, --capture-budget); a kernel following those pointers faults in the replay"]
        );
        // All: every live allocation, pointed to or not.
        let reached = reach(&[], &known, &live, true, 1 << 20, &mut lookup, &mut read);
        assert_eq!(reached.ranges.len(), 4);
        // Untracked: the lookup is asked about words near the known ranges only.
        let asked = std::cell::RefCell::new(vec![]);
        let mut asking = |p: u64| {
            asked.borrow_mut().push(p);
            live.iter().find(|r| r.contains(p)).copied()
        };
        let far = args(&[a, 0x0000_0003_0000_0005, 2.0f64.to_bits()]);
        let reached = reach(&[(table, &far)], &known, &[], false, 1 << 20, &mut asking, &mut read);
        assert_eq!(reached.ranges.iter().map(|(r, _)| r.addr).collect::<Vec<_>>(), [a, c]);
        assert!(asked.borrow().iter().all(|&p| p.abs_diff(table) < 1 << 41), "{:x?}", asked.borrow());
    }

    #[test]
    fn pointed_to_reads_aligned_words_only_and_skips_known_ranges() {
        let live = [Range { addr: 0x10_0000, bytes: 64 }, Range { addr: 0x20_0000, bytes: 64 }];
        let mut lookup = |p: u64| live.iter().find(|r| r.contains(p)).copied();
        // At base 0x1004: the first 4 bytes are not an aligned word; the pointer at 0x1008 is.
        let mut bytes = vec![0u8; 4];
        bytes.extend(args(&[0x20_0008, 0x10_0000]));
        let known = [Range { addr: 0x10_0000, bytes: 64 }];
        assert_eq!(pointed_to(0x1004, &bytes, (0, u64::MAX), &known, &mut lookup), [live[1]]);
        // Outside the window nothing is looked up.
        assert!(pointed_to(0x1004, &bytes, (0x30_0000, 0x40_0000), &known, &mut lookup).is_empty());
    }

    #[test]
    fn reindexed_pointers_name_the_range_that_holds_them_now() {
        let buf = args(&[0x1010, 42, 0x9000]);
        let pointers = [Pointer { offset: 0, range: 0 }, Pointer { offset: 16, range: 1 }];
        let ranges = [Range { addr: 0x500, bytes: 0x10 }, Range { addr: 0x1000, bytes: 0x100 }, Range { addr: 0x9000, bytes: 0x100 }];
        assert_eq!(reindex(&buf, &pointers, &ranges), [Pointer { offset: 0, range: 1 }, Pointer { offset: 16, range: 2 }]);
    }

    #[test]
    fn pointers_stored_in_memory_move_with_the_copies_and_nothing_else_does() {
        let from = [Range { addr: 0x7f00_0000_0000, bytes: 0x100 }, Range { addr: 0x7f00_0010_0000, bytes: 0x40 }];
        let to = [0x5000_0000u64, 0x6000_0000];
        // At base 0x...04: 4 bytes of padding, then words: into range 0, into range 1, the end of
        // range 1 (a C++ end()), a double, a small integer, just past range 0's end (no range's end: not moved).
        let words = [0x7f00_0000_0010u64, 0x7f00_0010_0008, 0x7f00_0010_0040, 2.5f64.to_bits(), 7, 0x7f00_0000_0101];
        let mut bytes = vec![0xee; 4];
        bytes.extend(args(&words));
        let mut counted = bytes.clone();
        assert_eq!(move_stored(0x7f00_0020_0004, &mut counted, &from, None), 3);
        assert_eq!(counted, bytes, "counting moves nothing");
        assert_eq!(move_stored(0x7f00_0020_0004, &mut bytes, &from, Some(&to)), 3);
        assert_eq!(bytes[..4], [0xee; 4]);
        assert_eq!(bytes[4..], args(&[0x5000_0010, 0x6000_0008, 0x6000_0040, 2.5f64.to_bits(), 7, 0x7f00_0000_0101]));
        assert_eq!(move_stored(0, &mut [], &from, Some(&to)), 0);
        assert_eq!(move_stored(0, &mut args(&[0x7f00_0000_0010]), &[], None), 0);
    }

    #[test]
    fn first_difference_names_allocation_and_byte() {
        let ranges = [Range { addr: 0x1000, bytes: 8 }, Range { addr: 0x2000, bytes: 10_000 }];
        let a = vec![vec![1u8; 8], vec![0u8; 10_000]];
        let mut b = a.clone();
        assert_eq!(first_difference(&ranges, &a, &b), None);
        b[1][9000] = 1;
        assert_eq!(first_difference(&ranges, &a, &b).unwrap(), "allocation 1 (10000 bytes at 0x2000) first differs at byte 9000");
        // Module variables follow the allocations, by name.
        let (mut x, mut y) = (a.clone(), a.clone());
        x.push(vec![0, 0, 0, 0]);
        y.push(vec![0, 0, 1, 0]);
        let names = ["counter".to_string()];
        assert_eq!(first_difference_named(&ranges, &names, &x, &y).unwrap(), "variable `counter` (4 bytes) first differs at byte 2");
    }
}
