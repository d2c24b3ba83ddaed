//! One kernel's code as `nvcc -maxrregcount=R` builds it, in a build of its
//! file without that flag: nvcc's own `-maxrregcount` caps every kernel of
//! a file, this caps one.
//!
//! nvcc's flag does two things. cicc gets `-maxreg R`, which changes the
//! PTX it writes (on sm_90, cuda-samples' `generatePaths<double>` is 44
//! registers at `-maxrregcount=64` and 46 with `.maxnreg 64` on nvcc's own
//! PTX); and ptxas caps each entry at R, unless the entry carries a cap of
//! its own (`.maxnreg`, or a block size: `.maxntid`, `.reqntid`,
//! `.minnctapersm`, which ptxas says override the flag). ptxas builds each
//! entry on its own, so the kernel's entry as nvcc's PTX at R has it, with
//! `.maxnreg R` where it has no cap of its own, put in place of its entry
//! in the file's plain PTX, gives that kernel the code of nvcc's
//! `-maxrregcount=R` build byte for byte and every other kernel its own
//! (tests/nvcc.rs checks both on real ptxas).
//!
//! That holds only where the two PTXs agree on the module's variables (the
//! PTX outside its functions). The entry calls the plain PTX's device
//! functions (`.func`), which cicc's `-maxreg` may have written otherwise
//! (pow's slow path): tune's candidate is this splice, so what it measured
//! is what the wrapper builds ([`Calls::Plain`]). A rewrite's candidate is
//! the rewritten PTX built whole, so there every device function the entry
//! may call must be the same in both ([`Calls::AsBuilt`]). A PTX with
//! debug sections (`-G`) is not spliced. The entry's line information
//! (`.loc`) names files and inlined functions by numbers and labels of its
//! own PTX's tables (`.file`, `.debug_str`): they are renumbered to the
//! plain PTX's, whose tables take what they lack.

use std::collections::BTreeMap;

/// A PTX read into what a splice needs.
struct Module<'a> {
    lines: Vec<&'a str>,
    /// Each function (`.entry` or `.func`, defined or declared): its name
    /// and its lines, `start..end`.
    functions: Vec<Function<'a>>,
    /// `.file N "path"` lines: their index in `lines`, N, the path.
    files: Vec<(usize, u32, &'a str)>,
    /// The `.debug_str` section: each label with its bytes (as written),
    /// and the line of its closing brace.
    strings: Vec<(&'a str, String)>,
    strings_end: Option<usize>,
    /// Another section (`-G`'s debug information): no splice.
    other_section: bool,
}

struct Function<'a> {
    name: &'a str,
    entry: bool,
    /// Lines `start..end`; `body`: it has one (a definition).
    start: usize,
    end: usize,
    body: bool,
}

impl<'a> Module<'a> {
    fn read(ptx: &'a str) -> Module<'a> {
        let lines: Vec<&str> = ptx.lines().collect();
        let (mut functions, mut files, mut strings) = (Vec::new(), Vec::new(), Vec::new());
        let (mut strings_end, mut other_section) = (None, false);
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let trimmed = line.trim_start();
            if let Some((name, entry)) = function_head(line) {
                let start = i;
                // A declaration ends at its `;`; a definition at the `}` that
                // closes its body (inline assembly opens scopes of its own,
                // closed in column 0 too, and operands hold `{%r1, %r2}`).
                let (mut body, mut depth) = (false, 0i64);
                while i < lines.len() {
                    let code = lines[i].split("//").next().unwrap_or_default();
                    if !body && code.trim() == "{" {
                        body = true;
                    } else if !body && code.trim().ends_with(';') {
                        break;
                    }
                    if body {
                        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
                        if depth <= 0 {
                            break;
                        }
                    }
                    i += 1;
                }
                functions.push(Function { name, entry, start, end: (i + 1).min(lines.len()), body });
            } else if let Some(rest) = trimmed.strip_prefix(".file") {
                let mut words = rest.split_whitespace();
                let n = words.next().and_then(|w| w.parse().ok());
                let path = rest.split_once('"').and_then(|(_, p)| p.rsplit_once('"')).map(|(p, _)| p);
                if let (Some(n), Some(path)) = (n, path) {
                    files.push((i, n, path));
                }
            } else if let Some(name) = trimmed.strip_prefix(".section") {
                let debug_str = name.trim() == ".debug_str";
                other_section |= !debug_str;
                while i < lines.len() && !lines[i].trim_start().starts_with('}') {
                    let l = lines[i].trim();
                    if debug_str {
                        if let Some(label) = l.strip_suffix(':') {
                            strings.push((label, String::new()));
                        } else if let (Some(bytes), Some(last)) = (l.strip_prefix(".b8"), strings.last_mut()) {
                            last.1.push_str(bytes.trim());
                            last.1.push(',');
                        }
                    }
                    i += 1;
                }
                if debug_str {
                    strings_end = Some(i);
                }
            }
            i += 1;
        }
        Module { lines, functions, files, strings, strings_end, other_section }
    }

