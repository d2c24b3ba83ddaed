//! Text edits on the project's files: each replaces a byte range of one
//! file, belongs to the kernels whose decisions asked for it, and says
//! what it expresses.
//! Kernels drop out together with their edits; what is left is applied in
//! one pass and shown as a unified diff (`similar`).

use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    /// The file (canonical path).
    pub file: Arc<str>,
    pub start: usize,
    pub end: usize,
    pub text: String,
    /// Source ranges copied after `text`, with the edits inside them
    /// applied: the new place of moved lines (whose old place is an empty
    /// edit over them that the edits inside may share).
    pub copies: Vec<(usize, usize)>,
    /// Kernel symbols whose decisions this edit expresses.
    pub kernels: BTreeSet<String>,
    /// The preprocessor tests of the targets that asked for it
    /// (`defined(__gfx90a__)`), where an edit may differ per target.
    pub targets: BTreeSet<String>,
    /// The transform, as the tuner labels it ("pow2", "sink", ...).
    pub what: String,
    /// It calls the pow2 helper, which must be defined at this offset (the
    /// start of the outermost declaration around it) if nothing earlier is.
    pub helper: Option<usize>,
    /// A guarded macro it uses (the register cap for nvcc), whose
    /// definition the file takes once, at its top.
    pub defines: Option<&'static str>,
}

/// Insertions at one point go in this order: a macro's definition, moved
/// declarations, the pow2 helper, attributes, then a loop's pragma (which
/// must stay next to its loop).
const ORDER: &[&str] = &["definition", "sink", "pow2", "occupancy", "noalias", "unroll-cap"];

impl Edit {
    pub(crate) fn new(file: &Arc<str>, start: usize, end: usize, text: impl Into<String>, kernel: &str, what: &str) -> Edit {
        Edit {
            file: file.clone(),
            start,
            end,
            text: text.into(),
            copies: vec![],
            kernels: BTreeSet::from([kernel.to_string()]),
            targets: BTreeSet::new(),
            what: what.to_string(),
            helper: None,
            defines: None,
        }
    }

    /// Lines moved elsewhere: other edits may lie inside.
    fn is_move_source(&self) -> bool {
        self.what == "sink" && self.text.is_empty() && self.copies.is_empty() && self.start < self.end
    }

    fn is_insertion(&self) -> bool {
        self.start == self.end
    }

    /// `inner` lies within the lines this edit moves away.
    fn contains(&self, inner: &Edit) -> bool {
        self.is_move_source()
            && self.file == inner.file
            && !std::ptr::eq(self, inner)
            && self.start <= inner.start
            && inner.end <= self.end
            && !(inner.is_insertion() && (inner.start == self.start || inner.start == self.end))
            && *self != *inner
    }

    /// Where an edit goes among those at the same offset: insertions (by
    /// kind), then lines moved away (around the edits inside them), then
    /// the rest.
    fn sort_key(&self) -> (usize, u8, usize, usize) {
        let rank = ORDER.iter().position(|w| *w == self.what).unwrap_or(ORDER.len());
        let class = if self.is_insertion() {
            0
        } else if self.is_move_source() {
            1
        } else {
            2
        };
        (self.start, class, rank, self.end)
    }

    fn overlaps(&self, other: &Edit) -> bool {
        if self.file != other.file || self.contains(other) || other.contains(self) {
            return false;
        }
        if self.is_insertion() && other.is_insertion() {
            // Two insertions at one point are ordered by kind; of one kind, their order would be a guess.
            return self.start == other.start && self.what == other.what;
        }
        if self.is_insertion() || other.is_insertion() {
            let (point, range) = if self.is_insertion() { (self, other) } else { (other, self) };
            return point.start > range.start && point.start < range.end;
        }
        self.start < other.end && other.start < self.end
    }
}

