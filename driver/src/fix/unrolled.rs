//! Which loops an unroll cap changed, and what pragma reproduces it:
//! LoopUnroll's own remarks (`-Rpass=loop-unroll`) from the unit's O3
//! compile with line tables, once plain and once with the decisions.
//!
//! A cap is a maximum on O3's own unroll factor (passes/src/unroll_cap.rs),
//! not a rewrite of loop IDs, so the IR before O3 cannot say which loops it
//! bounds; the unroller's remarks can. A loop whose remarks differ gets
//! `#pragma unroll K` when the capped compile unrolled it by K, and
//! `#pragma nounroll` when it did not unroll it (or only peeled it). Where
//! the kernels reaching one loop were unrolled differently, no one pragma
//! serves them all: that loop is reported, not patched. fix then compiles
//! the patch and keeps a kernel's hunks only when its numbers match the
//! tuner's (mod.rs, `verify`).

use std::collections::BTreeMap;

use super::debug_ir::{ChangedLoop, LoopStart, Pos, Unroll};

/// What LoopUnroll did to one copy of a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unrolled {
    /// "completely unrolled loop with N iterations"
    Fully(u32),
    /// "unrolled loop by a factor of N" (with or without a run-time trip count)
    By(u32),
    /// "peeled loop by N iterations"
    Peeled(u32),
}

/// One remark: where the loop starts (as clang prints it) and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remark {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub what: Unrolled,
}

/// The `-Rpass=loop-unroll` remarks in a compile's stderr. Compiling IR,
/// as fix does for AMDGPU, clang puts the place after the word:
/// `remark: k.hip:12:5: unrolled loop by a factor of 4 [-Rpass=loop-unroll]`;
/// compiling source, before it (`k.hip:12:5: remark: ...`), or, for code
/// linked in as bitcode (NVPTX), in a note on the next line:
/// `note: could not determine the original source location for k.hip:12:5`.
pub fn parse(stderr: &str) -> Vec<Remark> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(text) = line.strip_suffix(" [-Rpass=loop-unroll]") else { continue };
        let text = text.replacen(": remark: ", ": ", 1);
        let text = text.strip_prefix("remark: ").unwrap_or(&text);
        let located = split_place(text).or_else(|| {
            let note = lines.get(i + 1)?.strip_prefix("note: could not determine the original source location for ")?;
            Some((place(note)?, text))
        });
        out.extend(located.and_then(|(at, message)| remark(at, message)));
    }
    out
}

/// `FILE:LINE:COL` and the rest, split at the first `: ` after the place.
fn split_place(text: &str) -> Option<((String, u32, u32), &str)> {
    text.match_indices(": ").find_map(|(at, _)| Some((place(&text[..at])?, &text[at + 2..])))
}

fn place(text: &str) -> Option<(String, u32, u32)> {
    let mut parts = text.rsplitn(3, ':');
    let col: u32 = parts.next()?.parse().ok()?;
    let line: u32 = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_string(), line, col))
}