    /// `name`'s definition, else its declaration (cicc declares a device
    /// function before the kernels that call it).
    fn function(&self, name: &str) -> Option<&Function<'a>> {
        let mut named = self.functions.iter().filter(|f| f.name == name);
        named.clone().find(|f| f.body).or_else(|| named.next())
    }

    fn text(&self, f: &Function<'_>) -> &[&'a str] {
        &self.lines[f.start..f.end]
    }

    /// The lines outside every function, the file table, the debug strings
    /// and comments: the module's variables. (A function declaration is a
    /// function's: a rewrite that calls pow no longer drops its declaration
    /// of pow's slow path; what an entry calls is checked in [`spliceable`].)
    fn outside(&self) -> Vec<&'a str> {
        let mut inside: Vec<bool> = self.lines.iter().map(|l| l.trim_start().starts_with("//")).collect();
        for f in &self.functions {
            inside[f.start..f.end].iter_mut().for_each(|x| *x = true);
        }
        for &(i, _, _) in &self.files {
            inside[i] = true;
        }
        if let Some(end) = self.strings_end {
            let start = (0..end).rev().find(|&i| self.lines[i].trim_start().starts_with(".section")).unwrap_or(end);
            inside[start..=end].iter_mut().for_each(|x| *x = true);
        }
        self.lines.iter().zip(&inside).filter(|(_, &inside)| !inside).map(|(l, _)| *l).collect()
    }

    /// The device functions `name` may call, defined here or declared
    /// (`.extern`): those whose names its text, or theirs, holds (a superset
    /// of its calls).
    fn callees(&self, name: &str) -> Vec<&'a str> {
        let mut reached: Vec<&str> = vec![];
        let mut todo = vec![name.to_string()];
        while let Some(caller) = todo.pop() {
            let Some(f) = self.function(&caller) else { continue };
            let text = self.text(f).join("\n");
            for g in self.functions.iter().filter(|g| !g.entry && g.name != caller) {
                if !reached.contains(&g.name) && holds_name(&text, g.name) {
                    reached.push(g.name);
                    todo.push(g.name.to_string());
                }
            }
        }
        reached
    }
}

/// `name` as a whole word of `text`.
fn holds_name(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
        let after = text[at + name.len()..].chars().next().is_none_or(|c| !word(c));
        before && after
    })
}

/// A function's name, and whether it is a kernel, from the line that
/// opens it (`.visible .entry _Z1kPf(`, `.func (.param .b32 r) _Z1fv(`).
fn function_head(line: &str) -> Option<(&str, bool)> {
    if line.trim_start().starts_with("//") {
        return None;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == ".entry" || *w == ".func")?;
    let entry = words[at] == ".entry";
    let mut rest = line[line.find(words[at])? + words[at].len()..].trim_start();
    // A return value before the name: `(.param .b32 func_retval0)`.
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name = &rest[..rest.find(|c: char| c == '(' || c.is_whitespace() || c == ';').unwrap_or(rest.len())];
    (!name.is_empty()).then_some((name, entry))
}

/// Whether ptxas's own cap reaches the entry: not where it carries a cap or
/// a block size of its own, which ptxas says override `-maxrregcount`.
fn takes_the_flag(head: &[&str]) -> bool {
    let own = [".maxnreg", ".maxntid", ".reqntid", ".minnctapersm"];
    !head.iter().any(|l| own.iter().any(|d| l.trim_start().strip_prefix(d).is_some_and(|r| r.starts_with([' ', '\t']))))
}

