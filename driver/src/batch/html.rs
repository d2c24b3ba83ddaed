//! `--html FILE`: the batch report as one self-contained page — inline CSS,
//! inline SVG charts and a few lines of script to filter and sort the
//! kernel table. Nothing is fetched from the network; the page works from
//! a file:// URL or an e-mail attachment.

use std::fmt::Write;

use super::render::{arrow, display_path, Summary};
use super::{Batch, KernelRow, Status};
use crate::names::short_name;
use crate::output::esc;

const STYLE: &str = r#"
:root { --before: #9aa5b1; --after: #2f7ed8; --bad: #c0392b; --good: #1e8449; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px; color: #1d232a; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #dde3e8; padding-bottom: 0.2em; }
.source { color: #5c6770; margin-top: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1.2em 0; }
.card { border: 1px solid #dde3e8; border-radius: 6px; padding: 0.6em 1em; min-width: 9em; }
.card .n { font-size: 1.6em; font-weight: 600; }
.card .l { color: #5c6770; font-size: 0.9em; }
.charts { display: flex; flex-wrap: wrap; gap: 2em; }
svg text { font: 12px system-ui, sans-serif; fill: #1d232a; }
.legend span { display: inline-block; width: 0.9em; height: 0.9em; margin: 0 0.3em 0 1em; vertical-align: -0.1em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.3em 0.5em; border-bottom: 1px solid #eef1f4; vertical-align: top; }
th { cursor: pointer; user-select: none; background: #f6f8fa; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.improved td.occ { color: var(--good); font-weight: 600; }
tr.spilling td.spill { color: var(--bad); }
.why { color: #5c6770; font-size: 0.92em; }
.tag { display: inline-block; white-space: nowrap; background: #eef3fb; border-radius: 3px; padding: 0 0.35em; margin: 0 0.2em 0.1em 0; font-size: 0.9em; }
.tag.s { background: #fdf3e1; }
#filter { margin: 0.5em 0; padding: 0.35em 0.6em; width: 24em; }
ul.failures li { color: var(--bad); }
pre { white-space: pre-wrap; }
"#;

/// Sort by a column on a header click; filter rows on typing. Rows are
/// hidden, never removed.
const SCRIPT: &str = r#"
(function () {
  var table = document.getElementById('kernels');
  if (!table) return;
  var body = table.tBodies[0];
  var filter = document.getElementById('filter');
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (r) {
      r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.getAttribute('data-sort') !== 'asc';
      th.setAttribute('data-sort', asc ? 'asc' : 'desc');
      var key = function (r) { var c = r.cells[col]; return c.getAttribute('data-v') || c.textContent; };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
})();
"#;

pub fn page(batch: &Batch) -> String {
    let s = Summary::of(batch);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<title>regtune batch report</title>\n<style>");
    h.push_str(STYLE);
    h.push_str("</style>\n</head>\n<body>\n<h1>regtune batch report</h1>\n");
    let _ = writeln!(h, "<p class=\"source\">{}</p>", esc(&batch.source));

    h.push_str("<div class=\"cards\">\n");
    let card = |h: &mut String, n: String, label: &str| {
        let _ = writeln!(h, "<div class=\"card\"><div class=\"n\">{}</div><div class=\"l\">{}</div></div>", esc(&n), esc(label));
    };
    card(&mut h, s.units.to_string(), "HIP units");
    card(&mut h, s.kernels.to_string(), "kernels");
    card(&mut h, format!("{} → {}", s.register_limited.before, s.register_limited.after), "register-limited kernels");
    card(&mut h, s.improved.to_string(), "kernels at a higher occupancy");
    card(&mut h, s.spills.removed.to_string(), "spills removed");
    card(&mut h, s.suggestions.kernels.to_string(), "suggestions awaiting review");
    card(&mut h, format!("{} / {} / {}", s.targets.tuned, s.targets.cached, s.targets.failed), "tuned / cached / failed");
    h.push_str("</div>\n");

    h.push_str("<h2>Occupancy</h2>\n<div class=\"charts\">\n");
    h.push_str(&occupancy_chart(&s));
    h.push_str(&vgpr_chart(&batch.kernels));
    h.push_str("</div>\n<p class=\"legend\"><span style=\"background:var(--before)\"></span>before<span style=\"background:var(--after)\"></span>after</p>\n");

    let suggesting: Vec<&KernelRow> = batch.kernels.iter().filter(|k| !k.suggestions.is_empty()).collect();
    if !suggesting.is_empty() {
        h.push_str("<h2>Suggestions awaiting review</h2>\n<ul>\n");
        for k in suggesting {
            for sug in &k.suggestions {
                let _ = writeln!(h, "<li><b>{}</b> on {}: {}</li>", esc(short_name(&k.name)), esc(&k.arch), esc(sug));
            }
        }
        h.push_str("</ul>\n");
    }

    let failed: Vec<_> = batch.units.iter().filter(|u| u.status == Status::Failed).collect();
    if !failed.is_empty() {
        h.push_str("<h2>Failures</h2>\n<ul class=\"failures\">\n");
        for u in failed {
            let _ = writeln!(h, "<li>{}</li>", esc(&u.message().unwrap_or_default()));
        }
        h.push_str("</ul>\n");
    }

    h.push_str("<h2>Kernels</h2>\n<input id=\"filter\" type=\"search\" placeholder=\"filter kernels…\">\n");
    h.push_str("<table id=\"kernels\">\n<thead><tr><th>unit</th><th>kernel</th><th>arch</th><th>VGPR</th><th>spills</th><th>occupancy</th><th>limited by</th><th>applied</th><th>suggested</th><th>status</th></tr></thead>\n<tbody>\n");
    for k in &batch.kernels {
        h.push_str(&kernel_row(k));
    }
    h.push_str("</tbody>\n</table>\n<script>");
    h.push_str(SCRIPT);
    h.push_str("</script>\n</body>\n</html>\n");
    h
}

fn kernel_row(k: &KernelRow) -> String {
    let (b, a) = (&k.before, &k.after);
    let tags = |v: &[String], class: &str| -> String {
        if v.is_empty() {
            return "-".into();
        }
        v.iter().map(|t| format!("<span class=\"tag{class}\">{}</span>", esc(t))).collect()
    };
    let mut classes = Vec::new();
    if a.occupancy > b.occupancy {
        classes.push("improved");
    }
    if k.spills_after() > 0 {
        classes.push("spilling");
    }
    format!(
        "<tr data-kernel=\"{}\" data-arch=\"{}\" class=\"{}\"><td>{}</td><td title=\"{} at {}:{}\">{}<div class=\"why\">{}</div></td><td>{}</td>\
         <td class=\"num\" data-v=\"{}\">{}</td><td class=\"num spill\" data-v=\"{}\">{}</td><td class=\"num occ\" data-v=\"{}\">{}</td>\
         <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(&k.symbol),
        esc(&k.arch),
        classes.join(" "),
        esc(&display_path(&k.unit)),
        esc(&k.name),
        esc(&display_path(&k.file)),
        k.line,
        esc(short_name(&k.name)),
        esc(&k.why),
        esc(&k.arch),
        a.vgpr,
        esc(&arrow(b.vgpr, a.vgpr)),
        k.spills_after(),
        esc(&arrow(k.spills_before(), k.spills_after())),
        a.occupancy,
        esc(&arrow(b.occupancy, a.occupancy)),
        esc(&format!("{} → {}", k.limiter_before, k.limiter)),
        tags(&k.applied, ""),
        tags(&k.suggested, " s"),
        if k.cached { "cached" } else { "tuned" },
    )
}

/// Kernels per occupancy level, before and after, as grouped bars.
fn occupancy_chart(s: &Summary) -> String {
    let levels = s.occupancy_levels();
    let (w, h, left, bottom, top) = (460.0, 240.0, 40.0, 36.0, 16.0);
    // Four gridlines at whole numbers of kernels.
    let most = s.occupancy.before.values().chain(s.occupancy.after.values()).copied().max().unwrap_or(0).max(1);
    let step = most.div_ceil(4);
    let max = (step * 4) as f64;
    let mut svg = format!(
        "<svg role=\"img\" aria-label=\"kernels per occupancy, before and after\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n"
    );
    let plot_h = h - bottom - top;
    let slot = if levels.is_empty() { w - left } else { (w - left - 10.0) / levels.len() as f64 };
    let _ = writeln!(svg, "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#8895a0\"/>", h - bottom, w - 5.0, h - bottom);
    for i in 0..=4 {
        let y = h - bottom - plot_h * i as f64 / 4.0;
        let _ = writeln!(svg, "<text x=\"{}\" y=\"{y:.1}\" text-anchor=\"end\">{}</text>", left - 6.0, step * i);
    }
    for (i, level) in levels.iter().enumerate() {
        let x0 = left + slot * i as f64;
        let bar = (slot * 0.38).min(28.0);
        for (j, (hist, color)) in [(&s.occupancy.before, "var(--before)"), (&s.occupancy.after, "var(--after)")].iter().enumerate() {
            let n = hist.get(level).copied().unwrap_or(0);
            let bh = plot_h * n as f64 / max;
            let x = x0 + slot / 2.0 - bar + bar * j as f64;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{bh:.1}\" style=\"fill:{color}\"><title>occupancy {level}: {n} kernels {}</title></rect>",
                h - bottom - bh,
                if j == 0 { "before" } else { "after" }
            );
        }
        let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{level}</text>", x0 + slot / 2.0, h - bottom + 16.0);
    }
    let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">occupancy (waves/SIMD)</text>", (w + left) / 2.0, h - 4.0);
    svg.push_str("</svg>\n");
    svg
}

/// VGPRs before and after for the kernels that changed (the 20 largest
/// savings), as paired horizontal bars.
fn vgpr_chart(kernels: &[KernelRow]) -> String {
    let mut changed: Vec<&KernelRow> = kernels.iter().filter(|k| k.before.vgpr != k.after.vgpr).collect();
    changed.sort_by_key(|k| std::cmp::Reverse(i64::from(k.before.vgpr) - i64::from(k.after.vgpr)));
    changed.truncate(20);
    let (w, left, row) = (600.0, 210.0, 26.0);
    let h = 30.0 + row * changed.len().max(1) as f64;
    let mut svg = format!(
        "<svg role=\"img\" aria-label=\"VGPRs before and after for kernels that changed\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n"
    );
    if changed.is_empty() {
        svg.push_str("<text x=\"10\" y=\"20\">no kernel's VGPR count changed</text>\n</svg>\n");
        return svg;
    }
    let max = changed.iter().map(|k| k.before.vgpr.max(k.after.vgpr)).max().unwrap_or(1).max(1) as f64;
    let span = w - left - 80.0;
    for (i, k) in changed.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let name = short_name(&k.name);
        let mut label: String = name.chars().take(22).collect();
        if label.len() < name.len() {
            label.push('…');
        }
        label.push_str(&format!(" ({})", k.arch));
        let _ = writeln!(svg, "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", left - 6.0, y + 14.0, esc(&label));
        for (j, (v, color)) in [(k.before.vgpr, "var(--before)"), (k.after.vgpr, "var(--after)")].iter().enumerate() {
            let bw = span * f64::from(*v) / max;
            let _ = writeln!(
                svg,
                "<rect x=\"{left}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"9\" style=\"fill:{color}\"><title>{v} VGPRs</title></rect>",
                y + 2.0 + 10.0 * j as f64
            );
        }
        let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\">{} → {}</text>", left + span + 4.0, y + 14.0, k.before.vgpr, k.after.vgpr);
    }
    let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">VGPRs, kernels that changed</text>", (w + left) / 2.0, h - 4.0);
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_escaped() {
        assert_eq!(esc("f<int>(\"a\" & 'b')"), "f&lt;int&gt;(&quot;a&quot; &amp; &#39;b&#39;)");
    }

    #[test]
    fn an_empty_report_is_still_a_page() {
        let b = Batch { source: "x".into(), selection: None, units: vec![], kernels: vec![], seconds: 0.0 };
        let p = page(&b);
        assert!(p.starts_with("<!DOCTYPE html>") && p.ends_with("</html>\n"));
        assert!(!p.contains("http://") && !p.contains("https://"), "nothing fetched");
    }
}
