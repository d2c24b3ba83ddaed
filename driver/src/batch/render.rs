//! The codebase summary, and a batch's report as a table, JSON or CSV.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Batch, KernelRow, Selection, Status};
use crate::names::short_name;
use crate::output::{self, Format, Tabular};

/// What the whole codebase looks like before and after tuning.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// HIP translation units in this report.
    pub units: usize,
    /// Units × targets, by what happened to them.
    pub targets: Targets,
    /// Translation units with a failure (the exit status, capped at 100).
    pub failed_units: usize,
    pub kernels: usize,
    /// Kernels whose occupancy rose.
    pub improved: usize,
    /// Kernels whose occupancy VGPRs or SGPRs limit.
    pub register_limited: BeforeAfter<usize>,
    /// Kernels per occupancy (waves per SIMD).
    pub occupancy: BeforeAfter<BTreeMap<u32, usize>>,
    /// VGPR + SGPR spills, summed over kernels.
    pub spills: Spills,
    /// Results held for a person's review: caller assumptions, unrolling
    /// traded for occupancy, inexact pow2.
    pub suggestions: Suggestions,
    /// Variant compiles this run (cached units compile none).
    pub variants: usize,
    pub seconds: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Targets {
    pub tuned: usize,
    pub cached: usize,
    pub failed: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct BeforeAfter<T> {
    pub before: T,
    pub after: T,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Spills {
    pub before: u64,
    pub after: u64,
    pub removed: u64,
    pub kernels_spilling_before: usize,
    pub kernels_spilling_after: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Suggestions {
    /// Kernels with a suggestion.
    pub kernels: usize,
    pub noalias: usize,
    pub launch_bounds: usize,
    pub unroll_cap: usize,
    pub pow2: usize,
}

fn register_limited(limiter: &str) -> bool {
    matches!(limiter, "vgpr" | "sgpr")
}

impl Summary {
    pub(crate) fn of(batch: &Batch) -> Summary {
        let k = &batch.kernels;
        let count = |s: Status| batch.units.iter().filter(|u| u.status == s && u.arch.is_some()).count();
        let units: BTreeSet<(usize, &str)> = batch.units.iter().filter(|u| u.arch.is_some()).map(|u| (u.entry, u.file.as_str())).collect();
        let mut occupancy = BeforeAfter::<BTreeMap<u32, usize>>::default();
        for r in k {
            *occupancy.before.entry(r.before.occupancy).or_default() += 1;
            *occupancy.after.entry(r.after.occupancy).or_default() += 1;
        }
        let before: u64 = k.iter().map(|r| u64::from(r.spills_before())).sum();
        let after: u64 = k.iter().map(|r| u64::from(r.spills_after())).sum();
        let removed: u64 = k.iter().map(|r| u64::from(r.spills_before().saturating_sub(r.spills_after()))).sum();
        let suggesting = |kind: &str| k.iter().filter(|r| r.suggested.iter().any(|s| s.starts_with(kind))).count();
        Summary {
            selection: batch.selection.clone(),
            units: units.len(),
            targets: Targets { tuned: count(Status::Tuned), cached: count(Status::Cached), failed: count(Status::Failed) },
            failed_units: batch.failed_units(),
            kernels: k.len(),
            improved: k.iter().filter(|r| r.after.occupancy > r.before.occupancy).count(),
            register_limited: BeforeAfter {
                before: k.iter().filter(|r| register_limited(&r.limiter_before)).count(),
                after: k.iter().filter(|r| register_limited(&r.limiter)).count(),
            },
            occupancy,
            spills: Spills {
                before,
                after,
                removed,
                kernels_spilling_before: k.iter().filter(|r| r.spills_before() > 0).count(),
                kernels_spilling_after: k.iter().filter(|r| r.spills_after() > 0).count(),
            },
            suggestions: Suggestions {
                kernels: k.iter().filter(|r| !r.suggested.is_empty()).count(),
                noalias: suggesting("noalias"),
                launch_bounds: suggesting("launch-bounds"),
                unroll_cap: suggesting("unroll-cap"),
                pow2: suggesting("pow2"),
            },
            variants: batch.units.iter().filter(|u| u.status == Status::Tuned).map(|u| u.variants).sum(),
            seconds: batch.seconds,
        }
    }

    /// Every occupancy value either histogram has, in order.
    pub(crate) fn occupancy_levels(&self) -> Vec<u32> {
        let levels: BTreeSet<u32> = self.occupancy.before.keys().chain(self.occupancy.after.keys()).copied().collect();
        levels.into_iter().collect()
    }
}

/// `path` for people: `a/b/../c` read as `a/c`, and relative to the
/// current directory when it lies under it.
pub(crate) fn display_path(path: &str) -> String {
    let clean = super::compile_db::lexical(std::path::Path::new(path));
    let cwd = std::env::current_dir().ok();
    cwd.and_then(|c| clean.strip_prefix(c).ok().map(|p| p.display().to_string())).unwrap_or_else(|| clean.display().to_string())
}

/// `x` when it did not change, else `x → y`.
pub(super) fn arrow(x: u32, y: u32) -> String {
    if x == y {
        x.to_string()
    } else {
        format!("{x} → {y}")
    }
}

impl Tabular for KernelRow {
    fn header() -> Vec<&'static str> {
        vec!["unit", "kernel", "arch", "VGPR", "spills", "occupancy", "applied", "suggested", "status", "why"]
    }

    fn cells(&self) -> Vec<String> {
        let (b, a) = (&self.before, &self.after);
        let list = |v: &[String]| if v.is_empty() { "-".to_string() } else { v.join(", ") };
        vec![
            display_path(&self.unit),
            short_name(&self.name).to_string(),
            self.arch.clone(),
            arrow(b.vgpr, a.vgpr),
            arrow(self.spills_before(), self.spills_after()),
            arrow(b.occupancy, a.occupancy),
            list(&self.applied),
            list(&self.suggested),
            if self.cached { "cached" } else { "tuned" }.to_string(),
            self.why.clone(),
        ]
    }
}

pub fn render(batch: &Batch, format: Format) -> String {
    let summary = Summary::of(batch);
    match format {
        Format::Table => table(batch, &summary),
        Format::Json => {
            let doc = serde_json::json!({
                "source": batch.source,
                "summary": summary,
                "units": batch.units,
                "kernels": batch.kernels,
            });
            serde_json::to_string_pretty(&doc).expect("report serializes") + "\n"
        }
        Format::Csv => csv(&batch.kernels),
    }
}

fn table(batch: &Batch, s: &Summary) -> String {
    let mut out = String::new();
    let mut line = format!("{} HIP units", s.units);
    if let Some(sel) = &s.selection {
        line.push_str(&format!(" from {} entries", sel.entries));
        let left_out = [
            (sel.not_hip, "not HIP"),
            (sel.filtered_out, "filtered out"),
            (sel.duplicates, "duplicates"),
            (sel.in_other_shards, "in other shards"),
        ];
        for (n, what) in left_out.iter().filter(|(n, _)| *n > 0) {
            line.push_str(&format!(", {n} {what}"));
        }
    }
    out.push_str(&format!(
        "{line}; targets: {} tuned, {} cached, {} failed ({:.1} s)\n",
        s.targets.tuned, s.targets.cached, s.targets.failed, s.seconds
    ));
    out.push_str(&format!(
        "{} kernels: {} improved, register-limited {} → {}, spills {} → {} ({} removed), {} with suggestions awaiting review ({} noalias, {} launch bounds, {} unroll cap, {} pow2)\n",
        s.kernels,
        s.improved,
        s.register_limited.before,
        s.register_limited.after,
        s.spills.before,
        s.spills.after,
        s.spills.removed,
        s.suggestions.kernels,
        s.suggestions.noalias,
        s.suggestions.launch_bounds,
        s.suggestions.unroll_cap,
        s.suggestions.pow2
    ));
    let levels = s.occupancy_levels();
    if !levels.is_empty() {
        let row = |label: &str, h: &BTreeMap<u32, usize>| {
            let cells: String = levels.iter().map(|l| format!("{:>5}", h.get(l).copied().unwrap_or(0))).collect();
            format!("  {label:<24}{cells}\n")
        };
        let head: String = levels.iter().map(|l| format!("{l:>5}")).collect();
        out.push_str(&format!("  {:<24}{head}\n", "occupancy (waves/SIMD)"));
        out.push_str(&row("kernels before", &s.occupancy.before));
        out.push_str(&row("kernels after", &s.occupancy.after));
    }
    if !batch.kernels.is_empty() {
        out.push('\n');
        out.push_str(&output::render(&batch.kernels, Format::Table, "kernels"));
        for r in &batch.kernels {
            for sug in &r.suggestions {
                out.push_str(&format!("suggestion for {} on {}: {sug}\n", short_name(&r.name), r.arch));
            }
        }
    }
    out
}

fn csv(rows: &[KernelRow]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "unit",
        "file",
        "line",
        "kernel",
        "symbol",
        "arch",
        "status",
        "vgpr_before",
        "vgpr_after",
        "sgpr_before",
        "sgpr_after",
        "spills_before",
        "spills_after",
        "scratch_before",
        "scratch_after",
        "occupancy_before",
        "occupancy_after",
        "limiter_before",
        "limiter_after",
        "applied",
        "suggested",
        "variants",
        "why",
    ])
    .expect("csv to memory");
    for r in rows {
        let (b, a) = (&r.before, &r.after);
        w.write_record([
            r.unit.clone(),
            r.file.clone(),
            r.line.to_string(),
            r.name.clone(),
            r.symbol.clone(),
            r.arch.clone(),
            if r.cached { "cached" } else { "tuned" }.to_string(),
            b.vgpr.to_string(),
            a.vgpr.to_string(),
            b.sgpr.to_string(),
            a.sgpr.to_string(),
            r.spills_before().to_string(),
            r.spills_after().to_string(),
            b.scratch_bytes.to_string(),
            a.scratch_bytes.to_string(),
            b.occupancy.to_string(),
            a.occupancy.to_string(),
            r.limiter_before.clone(),
            r.limiter.clone(),
            r.applied.join(" "),
            r.suggested.join(" "),
            r.variants.to_string(),
            r.why.clone(),
        ])
        .expect("csv to memory");
    }
    String::from_utf8(w.into_inner().expect("csv flush")).expect("csv is utf-8")
}