/// Join the edits of several kernels (and targets): the same edit asked
/// for twice is one edit owned by both. Edits that disagree about the same
/// text are returned apart, so that their kernels can be left out.
pub(crate) fn merge(edits: Vec<Edit>) -> (Vec<Edit>, Vec<(Edit, Edit)>) {
    let mut out: Vec<Edit> = Vec::new();
    let mut conflicts = Vec::new();
    for e in edits {
        if let Some(same) =
            out.iter_mut().find(|o| o.file == e.file && o.start == e.start && o.end == e.end && o.text == e.text && o.copies == e.copies)
        {
            same.kernels.extend(e.kernels);
            same.targets.extend(e.targets);
            continue;
        }
        match out.iter().find(|o| o.overlaps(&e)) {
            Some(o) => conflicts.push((o.clone(), e)),
            None => out.push(e),
        }
    }
    out.sort_by(|a, b| (&a.file, a.sort_key()).cmp(&(&b.file, b.sort_key())));
    (out, conflicts)
}

/// Whole-line edits of one range that targets asked for differently (a
/// loop's unroll pragma), as one: each text under `#if` on its targets,
/// the original lines for any other target.
pub(crate) fn per_target(text: &str, edits: &[Edit]) -> Option<Edit> {
    let first = edits.first()?;
    let (start, end) = (first.start, first.end);
    let lines = |e: &Edit| {
        e.file == first.file && e.start == start && e.end == end && e.text.ends_with('\n') && !e.targets.is_empty() && e.copies.is_empty()
    };
    if !edits.iter().all(lines) || text.get(..start).is_some_and(|t| !t.is_empty() && !t.ends_with('\n')) {
        return None;
    }
    let mut block = String::new();
    for e in edits {
        let keyword = if block.is_empty() { "#if" } else { "#elif" };
        let test: Vec<&str> = e.targets.iter().map(String::as_str).collect();
        block.push_str(&format!("{keyword} {}\n{}", test.join(" || "), e.text));
    }
    block.push_str(&format!("#else\n{}#endif\n", &text[start..end]));
    let mut out = first.clone();
    out.text = block;
    for e in &edits[1..] {
        out.kernels.extend(e.kernels.iter().cloned());
        out.targets.extend(e.targets.iter().cloned());
    }
    Some(out)
}

/// `text`, the text of `file`, with its `edits` (merged: no two overlap) applied.
pub(crate) fn apply(file: &str, text: &str, edits: &[Edit]) -> String {
    let mine: Vec<Edit> = edits.iter().filter(|e| &*e.file == file).cloned().collect();
    apply_range(text, (0, text.len()), &mine, None)
}

/// The text of `range` with the edits inside it applied; `moved` is the
/// move source being copied, whose own emptying is not applied.
fn apply_range(text: &str, range: (usize, usize), edits: &[Edit], moved: Option<&Edit>) -> String {
    let mut inside: Vec<&Edit> = edits
        .iter()
        .filter(|e| range.0 <= e.start && e.end <= range.1)
        .filter(|e| moved.is_none_or(|m| !std::ptr::eq(*e, m) && m.contains(e)))
        .collect();
    inside.sort_by_key(|e| e.sort_key());
    let mut out = String::new();
    let mut at = range.0;
    let mut skip_until: Option<&Edit> = None;
    for e in inside {
        if skip_until.is_some_and(|c| c.contains(e)) {
            continue;
        }
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        for &copy in &e.copies {
            let source = edits.iter().find(|m| m.is_move_source() && (m.start, m.end) == copy);
            out.push_str(&apply_range(text, copy, edits, source));
        }
        at = e.end;
        if e.is_move_source() {
            skip_until = Some(e);
        }
    }
    out.push_str(&text[at..range.1]);
    out
}