/// What a kernel's entry taken into the plain PTX calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calls {
    /// The plain PTX's device functions, as they are there. A cap's
    /// candidate is built so (tune and regtune-nvcc splice alike), so each
    /// function it calls need only be there: cicc's `-maxreg` rewrites pow's
    /// slow path too, which the kernel's entry then calls as plain has it.
    Plain,
    /// The device functions of the other PTX, unchanged in the plain one:
    /// a rewrite's candidate is that PTX built whole, so a function the
    /// rewrite changed must not be called as plain has it.
    AsBuilt,
}

/// The kernels of `from` (nvcc's PTX of the file at `-maxrregcount=R`, or
/// of its source rewritten) whose entries [`take_entry`] can put in `plain`
/// (the file's PTX) calling what `calls` says; else why none (one line).
pub(crate) fn spliceable(plain: &str, from: &str, calls: Calls) -> Result<Vec<String>, String> {
    let (a, b) = (Module::read(plain), Module::read(from));
    if a.other_section || b.other_section {
        return Err("its PTX has debug sections (-G), which a kernel's entry cannot be moved with".into());
    }
    if a.outside() != b.outside() {
        return Err("the other build's PTX differs outside its functions (the module's variables)".into());
    }
    // Each function the entry may call is in the plain PTX (for AsBuilt:
    // the same definition, or a declaration declared alike).
    let same = |name: &str| match (a.function(name), b.function(name)) {
        (Some(f), Some(g)) => calls == Calls::Plain || a.text(f) == b.text(g),
        _ => false,
    };
    Ok(b.functions
        .iter()
        .filter(|f| f.entry && a.function(f.name).is_some() && b.callees(f.name).iter().all(|g| same(g)))
        .map(|f| f.name.to_string())
        .collect())
}

/// `plain` (nvcc's PTX of a file) with each kernel of `kernels` given its
/// entry from `capped[R]` (nvcc's PTX of the file with `-maxrregcount=R`)
/// and, where it has no cap of its own, `.maxnreg R`: that kernel's code
/// as `nvcc -maxrregcount=R` builds it, the others' as they are. Err:
/// which kernel cannot be (see [`spliceable`]).
pub(crate) fn splice(plain: &str, kernels: &[(String, u32)], capped: &BTreeMap<u32, String>) -> Result<String, String> {
    let mut ptx = plain.to_string();
    for (symbol, r) in kernels {
        let from = capped.get(r).ok_or_else(|| format!("no PTX at -maxrregcount={r}"))?;
        ptx = take_entry(&ptx, from, symbol, Some(*r), Calls::Plain)
            .map_err(|why| format!("{}: no -maxrregcount={r} candidate: {why}", crate::names::short(symbol)))?;
    }
    Ok(ptx)
}

/// `plain` with `symbol`'s entry as `from` (another nvcc PTX of the file:
/// at a `-maxrregcount`, or of its source as `regtune fix` rewrites it)
/// has it, calling what `calls` says; with `cap`, `.maxnreg` where the
/// entry has no cap of its own. Err: why the entry cannot be taken
/// ([`spliceable`]).
pub(crate) fn take_entry(plain: &str, from: &str, symbol: &str, cap: Option<u32>, calls: Calls) -> Result<String, String> {
    if !spliceable(plain, from, calls)?.iter().any(|k| k == symbol) {
        let why = match calls {
            Calls::Plain => "it calls device functions the plain build does not declare",
            Calls::AsBuilt => "it calls device functions that the other build compiles differently",
        };
        return Err(why.into());
    }
    Ok(splice_one(plain, from, symbol, cap))
}

