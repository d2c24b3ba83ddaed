//! `--format text`: per kernel, its usage, the pressure per source line
//! next to the source, the values live at the peak, and the diagnostics.

use std::fmt::Write;

use super::{KernelExplain, Timeline};
use crate::names::short_name;

/// Live values listed before the rest are summed up.
const LIVE_SHOWN: usize = 24;
/// Width of the pressure bars.
const BAR: u32 = 24;

pub(crate) fn render(kernels: &[KernelExplain], source: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    for (i, k) in kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        kernel(&mut out, k, source(&k.file).as_deref());
    }
    out
}

pub(crate) fn usage_line(k: &KernelExplain) -> String {
    let u = &k.usage;
    let unit = crate::gpu::Arch::parse(&k.arch).map_or("", |a| a.occupancy_unit());
    let next = k.vgprs_to_next_step.map_or_else(String::new, |n| format!("; {n} fewer VGPRs for the next step"));
    format!(
        "{} VGPRs, {} AGPRs, {} SGPRs, {} bytes scratch, {} VGPR and {} SGPR spills, occupancy {} {unit} (limited by {}{next})",
        u.vgpr, u.agpr, u.sgpr, u.scratch_bytes, u.vgpr_spills, u.sgpr_spills, u.occupancy, k.limiter
    )
}

fn kernel(out: &mut String, k: &KernelExplain, source: Option<&str>) {
    let name = short_name(&k.name);
    let _ = writeln!(out, "{name} on {} ({}:{})", k.arch, k.file, k.line);
    let _ = writeln!(out, "  {}", usage_line(k));
    match (&k.line_tables_usage, k.line_tables_changed_code) {
        (Some(_), false) => {
            let _ = writeln!(out, "  line tables (-gline-tables-only): same registers, spills and occupancy as the plain build");
        }
        (Some(u), true) => {
            let _ = writeln!(
                out,
                "  warning: -gline-tables-only changed the code ({} VGPRs, {} SGPRs, {} spills); the timeline is of that build",
                u.vgpr,
                u.sgpr,
                u.vgpr_spills + u.sgpr_spills
            );
        }
        (None, _) => {}
    }
    match &k.timeline {
        Some(t) => timeline(out, k, t, source),
        None => {
            let _ = writeln!(out, "  {}", k.no_timeline.as_deref().unwrap_or("no timeline"));
        }
    }
    if k.diagnostics.is_empty() {
        let _ = writeln!(out, "\n  No seed pattern found.");
        return;
    }
    let _ = writeln!(out, "\n  Diagnostics:");
    let file_name = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
    for d in &k.diagnostics {
        let _ = writeln!(out, "  {}:{}: {}: {}", file_name(&d.file), d.line, d.kind.title(), d.message);
        let _ = writeln!(out, "      fix: {}", d.fix);
        let regtune = match (&d.transform, &d.tune) {
            (Some(t), Some(note)) => format!("{t} ({note})"),
            (Some(t), None) => format!("{t} (`regtune tune` tries it; this kernel is not in the db)"),
            (None, _) => "no transform for this".to_string(),
        };
        let _ = writeln!(out, "      regtune: {regtune}");
    }
}

fn timeline(out: &mut String, k: &KernelExplain, t: &Timeline, source: Option<&str>) {
    let p = &t.peak;
    let src: Vec<&str> = source.map(|s| s.lines().collect()).unwrap_or_default();
    let lines = ranges(&p.lines);
    let in_loop = p.in_loop.map_or_else(String::new, |(a, b)| format!(", in the loop at lines {a}-{b}"));
    let _ = writeln!(
        out,
        "\n  Pressure: at most {} VGPRs live at once (of {} allocated), at line{} {lines}{in_loop}; at most {} SGPRs",
        p.vgpr,
        k.usage.vgpr + k.usage.agpr,
        if p.lines.len() == 1 { "" } else { "s" },
        p.sgpr,
    );
    let _ = writeln!(out, "  {:>5} {:>5} {:>5} {:>6}  {:<w$}  source", "line", "VGPR", "SGPR", "instrs", "", w = BAR as usize);
    let top = p.vgpr.max(1);
    for l in &t.lines {
        let bar = "#".repeat(((l.vgpr * BAR + top / 2) / top) as usize);
        let mark = if p.lines.contains(&l.line) { '*' } else { ' ' };
        let text = src.get(l.line as usize - 1).map_or("", |s| s.trim());
        let scratch = match (l.spills, l.private_accesses) {
            (0, 0) => String::new(),
            (s, 0) => format!("  [{s} spill accesses]"),
            (0, a) => format!("  [{a} scratch accesses]"),
            (s, a) => format!("  [{s} spill, {a} scratch accesses]"),
        };
        let _ = writeln!(
            out,
            "{mark} {:>5} {:>5} {:>5} {:>6}  {:<w$}  {}{scratch}",
            l.line,
            l.vgpr,
            l.sgpr,
            l.instructions,
            bar,
            clip(text, 70),
            w = BAR as usize
        );
    }
    if let Some(&first) = p.instructions.first() {
        let _ = writeln!(
            out,
            "\n  Live at the peak (instruction {} of {}, line {}): {} VGPRs",
            first + 1,
            t.instructions,
            t.line[first],
            p.vgpr
        );
        let _ = writeln!(out, "  {:>5}  {:<40} {:>5}", "regs", "value", "line");
        for v in t.live_at_peak.iter().take(LIVE_SHOWN) {
            let line = if v.line == 0 { "-".to_string() } else { v.line.to_string() };
            let _ = writeln!(out, "  {:>5}  {:<40} {:>5}", v.registers, clip(&v.name, 40), line);
        }
        let rest: Vec<_> = t.live_at_peak.iter().skip(LIVE_SHOWN).collect();
        if !rest.is_empty() {
            let regs: u32 = rest.iter().map(|v| v.registers).sum();
            let _ = writeln!(out, "  {regs:>5}  ({} more values)", rest.len());
        }
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

/// `[3, 4, 5, 9]` → `3-5, 9`.
pub(crate) fn ranges(lines: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { lines[i].to_string() } else { format!("{}-{}", lines[i], lines[j]) });
        i = j + 1;
    }
    if parts.is_empty() {
        "?".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_ranges_are_compact() {
        assert_eq!(super::ranges(&[3, 4, 5, 9, 11, 12]), "3-5, 9, 11-12");
        assert_eq!(super::ranges(&[]), "?");
    }
}
