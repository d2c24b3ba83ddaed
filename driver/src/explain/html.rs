//! `--format html`: one self-contained page per kernel — inline CSS and
//! SVG, no script, nothing fetched: the usage, the pressure along the
//! machine code as a plot, the kernel's source lines annotated with their
//! pressure and diagnostics, the values live at the peak, the diagnostics.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::text::{ranges, usage_line};
use super::{Diagnostic, KernelExplain, Timeline};
use crate::names::short_name;
use crate::output::esc;

const STYLE: &str = r#"
:root { --vgpr: #2f7ed8; --sgpr: #9aa5b1; --peak: #fdecc8; --spill: #c0392b; --private: #e67e22; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px; color: #1d232a; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #dde3e8; padding-bottom: 0.2em; }
.where, .note { color: #5c6770; margin-top: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1.2em 0; }
.card { border: 1px solid #dde3e8; border-radius: 6px; padding: 0.6em 1em; min-width: 8em; }
.card .n { font-size: 1.5em; font-weight: 600; }
.card .l { color: #5c6770; font-size: 0.9em; }
svg text { font: 12px system-ui, sans-serif; fill: #1d232a; }
.legend span { display: inline-block; width: 0.9em; height: 0.9em; margin: 0 0.3em 0 1em; vertical-align: -0.1em; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 0.15em 0.5em; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.source td.code { font: 13px/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace; white-space: pre; }
table.source tr.peak { background: var(--peak); }
table.source tr.quiet td { color: #9aa5b1; }
.bar { display: inline-block; height: 0.8em; background: var(--vgpr); vertical-align: middle; }
.tag { display: inline-block; white-space: nowrap; background: #fdf3e1; border-radius: 3px; padding: 0 0.35em; margin-left: 0.5em; font: 12px system-ui, sans-serif; }
ul.diagnostics li { margin-bottom: 0.8em; }
.fix, .regtune { color: #3b4650; }
"#;

pub(crate) fn page(k: &KernelExplain, source: Option<&str>) -> String {
    let name = short_name(&k.name);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(h, "<title>regtune explain: {} on {}</title>\n<style>{STYLE}</style>\n</head>\n<body>", esc(name), esc(&k.arch));
    let _ = writeln!(h, "<h1 data-symbol=\"{}\">{} on {}</h1>", esc(&k.symbol), esc(name), esc(&k.arch));
    let _ = writeln!(h, "<p class=\"where\">{}:{} — {}</p>", esc(&k.file), k.line, esc(&k.name));
    let u = &k.usage;
    h.push_str("<div class=\"cards\">\n");
    let mut card = |n: String, label: &str| {
        let _ = writeln!(h, "<div class=\"card\"><div class=\"n\">{}</div><div class=\"l\">{}</div></div>", esc(&n), esc(label));
    };
    card(u.vgpr.to_string(), "VGPRs");
    card(u.sgpr.to_string(), "SGPRs");
    card(u.scratch_bytes.to_string(), "scratch bytes / lane");
    card(format!("{} / {}", u.vgpr_spills, u.sgpr_spills), "VGPR / SGPR spills");
    card(u.occupancy.to_string(), "occupancy");
    if let Some(t) = &k.timeline {
        card(t.peak.vgpr.to_string(), "VGPRs live at the peak");
    }
    h.push_str("</div>\n");
    let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&usage_line(k)));
    if k.line_tables_changed_code {
        h.push_str("<p class=\"note\">Warning: compiling with -gline-tables-only changed the code; the timeline is of that build.</p>\n");
    }
    match &k.timeline {
        Some(t) => {
            h.push_str("<h2>Pressure along the machine code</h2>\n");
            h.push_str(&plot(k, t));
            h.push_str("<p class=\"legend\"><span style=\"background:var(--vgpr)\"></span>live VGPRs<span style=\"background:var(--sgpr)\"></span>live SGPRs<span style=\"background:var(--peak)\"></span>peak<span style=\"background:var(--spill)\"></span>spill access<span style=\"background:var(--private)\"></span>other scratch access</p>\n");
            live_table(&mut h, t);
        }
        None => {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(k.no_timeline.as_deref().unwrap_or("")));
        }
    }
    diagnostics(&mut h, &k.diagnostics);
    if let Some(src) = source {
        annotated_source(&mut h, k, src);
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// Live VGPRs (area) and SGPRs (line) per instruction, the allocated
/// count, the peak and the scratch accesses.
fn plot(k: &KernelExplain, t: &Timeline) -> String {
    let (w, ht, left, bottom, top, right) = (1100.0, 300.0, 44.0, 40.0, 14.0, 10.0);
    let n = t.instructions.max(1) as f64;
    let allocated = k.usage.vgpr + k.usage.agpr;
    let ymax = t.vgpr.iter().zip(&t.agpr).map(|(v, a)| v + a).chain(t.sgpr.iter().copied()).chain([allocated, 1]).max().unwrap_or(1);
    let step = [8, 16, 32, 64, 128].into_iter().find(|s| ymax.div_ceil(*s) <= 8).unwrap_or(256);
    let ymax = ymax.div_ceil(step) * step;
    let plot_w = w - left - right;
    let plot_h = ht - top - bottom;
    let x = |i: usize| left + plot_w * i as f64 / n;
    let y = |v: u32| top + plot_h * (1.0 - v as f64 / ymax as f64);
    let mut svg = format!(
        "<svg class=\"pressure\" role=\"img\" aria-label=\"live registers per instruction\" width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\">\n"
    );
    for &i in &t.peak.instructions {
        let _ = writeln!(
            svg,
            "<rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{plot_h}\" style=\"fill:var(--peak)\"/>",
            x(i),
            (plot_w / n).max(1.0)
        );
    }
    let mut g = 0;
    while g <= ymax {
        let _ = writeln!(svg, "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#eef1f4\"/><text x=\"{2}\" y=\"{3:.1}\" text-anchor=\"end\">{g}</text>", y(g), w - right, left - 6.0, y(g) + 4.0);
        g += step;
    }
    let mut area = format!("{left:.1},{:.1}", y(0));
    for (i, (v, a)) in t.vgpr.iter().zip(&t.agpr).enumerate() {
        let _ = write!(area, " {:.1},{:.1} {:.1},{:.1}", x(i), y(v + a), x(i + 1), y(v + a));
    }
    let _ = write!(area, " {:.1},{:.1}", x(t.instructions), y(0));
    let _ = writeln!(svg, "<polygon points=\"{area}\" style=\"fill:var(--vgpr);fill-opacity:0.75\"><title>live VGPRs</title></polygon>");
    let mut sline = String::new();
    for (i, s) in t.sgpr.iter().enumerate() {
        let _ = write!(sline, "{:.1},{:.1} {:.1},{:.1} ", x(i), y(*s), x(i + 1), y(*s));
    }
    let _ = writeln!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" style=\"stroke:var(--sgpr)\" stroke-width=\"1.2\"><title>live SGPRs</title></polyline>",
        sline.trim_end()
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#1d232a\" stroke-dasharray=\"4 3\"/><text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\">{allocated} VGPRs allocated</text>",
        y(allocated),
        w - right,
        y(allocated) - 4.0
    );
    for (i, s) in t.scratch.iter().enumerate() {
        let color = match s {
            Some(super::mir::Scratch::Spill) => "var(--spill)",
            Some(super::mir::Scratch::Private) => "var(--private)",
            None => continue,
        };
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" style=\"stroke:{color}\"/>",
            x(i),
            ht - bottom,
            ht - bottom + 6.0
        );
    }
    // Source lines under the axis, at most ~12 labels.
    let every = (t.instructions / 12).max(1);
    let mut last = 0;
    for i in (0..t.instructions).step_by(every) {
        let line = t.line[i];
        if line != 0 && line != last {
            let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{line}</text>", x(i), ht - bottom + 20.0);
            last = line;
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">machine instructions in layout order ({}), labelled by source line</text>",
        left + plot_w / 2.0,
        ht - 4.0,
        t.instructions
    );
    svg.push_str("</svg>\n");
    svg
}

fn live_table(h: &mut String, t: &Timeline) {
    let Some(&first) = t.peak.instructions.first() else { return };
    let in_loop = t.peak.in_loop.map_or_else(String::new, |(a, b)| format!(", in the loop at lines {a}-{b}"));
    let _ = writeln!(
        h,
        "<h2>Live at the peak</h2>\n<p class=\"note\">{} VGPRs at instruction {} of {} (line{} {}{in_loop}).</p>",
        t.peak.vgpr,
        first + 1,
        t.instructions,
        if t.peak.lines.len() == 1 { "" } else { "s" },
        ranges(&t.peak.lines)
    );
    h.push_str("<table class=\"live\">\n<thead><tr><th>registers</th><th>value</th><th>defined at line</th><th>registers</th></tr></thead>\n<tbody>\n");
    for v in &t.live_at_peak {
        let line = if v.line == 0 { "-".to_string() } else { v.line.to_string() };
        let name = if v.variable { format!("<b>{}</b>", esc(&v.name)) } else { esc(&v.name) };
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{name}</td><td class=\"num\">{line}</td><td>{}</td></tr>",
            v.registers,
            esc(&v.regs.join(" "))
        );
    }
    h.push_str("</tbody>\n</table>\n");
}

fn diagnostics(h: &mut String, ds: &[Diagnostic]) {
    h.push_str("<h2>Diagnostics</h2>\n");
    if ds.is_empty() {
        h.push_str("<p class=\"note\">No seed pattern found.</p>\n");
        return;
    }
    h.push_str("<ul class=\"diagnostics\">\n");
    for d in ds {
        let kind = serde_json::to_value(d.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let regtune = match (&d.transform, &d.tune) {
            (Some(t), Some(note)) => format!("regtune: {t} — {note}"),
            (Some(t), None) => format!("regtune: {t} (`regtune tune` tries it; this kernel is not in the db)"),
            (None, _) => "regtune: no transform for this".to_string(),
        };
        let _ = writeln!(
            h,
            "<li data-kind=\"{}\" data-line=\"{}\"><b>line {}: {}</b> — {}<div class=\"fix\">Fix: {}</div><div class=\"regtune\">{}</div></li>",
            esc(&kind),
            d.line,
            d.line,
            esc(d.kind.title()),
            esc(&d.message),
            esc(&d.fix),
            esc(&regtune)
        );
    }
    h.push_str("</ul>\n");
}

/// The kernel's lines, from its first line to the last line with machine
/// code or a diagnostic, each with its pressure and diagnostics.
fn annotated_source(h: &mut String, k: &KernelExplain, src: &str) {
    let lines: Vec<&str> = src.lines().collect();
    let pressure: BTreeMap<u32, (u32, u32, u32)> =
        k.timeline.iter().flat_map(|t| &t.lines).map(|l| (l.line, (l.vgpr, l.sgpr, l.instructions))).collect();
    let mut tags: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for d in &k.diagnostics {
        for &l in &d.lines {
            tags.entry(l).or_default().push(d.kind.title());
        }
    }
    let first = k.line.max(1).min(pressure.keys().next().copied().unwrap_or(u32::MAX)).saturating_sub(1).max(1);
    let last = pressure.keys().chain(tags.keys()).copied().max().unwrap_or(k.line).min(lines.len() as u32);
    let peak: Vec<u32> = k.timeline.as_ref().map(|t| t.peak.lines.clone()).unwrap_or_default();
    let top = k.timeline.as_ref().map_or(1, |t| t.peak.vgpr.max(1));
    h.push_str("<h2>Source</h2>\n<table class=\"source\">\n<thead><tr><th>line</th><th>VGPRs</th><th></th><th>SGPRs</th><th>instrs</th><th>source</th></tr></thead>\n<tbody>\n");
    for n in first..=last {
        let text = lines.get(n as usize - 1).copied().unwrap_or("");
        let class = if peak.contains(&n) {
            " class=\"peak\""
        } else if pressure.contains_key(&n) {
            ""
        } else {
            " class=\"quiet\""
        };
        let (v, s, i) = pressure
            .get(&n)
            .map_or((String::new(), String::new(), String::new()), |(v, s, i)| (v.to_string(), s.to_string(), i.to_string()));
        let bar = pressure.get(&n).map_or(String::new(), |(v, _, _)| {
            format!("<span class=\"bar\" style=\"width:{:.1}em\"></span>", 8.0 * *v as f64 / top as f64)
        });
        let tag: String = tags.get(&n).into_iter().flatten().map(|t| format!("<span class=\"tag\">{}</span>", esc(t))).collect();
        let _ = writeln!(
            h,
            "<tr data-line=\"{n}\"{class}><td class=\"num\">{n}</td><td class=\"num\">{v}</td><td>{bar}</td><td class=\"num\">{s}</td><td class=\"num\">{i}</td><td class=\"code\">{}{tag}</td></tr>",
            esc(text)
        );
    }
    h.push_str("</tbody>\n</table>\n");
}