/// [`take_entry`] of one kernel that [`spliceable`] allows.
fn splice_one(plain: &str, capped: &str, symbol: &str, cap: Option<u32>) -> String {
    let (a, b) = (Module::read(plain), Module::read(capped));
    let (Some(to), Some(from)) = (a.function(symbol), b.function(symbol)) else { return plain.to_string() };
    // The capped PTX's file numbers and string labels, as the plain PTX's.
    let mut files: Vec<(u32, String)> = a.files.iter().map(|&(_, n, p)| (n, p.to_string())).collect();
    let mut new_files = Vec::new();
    let mut file_of = BTreeMap::new();
    for &(_, n, path) in &b.files {
        let number = match files.iter().find(|(_, p)| p == path) {
            Some((m, _)) => *m,
            None => {
                let m = files.iter().map(|(m, _)| *m).max().unwrap_or(0) + 1;
                files.push((m, path.to_string()));
                new_files.push(format!("\t.file\t{m} \"{path}\""));
                m
            }
        };
        file_of.insert(n, number);
    }
    let mut strings: Vec<(String, String)> = a.strings.iter().map(|(l, s)| (l.to_string(), s.clone())).collect();
    let mut new_strings = Vec::new();
    let mut label_of = BTreeMap::new();
    for (label, bytes) in &b.strings {
        let ours = match strings.iter().find(|(_, s)| s == bytes) {
            Some((l, _)) => l.clone(),
            None => {
                let l = format!("$L__info_string{}", strings.len());
                strings.push((l.clone(), bytes.clone()));
                new_strings.push(format!("{l}:\n.b8 {}", bytes.trim_end_matches(',')));
                l
            }
        };
        label_of.insert(label.to_string(), ours);
    }
    let mut entry: Vec<String> = b.text(from).iter().map(|l| relocate(l, &file_of, &label_of)).collect();
    let open = entry.iter().position(|l| l.trim() == "{").unwrap_or(entry.len());
    if let Some(r) = cap.filter(|_| takes_the_flag(&b.text(from)[..open])) {
        entry.insert(open, format!(".maxnreg {r}"));
    }
    let mut out: Vec<String> = Vec::with_capacity(a.lines.len() + entry.len());
    for (i, line) in a.lines.iter().enumerate() {
        if i == to.start {
            out.append(&mut entry);
        }
        if (to.start..to.end).contains(&i) {
            continue;
        }
        if Some(i) == a.strings_end {
            out.append(&mut new_strings);
        }
        out.push(line.to_string());
        if a.files.last().is_some_and(|&(last, _, _)| last == i) {
            out.append(&mut new_files);
        }
    }
    out.join("\n") + "\n"
}

