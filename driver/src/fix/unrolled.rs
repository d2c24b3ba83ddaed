//! Which loops an unroll cap changed, and what pragma reproduces it:
//! LoopUnroll's own optimization records (`-fsave-optimization-record`,
//! passes `loop-unroll`) from the unit's O3 compile with line tables, once
//! plain and once with the decisions.
//!
//! A cap is a maximum on O3's own unroll factor (passes/src/unroll_cap.rs),
//! not a rewrite of loop IDs, so the IR before O3 cannot say which loops it
//! bounds; the unroller's records can, and each names the function it
//! unrolled in (after inlining: the kernel), so a template's instantiations,
//! which share every loop's position, stay apart. A loop whose records
//! differ gets `#pragma unroll K` when the capped compile unrolled it by K,
//! and `#pragma nounroll` when it did not unroll it (or only peeled it).
//! Where the copies of one loop in one kernel were unrolled differently, no
//! one pragma serves them all: that loop is reported, not patched. fix then
//! compiles the patch and keeps a kernel's hunks only when its numbers
//! match the tuner's (verify.rs).

use std::collections::{BTreeMap, BTreeSet};

use super::debug_ir::{self, ChangedLoop, LoopStart, Pos, Unroll};

/// What LoopUnroll did to one copy of a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Unrolled {
    /// "completely unrolled loop with N iterations"
    Fully(u32),
    /// "unrolled loop by a factor of N" (with or without a run-time trip count)
    By(u32),
    /// "peeled loop by N iterations"
    Peeled(u32),
}

/// One record: where the loop starts (as clang names the file), the
/// function it was unrolled in, and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Remark {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub function: String,
    pub what: Unrolled,
}

/// The `!Passed` records of `loop-unroll` in an optimization record file:
/// ```yaml
/// --- !Passed
/// Pass:            loop-unroll
/// Name:            FullyUnrolled
/// DebugLoc:        { File: k.hip, Line: 29, Column: 5 }
/// Function:        _Z5ztileIfEvPT_PKS0_iiS0_
/// Args:
///   - String:          'completely unrolled loop with '
///   - UnrollCount:     '16'
/// ```
pub(crate) fn parse(yaml: &str) -> Vec<Remark> {
    let mut out = Vec::new();
    for doc in yaml.split("\n--- ").map(|d| d.trim_start_matches("--- ")) {
        if !doc.starts_with("!Passed") {
            continue;
        }
        let field = |key: &str| doc.lines().find_map(|l| l.trim_start().strip_prefix(key)).map(|v| unquote(v.trim()));
        if field("Pass:").as_deref() != Some("loop-unroll") {
            continue;
        }
        let count = |key: &str| field(key).and_then(|v| v.parse::<u32>().ok());
        let what = match field("Name:").as_deref() {
            Some("FullyUnrolled") => count("- UnrollCount:").map(Unrolled::Fully),
            Some("PartialUnrolled") => count("- UnrollCount:").map(Unrolled::By),
            Some("Peeled") => count("- PeelCount:").map(Unrolled::Peeled),
            _ => None,
        };
        // A long flow mapping goes on over lines: `{ File: 'k.cuh', Line: 72,\n   Column: 13 }`.
        let at = doc.find("DebugLoc:").and_then(|i| {
            let rest = &doc[i + "DebugLoc:".len()..];
            Some(rest[..rest.find('}')? + 1].split_whitespace().collect::<Vec<_>>().join(" "))
        });
        let (Some(what), Some(function), Some(at)) = (what, field("Function:"), at) else { continue };
        let Some((file, line, col)) = debug_loc(&at) else { continue };
        if line > 0 {
            out.push(Remark { file, line, col, function, what });
        }
    }
    out
}

