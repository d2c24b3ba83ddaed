//! What a launch can reach: the argument buffer's words that point into
//! device allocations (by-value structs included: every aligned word is a
//! candidate), and the allocations themselves, found through the driver's
//! address-range query.

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

/// Where two snapshots of the same ranges first differ, in words a user
/// can act on; None when identical.
pub fn first_difference(ranges: &[Range], a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<String> {
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
        let r = ranges.get(i).copied().unwrap_or(Range { addr: 0, bytes: x.len() as u64 });
        return Some(format!("allocation {i} ({} bytes at {:#x}) first differs at byte {at}", r.bytes, r.addr));
    }
    None
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
    fn first_difference_names_allocation_and_byte() {
        let ranges = [Range { addr: 0x1000, bytes: 8 }, Range { addr: 0x2000, bytes: 10_000 }];
        let a = vec![vec![1u8; 8], vec![0u8; 10_000]];
        let mut b = a.clone();
        assert_eq!(first_difference(&ranges, &a, &b), None);
        b[1][9000] = 1;
        assert_eq!(first_difference(&ranges, &a, &b).unwrap(), "allocation 1 (10000 bytes at 0x2000) first differs at byte 9000");
    }
}