/// A line of a spliced entry with its `.loc` numbers and labels the plain PTX's.
fn relocate(line: &str, file_of: &BTreeMap<u32, u32>, label_of: &BTreeMap<String, String>) -> String {
    let trimmed = line.trim_start();
    if !trimmed.starts_with(".loc") {
        return line.to_string();
    }
    let indent = &line[..line.len() - trimmed.len()];
    // `.loc F L C, function_name $L__info_stringK, inlined_at F L C`
    let parts: Vec<String> = trimmed
        .split(", ")
        .map(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            match words.as_slice() {
                [".loc", f, rest @ ..] | ["inlined_at", f, rest @ ..] => {
                    let f = f.parse().ok().and_then(|n| file_of.get(&n)).map_or(f.to_string(), |n| n.to_string());
                    let sep = if words[0] == ".loc" { "\t" } else { " " };
                    format!("{}{sep}{f} {}", words[0], rest.join(" "))
                }
                ["function_name", label] => format!("function_name {}", label_of.get(*label).map_or(*label, |l| l.as_str())),
                _ => part.to_string(),
            }
        })
        .collect();
    format!("{indent}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str =
        "//\n.version 9.5\n.target sm_90\n.address_size 64\n\n.extern .func vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n\
.global .align 4 .b8 table[8];\n\
.func (.param .b32 func_retval0) _Z1fi(\n\t.param .b32 _Z1fi_param_0\n)\n{\n\tret;\n\n}\n\
\t// .globl\t_Z1kPf\n.visible .entry _Z1kPf(\n\t.param .u64 _Z1kPf_param_0\n)\n{\n\t.reg .b32 \t%r<3>;\n\
\t.loc\t1 10 5\n\tmul.wide.u32 %rd1, %r1, 8;\n\tret;\n\n}\n\
\t// .globl\t_Z1jv\n.visible .entry _Z1jv()\n.maxntid 128, 1, 1\n{\n\tcall.uni (retval0), _Z1fi, (param0);\n\tret;\n\n}\n\
\t.file\t1 \"/src/k.cu\"\n\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 95,90,0\n\n\t}\n";

    /// The same file at a cap: the kernel's code, its file table and its
    /// strings differ, as cicc's do.
    fn capped() -> String {
        PLAIN
            .replace(
                "\t.loc\t1 10 5\n\tmul.wide.u32 %rd1, %r1, 8;",
                "\t.loc\t1 7 3, function_name $L__info_string0, inlined_at 2 10 5\n\tcvt.u64.u32 %rd1, %r1;\n\t.loc\t2 10 5\n\tshl.b64 %rd2, %rd1, 3;",
            )
            .replace("\t.file\t1 \"/src/k.cu\"", "\t.file\t1 \"/src/h.h\"\n\t.file\t2 \"/src/k.cu\"")
            .replace("$L__info_string0:\n.b8 95,90,0", "$L__info_string0:\n.b8 95,91,0\n$L__info_string1:\n.b8 95,90,0")
    }

    #[test]
    fn a_kernel_takes_its_entry_from_the_capped_ptx_with_its_numbers_made_the_plain_ptxs() {
        let capped = capped();
        assert_eq!(spliceable(PLAIN, &capped, Calls::AsBuilt).unwrap(), ["_Z1kPf", "_Z1jv"]);
        let out = splice(PLAIN, &[("_Z1kPf".into(), 64)], &BTreeMap::from([(64, capped)])).unwrap();
        assert!(
            out.contains(
                ".entry _Z1kPf(\n\t.param .u64 _Z1kPf_param_0\n)\n.maxnreg 64\n{\n\t.reg .b32 \t%r<3>;\n\
\t.loc\t2 7 3, function_name $L__info_string1, inlined_at 1 10 5\n\tcvt.u64.u32 %rd1, %r1;\n\t.loc\t1 10 5\n\tshl.b64 %rd2, %rd1, 3;"
            ),
            "{out}"
        );
        // The plain file table and strings, with what the entry needs that they lacked.
        assert!(out.contains("\t.file\t1 \"/src/k.cu\"\n\t.file\t2 \"/src/h.h\"\n\t.section"), "{out}");
        assert!(out.contains("$L__info_string0:\n.b8 95,90,0\n\n$L__info_string1:\n.b8 95,91,0\n\t}"), "{out}");
        // The other kernel is plain's, and the rest of the module too.
        let rest = |s: &str| s[s.find("\t// .globl\t_Z1jv").unwrap()..s.find("\t.file").unwrap()].to_string();
        assert_eq!(rest(&out), rest(PLAIN));
        assert_eq!(out[..out.find(".entry _Z1kPf").unwrap()], PLAIN[..PLAIN.find(".entry _Z1kPf").unwrap()]);
    }

    #[test]
    fn a_kernel_with_a_cap_or_block_size_of_its_own_keeps_it_as_ptxas_does() {
        let capped = PLAIN.replace("_Z1fi, (param0);\n\tret;", "_Z1fi, (param0);\n\tbar.sync 0;\n\tret;");
        let out = splice(PLAIN, &[("_Z1jv".into(), 48)], &BTreeMap::from([(48, capped)])).unwrap();
        assert!(out.contains(".entry _Z1jv()\n.maxntid 128, 1, 1\n{\n\tcall.uni (retval0), _Z1fi, (param0);\n\tbar.sync 0;"), "{out}");
        assert!(!out.contains(".maxnreg"), "{out}");
    }

    #[test]
    fn a_kernel_that_calls_a_device_function_the_other_build_changes_calls_plains_or_is_not_spliced() {
        let capped = PLAIN.replace("{\n\tret;\n\n}\n\t// .globl\t_Z1kPf", "{\n\tmov.u32 %r1, 0;\n\tret;\n\n}\n\t// .globl\t_Z1kPf");
        // A cap's entry calls plain's _Z1fi; a rewrite's cannot.
        let out = splice(PLAIN, &[("_Z1jv".into(), 48)], &BTreeMap::from([(48, capped.clone())])).unwrap();
        assert!(out.contains("_Z1fi(\n\t.param .b32 _Z1fi_param_0\n)\n{\n\tret;") && !out.contains("mov.u32 %r1, 0;"), "{out}");
        assert_eq!(spliceable(PLAIN, &capped, Calls::AsBuilt).unwrap(), ["_Z1kPf"], "_Z1jv calls _Z1fi");
        let e = take_entry(PLAIN, &capped, "_Z1jv", None, Calls::AsBuilt).unwrap_err();
        assert!(e.starts_with("it calls device functions that the other build"), "{e}");
        let globals = PLAIN.replace("table[8]", "table[16]");
        assert!(spliceable(PLAIN, &globals, Calls::Plain).unwrap_err().contains("outside its functions"));
        let debug = PLAIN.replace("\t.section\t.debug_str", "\t.section\t.debug_info\n\t{\n\t}\n\t.section\t.debug_str");
        assert!(spliceable(PLAIN, &debug, Calls::Plain).unwrap_err().contains("-G"));
    }

    #[test]
    fn a_rewrite_that_drops_a_declaration_splices_and_a_callee_is_compared_by_its_definition() {
        // cicc declares a device function before its callers (pow's slow
        // path); a rewrite of pow drops both.
        let declared = PLAIN
            .replace(".global .align 4", ".func (.param .b32 func_retval0) _Z1fi\n(\n\t.param .b32 _Z1fi_param_0\n)\n;\n.global .align 4");
        let rewritten = declared.replace(".func (.param .b32 func_retval0) _Z1fi\n(\n\t.param .b32 _Z1fi_param_0\n)\n;\n", "");
        assert_eq!(spliceable(&declared, &rewritten, Calls::AsBuilt).unwrap(), ["_Z1kPf", "_Z1jv"]);
        // The callee's body differs under the same declaration: not spliced.
        let body = declared.replace("{\n\tret;\n\n}\n\t// .globl\t_Z1kPf", "{\n\tmov.u32 %r1, 0;\n\tret;\n\n}\n\t// .globl\t_Z1kPf");
        assert_eq!(spliceable(&declared, &body, Calls::AsBuilt).unwrap(), ["_Z1kPf"], "_Z1jv calls _Z1fi");
        assert_eq!(spliceable(&declared, &body, Calls::Plain).unwrap(), ["_Z1kPf", "_Z1jv"]);
        // An entry that calls what the plain PTX does not declare: not spliced.
        let printf = PLAIN.replace("\tmul.wide.u32 %rd1, %r1, 8;", "\tcall.uni vprintf, (param0);");
        let undeclared = PLAIN.replace(".extern .func vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n", "");
        assert_eq!(spliceable(&undeclared, &printf, Calls::Plain).unwrap(), ["_Z1jv"]);
    }

    #[test]
    fn a_body_ends_where_its_braces_balance_not_at_an_inline_asm_scope() {
        // CUB's inline assembly closes its scope in column 0.
        let asm = PLAIN.replace(
            "\tmul.wide.u32 %rd1, %r1, 8;",
            "\t{\n    .reg .pred p;\n    mov.b64 {%r1, %r2}, %rd1;\n}\n\tmul.wide.u32 %rd1, %r1, 8;",
        );
        let m = Module::read(&asm);
        let k = m.function("_Z1kPf").unwrap();
        assert!(m.text(k).last().unwrap().starts_with('}') && m.text(k).iter().any(|l| l.contains("mul.wide")), "{:?}", m.text(k));
        assert_eq!(spliceable(&asm, &asm, Calls::AsBuilt).unwrap(), ["_Z1kPf", "_Z1jv"]);
    }

    #[test]
    fn function_heads_name_kernels_and_device_functions() {
        assert_eq!(function_head(".visible .entry _Z1kPf("), Some(("_Z1kPf", true)));
        assert_eq!(function_head(".func (.param .b32 func_retval0) _Z1fi("), Some(("_Z1fi", false)));
        assert_eq!(function_head(".extern .func vprintf"), Some(("vprintf", false)));
        assert_eq!(function_head("\t// .globl\t_Z1kPf"), None);
        assert!(holds_name("call.uni (r), _Z1fi, (p);", "_Z1fi") && !holds_name("_Z1fii", "_Z1fi"));
    }
}