fn remark((file, line_no, col): (String, u32, u32), message: &str) -> Option<Remark> {
    let number = |prefix: &str| -> Option<u32> {
        message.strip_prefix(prefix)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    let what = number("completely unrolled loop with ")
        .map(Unrolled::Fully)
        .or_else(|| number("unrolled loop by a factor of ").map(Unrolled::By))
        .or_else(|| number("peeled loop by ").map(Unrolled::Peeled))?;
    (line_no > 0).then_some(Remark { file, line: line_no, col, what })
}

/// What the patch must ask for: the loops whose remarks differ between the
/// plain and the capped compile, tied to the functions whose source holds
/// them (`starts`, from the IR before O3); and the loops no pragma spells.
pub fn changed(plain: &[Remark], capped: &[Remark], starts: &[LoopStart]) -> (Vec<ChangedLoop>, Vec<(Pos, String)>) {
    type Key = (String, u32, u32);
    let mut by_loop: BTreeMap<Key, (Vec<Unrolled>, Vec<Unrolled>)> = BTreeMap::new();
    for (remarks, capped_side) in [(plain, false), (capped, true)] {
        for r in remarks {
            let entry = by_loop.entry((r.file.clone(), r.line, r.col)).or_default();
            if capped_side { &mut entry.1 } else { &mut entry.0 }.push(r.what);
        }
    }
    let (mut loops, mut unpatchable) = (Vec::new(), Vec::new());
    for ((file, line, col), (mut before, mut after)) in by_loop {
        before.sort();
        after.sort();
        if before == after {
            continue;
        }
        let holders: Vec<&LoopStart> =
            starts.iter().filter(|s| s.at.line == line && s.at.col == col && same_file(&s.at.file, &file)).collect();
        let Some(first) = holders.first() else { continue };
        let mut kinds = after.clone();
        kinds.dedup();
        let pragma = match kinds.as_slice() {
            [] | [Unrolled::Peeled(_)] => Unroll::Disable,
            [Unrolled::By(k)] => Unroll::Count(*k),
            // Fully unrolled in both, in fewer copies (an enclosing loop
            // unrolled less): this loop itself needs nothing.
            [Unrolled::Fully(_)] if before.iter().all(|b| matches!(b, Unrolled::Fully(_))) => continue,
            [Unrolled::Fully(n)] => Unroll::Count(*n),
            _ => {
                let what: Vec<String> = kinds.iter().map(describe).collect();
                unpatchable.push((
                    first.at.clone(),
                    format!("unroll-cap unrolled the copies of this loop differently ({}); no one pragma spells that, not patched", what.join(", ")),
                ));
                continue;
            }
        };
        for h in holders {
            loops.push(ChangedLoop { function: h.function.clone(), at: h.at.clone(), after: pragma });
        }
    }
    (loops, unpatchable)
}

fn describe(u: &Unrolled) -> String {
    match u {
        Unrolled::Fully(n) => format!("fully, {n} iterations"),
        Unrolled::By(k) => format!("by {k}"),
        Unrolled::Peeled(n) => format!("{n} peeled"),
    }
}

/// Debug info names a file as `directory/filename`; clang prints the
/// filename as it was given, which may be relative (`../common/k.h`).
fn same_file(debug_info: &str, printed: &str) -> bool {
    debug_info == printed
        || debug_info.ends_with(&format!("/{}", printed.trim_start_matches("./")))
        || super::ast::canonical(debug_info) == super::ast::canonical(printed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "\
remark: examples/k.hip:12:5: completely unrolled loop with 16 iterations [-Rpass=loop-unroll]
examples/k.hip:20:3: remark: unrolled loop by a factor of 8 with run-time trip count [-Rpass=loop-unroll]
examples/k.hip:30:3: remark: completely unrolled loop with 4 iterations [-Rpass=loop-unroll]
examples/k.hip:30:3: remark: completely unrolled loop with 4 iterations [-Rpass=loop-unroll]
examples/k.hip:40:3: remark: completely unrolled loop with 8 iterations [-Rpass=loop-unroll]
examples/k.hip:40:3: remark: completely unrolled loop with 8 iterations [-Rpass=loop-unroll]
examples/k.hip:50:3: remark: completely unrolled loop with 8 iterations [-Rpass=loop-unroll]
k.hip:7:1: remark: some other remark [-Rpass=loop-unroll]
";

    fn start(function: &str, line: u32, col: u32) -> LoopStart {
        LoopStart { function: function.into(), at: Pos { file: "/src/examples/k.hip".into(), line, col } }
    }

    #[test]
    fn remarks_are_read_with_their_place() {
        let r = parse(PLAIN);
        assert_eq!(r.len(), 7);
        assert_eq!(r[0], Remark { file: "examples/k.hip".into(), line: 12, col: 5, what: Unrolled::Fully(16) });
        assert_eq!(r[1].what, Unrolled::By(8));
        assert_eq!(parse("x.hip:3:4: remark: peeled loop by 2 iterations [-Rpass=loop-unroll]")[0].what, Unrolled::Peeled(2));
        let linked = "remark: unrolled loop by a factor of 2 [-Rpass=loop-unroll]\nnote: could not determine the original source location for /src/k.cu:9:3\n";
        assert_eq!(parse(linked), [Remark { file: "/src/k.cu".into(), line: 9, col: 3, what: Unrolled::By(2) }]);
    }

    #[test]
    fn each_difference_becomes_the_pragma_that_spells_it() {
        let capped = "\
examples/k.hip:12:5: remark: unrolled loop by a factor of 4 [-Rpass=loop-unroll]
examples/k.hip:30:3: remark: completely unrolled loop with 4 iterations [-Rpass=loop-unroll]
examples/k.hip:40:3: remark: completely unrolled loop with 8 iterations [-Rpass=loop-unroll]
examples/k.hip:40:3: remark: unrolled loop by a factor of 2 [-Rpass=loop-unroll]
examples/k.hip:50:3: remark: peeled loop by 1 iterations [-Rpass=loop-unroll]
";
        let starts = [start("_Z1kPf", 12, 5), start("_Z6helperPf", 20, 3), start("_Z1kPf", 30, 3), start("_Z1kPf", 40, 3), start("_Z1kPf", 50, 3)];
        let (loops, unpatchable) = changed(&parse(PLAIN), &parse(capped), &starts);
        let got: Vec<(&str, u32, Unroll)> = loops.iter().map(|l| (l.function.as_str(), l.at.line, l.after)).collect();
        // 12: partial 4; 20: not unrolled; 30: fewer copies, nothing to ask;
        // 50: only peeled, so not unrolled. 40: two copies unrolled differently.
        assert_eq!(got, [("_Z1kPf", 12, Unroll::Count(4)), ("_Z6helperPf", 20, Unroll::Disable), ("_Z1kPf", 50, Unroll::Disable)]);
        assert_eq!(unpatchable.len(), 1);
        assert_eq!(unpatchable[0].0.line, 40);
        assert!(unpatchable[0].1.contains("(fully, 8 iterations, by 2)"), "{}", unpatchable[0].1);
    }

    #[test]
    fn identical_remarks_change_nothing() {
        let starts = [start("_Z1kPf", 12, 5)];
        assert_eq!(changed(&parse(PLAIN), &parse(PLAIN), &starts), (vec![], vec![]));
    }
}