/// `{ File: k.hip, Line: 29, Column: 5 }`
fn debug_loc(text: &str) -> Option<(String, u32, u32)> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let (mut file, mut line, mut col) = (None, None, 0);
    // The file may be quoted and hold commas; the numbers never do.
    let (file_part, numbers) = inner.rsplit_once(", Line:")?;
    file = file.or_else(|| file_part.trim().strip_prefix("File:").map(|f| unquote(f.trim())));
    for part in format!("Line:{numbers}").split(',') {
        let (k, v) = part.split_once(':')?;
        match k.trim() {
            "Line" => line = v.trim().parse().ok(),
            "Column" => col = v.trim().parse().unwrap_or(0),
            _ => {}
        }
    }
    Some((file?, line?, col))
}

/// A YAML scalar, its quotes taken off.
fn unquote(v: &str) -> String {
    if let Some(q) = v.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
        return q.replace("''", "'");
    }
    if let Some(q) = v.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        return q.replace("\\\"", "\"").replace("\\\\", "\\");
    }
    v.to_string()
}

/// What the patch must ask for: the loops whose remarks differ between the
/// plain and the capped compile, tied to the functions whose source holds
/// them (`starts`, from the IR before O3); and the loops no pragma spells.
pub(crate) fn changed(
    plain: &[Remark],
    capped: &[Remark],
    starts: &[LoopStart],
    callees: &BTreeMap<String, BTreeSet<String>>,
    uncapped: &BTreeSet<String>,
) -> (Vec<ChangedLoop>, Vec<(Pos, String)>) {
    // A loop by the function whose source holds it: a record in function F
    // (a kernel, or a helper unrolled before it was inlined) belongs to the
    // holders at its place that F reaches, so a template's instantiations,
    // which share every loop's place, stay apart. Copies in kernels that
    // cap nothing are the same in both compiles, and say nothing.
    let mut by_loop: BTreeMap<(Pos, String), (Vec<Unrolled>, Vec<Unrolled>)> = BTreeMap::new();
    for (remarks, capped_side) in [(plain, false), (capped, true)] {
        for r in remarks.iter().filter(|r| !uncapped.contains(&r.function)) {
            let holders = starts
                .iter()
                .filter(|s| s.at.line == r.line && s.at.col == r.col && same_file(&s.at.file, &r.file))
                .filter(|s| debug_ir::reaches(callees, &r.function, &s.function));
            for h in holders {
                let entry = by_loop.entry((h.at.clone(), h.function.clone())).or_default();
                if capped_side { &mut entry.1 } else { &mut entry.0 }.push(r.what);
            }
        }
    }
    let (mut loops, mut unpatchable) = (Vec::new(), Vec::new());
    for ((at, holder), (mut before, mut after)) in by_loop {
        before.sort();
        after.sort();
        if before == after {
            continue;
        }
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
                let why = format!(
                    "unroll-cap unrolled the copies of this loop differently ({}); no one pragma spells that, not patched",
                    what.join(", ")
                );
                if !unpatchable.iter().any(|(p, _)| *p == at) {
                    unpatchable.push((at, why));
                }
                continue;
            }
        };
        loops.push(ChangedLoop { function: holder, at, after: pragma });
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

    /// One record per loop copy, as clang 22 writes them.
    fn record(name: &str, line: u32, function: &str, arg: &str, n: u32) -> String {
        // As clang writes a long one: the mapping goes on over two lines.
        format!(
            "--- !Passed\nPass:            loop-unroll\nName:            {name}\nDebugLoc:        {{ File: 'examples/k, 2.hip', Line: {line}, \n                   Column: 5 }}\nFunction:        {function}\nArgs:\n  - String:          'x '\n  - {arg}:     '{n}'\n...\n"
        )
    }

    fn records(list: &[(&str, u32, &str, u32)]) -> String {
        let mut out = String::new();
        for &(name, line, function, n) in list {
            let arg = if name == "Peeled" { "PeelCount" } else { "UnrollCount" };
            out.push_str(&record(name, line, function, arg, n));
        }
        out.push_str("--- !Missed\nPass:            loop-unroll\nName:            Other\n...\n");
        out
    }

    const K: &str = "_Z1kPf";

    fn plain() -> String {
        records(&[
            ("FullyUnrolled", 12, K, 16),
            ("PartialUnrolled", 20, K, 8),
            ("FullyUnrolled", 30, K, 4),
            ("FullyUnrolled", 30, K, 4),
            ("FullyUnrolled", 40, K, 8),
            ("FullyUnrolled", 40, K, 8),
            ("FullyUnrolled", 50, K, 8),
            ("FullyUnrolled", 60, "_Z1tIfEvPT_", 16),
            ("FullyUnrolled", 60, "_Z1tIdEvPT_", 16),
            ("FullyUnrolled", 70, "_Z6helperPf", 3),
            ("FullyUnrolled", 70, "_Z5otherPf", 3),
        ])
    }

    fn start(function: &str, line: u32) -> LoopStart {
        LoopStart { function: function.into(), at: Pos { file: "/src/examples/k, 2.hip".into(), line, col: 5 } }
    }

    fn graph() -> BTreeMap<String, BTreeSet<String>> {
        BTreeMap::from([(K.to_string(), BTreeSet::from(["_Z6helperPf".to_string()]))])
    }

    #[test]
    fn records_are_read_with_their_place_and_function() {
        let r = parse(&plain());
        assert_eq!(r.len(), 11);
        assert_eq!(r[0], Remark { file: "examples/k, 2.hip".into(), line: 12, col: 5, function: K.into(), what: Unrolled::Fully(16) });
        assert_eq!(r[1].what, Unrolled::By(8));
        assert_eq!(parse(&records(&[("Peeled", 3, K, 2)]))[0].what, Unrolled::Peeled(2));
    }

    #[test]
    fn each_difference_becomes_the_pragma_that_spells_it() {
        let capped = records(&[
            ("PartialUnrolled", 12, K, 4),
            ("FullyUnrolled", 30, K, 4),
            ("FullyUnrolled", 40, K, 8),
            ("PartialUnrolled", 40, K, 2),
            ("Peeled", 50, K, 1),
            ("FullyUnrolled", 60, "_Z1tIdEvPT_", 16),
            ("PartialUnrolled", 70, "_Z6helperPf", 2),
            ("FullyUnrolled", 70, "_Z5otherPf", 3),
        ]);
        let starts = [
            start(K, 12),
            start("_Z6helperPf", 20),
            start(K, 30),
            start(K, 40),
            start(K, 50),
            start("_Z1tIfEvPT_", 60),
            start("_Z1tIdEvPT_", 60),
            start("_Z6helperPf", 70),
        ];
        let uncapped = BTreeSet::from(["_Z1tIdEvPT_".to_string(), "_Z5otherPf".to_string()]);
        let (loops, unpatchable) = changed(&parse(&plain()), &parse(&capped), &starts, &graph(), &uncapped);
        let got: Vec<(&str, u32, Unroll)> = loops.iter().map(|l| (l.function.as_str(), l.at.line, l.after)).collect();
        // 12: partial 4; 20: not unrolled, in the helper the kernel calls;
        // 30: fewer copies, nothing to ask; 50: only peeled, so not unrolled;
        // 60: a template's loop, left rolled in the float instantiation only;
        // 70: the helper's own copy by 2, the copy in a kernel that caps
        // nothing unchanged. 40: two copies unrolled differently.
        assert_eq!(
            got,
            [
                ("_Z1kPf", 12, Unroll::Count(4)),
                ("_Z6helperPf", 20, Unroll::Disable),
                ("_Z1kPf", 50, Unroll::Disable),
                ("_Z1tIfEvPT_", 60, Unroll::Disable),
                ("_Z6helperPf", 70, Unroll::Count(2)),
            ]
        );
        assert_eq!(unpatchable.len(), 1);
        assert_eq!(unpatchable[0].0.line, 40);
        assert!(unpatchable[0].1.contains("(fully, 8 iterations, by 2)"), "{}", unpatchable[0].1);
    }

    #[test]
    fn identical_records_change_nothing() {
        let starts = [start(K, 12)];
        assert_eq!(changed(&parse(&plain()), &parse(&plain()), &starts, &graph(), &BTreeSet::new()), (vec![], vec![]));
    }
}