/// A unified diff of one file, with `a/` and `b/` paths as `git apply`
/// and `patch -p1` expect.
pub(crate) fn unified_diff(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// An edit of `[start, end)` to `new` inside a macro's line that ends in
/// an aligned `\`: (its end, its text), taking in the spaces before the
/// `\` so that it stays in its column where the spaces allow.
pub(crate) fn aligned(text: &str, start: usize, end: usize, new: &str) -> (usize, String) {
    let line = &text[end..line_end(text, end)];
    let body = line.trim_end_matches(['\n', '\r']);
    let Some(before_slash) = body.strip_suffix('\\') else { return (end, new.to_string()) };
    let spaces = before_slash.len() - before_slash.trim_end_matches(' ').len();
    let grown = new.len() as isize - (end - start) as isize;
    if spaces == 0 || line_start(text, start) != line_start(text, end) {
        return (end, new.to_string());
    }
    let pad = (spaces as isize - grown).max(1) as usize;
    let kept = &before_slash[..before_slash.len() - spaces];
    (end + kept.len() + spaces, format!("{new}{kept}{}", " ".repeat(pad)))
}

/// The start of the line holding `offset`.
pub(crate) fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// Just past the newline that ends the line holding `offset`.
pub(crate) fn line_end(text: &str, offset: usize) -> usize {
    text[offset..].find('\n').map_or(text.len(), |i| offset + i + 1)
}

/// The whitespace a line starts with.
pub(crate) fn indentation(text: &str, offset: usize) -> &str {
    let start = line_start(text, offset);
    let line = &text[start..line_end(text, offset)];
    &line[..line.len() - line.trim_start().len()]
}

/// The top of a file, where a definition goes: below the comments it
/// opens with (a licence, a description) and a `#pragma once`.
pub(crate) fn top(text: &str) -> usize {
    let mut at = 0;
    let mut in_block = false;
    while at < text.len() {
        let end = line_end(text, at);
        let mut line = text[at..end].trim();
        if in_block || line.starts_with("/*") {
            // The rest of the line after the comment closes, if it does.
            match line.find("*/") {
                Some(i) => line = line[i + 2..].trim(),
                None => {
                    (in_block, at) = (true, end);
                    continue;
                }
            }
            in_block = false;
        }
        if !(line.is_empty() || line.starts_with("//") || line == "#pragma once") {
            break;
        }
        at = end;
    }
    if in_block {
        return 0;
    }
    // Code after a comment on one line: above that line.
    line_start(text, at.min(text.len()))
}

/// Above the `//` comment lines directly above `line_start`: where a
/// line goes that must come before a statement and its comment.
pub(crate) fn above_comments(text: &str, mut line_start: usize) -> usize {
    while line_start > 0 {
        let prev = self::line_start(text, line_start - 1);
        if !text[prev..line_start].trim_start().starts_with("//") {
            break;
        }
        line_start = prev;
    }
    line_start
}

/// Nothing but whitespace between the start of its line and `offset`.
pub(crate) fn starts_line(text: &str, offset: usize) -> bool {
    text[line_start(text, offset)..offset].trim().is_empty()
}

/// Nothing but whitespace or a `//` comment between `offset` and the end
/// of its line.
pub(crate) fn ends_line(text: &str, offset: usize) -> bool {
    let rest = text[offset..line_end(text, offset)].trim();
    rest.is_empty() || rest.starts_with("//")
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &str = "/src/k.hip";

    fn new(start: usize, end: usize, text: &str, kernel: &str, what: &str) -> Edit {
        Edit::new(&Arc::from(F), start, end, text, kernel, what)
    }

    #[test]
    fn edits_apply_in_order_and_equal_ones_merge() {
        let text = "a b c\n";
        let (merged, conflicts) = merge(vec![new(4, 5, "C", "k1", "x"), new(0, 1, "A", "k1", "x"), new(0, 1, "A", "k2", "x")]);
        assert!(conflicts.is_empty());
        assert_eq!(merged[0].kernels.len(), 2);
        assert_eq!(apply(F, text, &merged), "A b C\n");
    }

    #[test]
    fn the_top_of_a_file_is_below_its_opening_comments() {
        assert_eq!(top("// licence\n//\n\n#include \"a.h\"\n"), 15);
        assert_eq!(top("/* one\n   two */\n#pragma once\nint a;\n"), 30);
        assert_eq!(top("/* note */ int a;\n"), 0);
        assert_eq!(top("__global__ void k() {}\n"), 0);
        assert_eq!(top("/* never closed\n"), 0);
        assert_eq!(top("// only a comment\n"), 18);
    }

    #[test]
    fn disagreeing_edits_are_conflicts() {
        let (merged, conflicts) = merge(vec![new(0, 1, "A", "k1", "x"), new(0, 1, "B", "k2", "x"), new(2, 2, "+", "k1", "x")]);
        assert_eq!(merged.len(), 2);
        assert_eq!(conflicts.len(), 1);
        let (_, c) = merge(vec![new(2, 2, "x", "k1", "a"), new(2, 2, "y", "k2", "a")]);
        assert_eq!(c.len(), 1, "two insertions at one point");
    }

    #[test]
    fn moved_lines_carry_the_edits_inside_them() {
        let text = "a = pow(x);\nloop;\nuse(a);\n";
        let mut insert = new(18, 18, "", "k", "sink");
        insert.copies = vec![(0, 12)];
        let (merged, conflicts) = merge(vec![
            new(0, 12, "", "k", "sink"),
            insert,
            new(4, 10, "x * x", "k", "pow2"),
            new(12, 12, "#pragma nounroll\n", "k", "unroll-cap"),
        ]);
        assert!(conflicts.is_empty(), "{conflicts:?}");
        assert_eq!(apply(F, text, &merged), "#pragma nounroll\nloop;\na = x * x;\nuse(a);\n");
        let without_pow2: Vec<Edit> = merged.into_iter().filter(|e| e.what != "pow2").collect();
        assert_eq!(apply(F, text, &without_pow2), "#pragma nounroll\nloop;\na = pow(x);\nuse(a);\n");
    }

    #[test]
    fn line_edits_that_differ_per_target_go_under_if() {
        let text = "#pragma unroll\nfor (;;) {}\n";
        let mut a = new(0, 15, "#pragma nounroll\n", "k", "unroll-cap");
        a.targets.insert("defined(__gfx90a__)".into());
        let mut b = new(0, 15, "#pragma unroll 4\n", "k", "unroll-cap");
        b.targets.insert("defined(__gfx1100__)".into());
        let joined = per_target(text, &[a, b]).unwrap();
        assert_eq!(
            apply(F, text, &[joined]),
            "#if defined(__gfx90a__)\n#pragma nounroll\n#elif defined(__gfx1100__)\n#pragma unroll 4\n#else\n#pragma unroll\n#endif\nfor (;;) {}\n"
        );
    }

    #[test]
    fn diffs_name_both_sides_for_patch_p1() {
        let d = unified_diff("k.hip", "a\nb\n", "a\nc\n");
        assert!(d.starts_with("--- a/k.hip\n+++ b/k.hip\n@@ -1,2 +1,2 @@\n"), "{d}");
        assert_eq!(unified_diff("k.hip", "a\n", "a\n"), "");
    }

    #[test]
    fn a_macro_s_backslash_keeps_its_column() {
        let text = "#define K \\\n    y = pow(x, 2.0);     \\\n";
        let (start, end) = (text.find("pow").unwrap(), text.find(';').unwrap());
        let (end, new) = aligned(text, start, end, "x * x");
        let patched = format!("{}{new}{}", &text[..start], &text[end..]);
        assert_eq!(patched, "#define K \\\n    y = x * x;           \\\n");
        assert_eq!(patched.lines().nth(1).unwrap().len(), text.lines().nth(1).unwrap().len());
        // No room: one space is kept.
        let (end, new) = aligned(text, start, start, "_Pragma(\"nounroll\") long long long ");
        assert!(format!("{}{new}{}", &text[..start], &text[end..]).ends_with("2.0); \\\n"));
    }

    #[test]
    fn lines_around_offsets() {
        let text = "  x;\n  y; // c\n";
        assert_eq!(line_start(text, 8), 5);
        assert_eq!(line_end(text, 8), text.len());
        assert_eq!(indentation(text, 8), "  ");
        assert!(starts_line(text, 7));
        assert!(ends_line(text, 10));
    }
}
