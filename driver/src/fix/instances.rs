//! nvcc: a kernel template whose instantiations decided different register
//! caps (or some none). `__maxnreg__` takes a constant expression that may
//! depend on the template's parameters, so each instantiation's cap is
//! spelled once, in a trait the patch defines above the template:
//!
//! ```text
//! template <size_t PPWI> struct regtune_maxnreg_fasten_main { static constexpr int value = 255; };
//! template <> struct regtune_maxnreg_fasten_main<2> { static constexpr int value = 72; };
//! template <size_t PPWI>
//! REGTUNE_MAXNREG(regtune_maxnreg_fasten_main<PPWI>::value)
//! static __global__ void fasten_main(...)
//! ```
//!
//! one explicit specialization per decided instantiation, its template
//! arguments as clang's AST gives them (a type as clang prints it, an
//! integer as a number). `__maxnreg__` has no "no cap": an instantiation
//! without a decision takes the primary's value, 255 (the most registers a
//! thread has), whose code is not plain's (`.maxnreg 255` is not the absence
//! of a directive), so the rebuild holds it to plain's registers, spills and
//! occupancy; where it misses them the whole template's edit is left out.
//!
//! Only where every instantiation's decision is a register cap or nothing
//! (anything else the instantiations share in the template's text: the
//! usual rule, one decision for all, shared.rs), and where they do not all
//! take the same cap (then `REGTUNE_MAXNREG(R)` on the template, as for any
//! kernel). The macro is empty for every compiler but nvcc; the trait is
//! plain C++ every CUDA and HIP compiler builds, and nothing else uses it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::gpu::nvptx::{nvidia, MAXNREG_DEFINITION, MAXNREG_MACRO};
use crate::gpu::Arch;
use crate::names;
use regtune_decisions::Usage;

use super::ast::Node;
use super::attributes;
use super::edit::{self, Edit};
use super::files::Files;
use super::{Decision, Kernel, Notes, Source};

/// The register cap of an instantiation without a decision: the most a
/// thread may have (`__maxnreg__` has no "none").
pub(crate) const DEFAULT: u32 = nvidia::MAX_REGS_PER_THREAD;

/// A template whose instantiations take their caps from a trait.
#[derive(Debug, Clone)]
pub(crate) struct Capped {
    /// The template's name (`fasten_main`).
    pub name: String,
    /// The trait (`regtune_maxnreg_fasten_main`).
    pub trait_name: String,
    /// Instantiations with a cap (on some target), whose edits these are.
    pub capped: Vec<String>,
    /// Instantiations without one, per target: held to plain's registers,
    /// spills and occupancy.
    pub plain: Vec<(String, Arch)>,
    /// Those take their plain register counts as caps, not the default
    /// (which gave one of them other numbers: what it gave).
    pub at_plain_count: Option<String>,
    members: Vec<Member>,
    archs: Vec<Arch>,
    /// The template's parameters as the trait's primary declares them.
    params: String,
    /// Where the trait goes: the template header's offset in `file`, its
    /// line's indentation, and whether it starts its line.
    file: Arc<str>,
    at: usize,
    indent: String,
    own_line: bool,
    /// The cap on the template, `REGTUNE_MAXNREG(trait<...>::value)`.
    cap: Edit,
}

/// An instantiation: its arguments as the trait's specialization spells
/// them, its cap and its plain register count per target.
#[derive(Debug, Clone)]
struct Member {
    symbol: String,
    args: Vec<String>,
    caps: Vec<Option<u32>>,
    plain: Vec<Option<u32>>,
}

impl Capped {
    pub(crate) fn has(&self, symbol: &str) -> bool {
        self.capped.iter().any(|s| s == symbol) || self.plain.iter().any(|(s, _)| s == symbol)
    }

    /// The same template's (another unit's plan of it, or a later variant).
    pub(crate) fn same(&self, other: &Capped) -> bool {
        (&self.trait_name, &self.file, self.at) == (&other.trait_name, &other.file, other.at)
    }

    /// An instantiation held to plain's numbers on `arch`.
    pub(crate) fn is_plain(&self, symbol: &str, arch: &Arch) -> bool {
        self.plain.iter().any(|(s, a)| s == symbol && a == arch)
    }

    /// The edits: the trait above the template's header, the cap on it.
    pub(crate) fn edits(&self) -> Vec<Edit> {
        let (indent, name, trait_name) = (&self.indent, &self.name, &self.trait_name);
        let mut definition = format!(
            "{indent}// regtune fix: {name}'s register cap per instantiation, for REGTUNE_MAXNREG ({DEFAULT} where none was decided).\n\
             {indent}template <{}> struct {trait_name} {{ static constexpr int value = {DEFAULT}; }};\n",
            self.params
        );
        let specializations = |a: usize| -> String {
            let mut s = String::new();
            for m in &self.members {
                let (value, why) = match (m.caps[a], m.plain[a]) {
                    (Some(r), _) => (r, ""),
                    (None, Some(r)) if self.at_plain_count.is_some() => (r, " // no decision: plain's registers"),
                    _ => continue,
                };
                let args = m.args.join(", ");
                s.push_str(&format!("{indent}template <> struct {trait_name}<{args}> {{ static constexpr int value = {value}; }};{why}\n"));
            }
            s
        };
        let per_arch: Vec<String> = (0..self.archs.len()).map(specializations).collect();
        if per_arch.iter().all(|s| *s == per_arch[0]) {
            definition.push_str(&per_arch[0]);
        } else {
            let mut branch = "#if";
            for (arch, s) in self.archs.iter().zip(&per_arch).filter(|(_, s)| !s.is_empty()) {
                definition.push_str(&format!("{branch} {}\n{s}", attributes::target_macro(arch)));
                branch = "#elif";
            }
            definition.push_str("#endif\n");
        }
        if !self.own_line {
            definition = format!("{} ", definition.trim_end());
        }
        let mut trait_edit = Edit::new(&self.file, self.at, self.at, definition, "", "occupancy");
        trait_edit.kernels = self.cap.kernels.clone();
        vec![self.cap.clone(), trait_edit]
    }

    /// The same with `symbol`'s cap on `arch` set to `cap` (a
    /// `-maxrregcount` decision's next cap to try); None where it has none.
    pub(crate) fn with_cap(&self, symbol: &str, arch: &Arch, cap: u32) -> Option<Capped> {
        let a = self.archs.iter().position(|x| x == arch)?;
        let mut next = self.clone();
        let m = next.members.iter_mut().find(|m| m.symbol == symbol)?;
        m.caps[a].as_ref()?;
        m.caps[a] = Some(cap);
        Some(next)
    }

    /// The same with `symbol` undecided on `arch` (its -maxrregcount cap reached
    /// no cap's numbers): held to plain's like the others without one.
    pub(crate) fn without(&self, symbol: &str, arch: &Arch) -> Option<Capped> {
        let a = self.archs.iter().position(|x| x == arch)?;
        let mut next = self.clone();
        let m = next.members.iter_mut().find(|m| m.symbol == symbol)?;
        m.caps[a].take()?;
        if m.caps.iter().all(Option::is_none) {
            next.capped.retain(|s| s != symbol);
        }
        next.plain.push((symbol.to_string(), arch.clone()));
        next.cap.kernels = next.capped.iter().cloned().collect();
        Some(next)
    }

    /// The same with the undecided instantiations at their plain register
    /// counts, after the default gave one of them other numbers (`why`);
    /// None where that was tried already, or a count is unknown.
    pub(crate) fn at_plain_counts(&self, why: &str) -> Option<Capped> {
        let known = self.members.iter().all(|m| m.caps.iter().zip(&m.plain).all(|(c, p)| c.is_some() || p.is_some()));
        (self.at_plain_count.is_none() && known).then(|| Capped { at_plain_count: Some(why.to_string()), ..self.clone() })
    }
}

/// The per-instantiation caps of the unit's kernel templates (their edits,
/// each owned by the template's capped instantiations), and the templates.
/// Their instantiations' decisions take no edit of their own.
pub(crate) fn plan(
    source: &Source<'_>,
    files: &Files,
    decisions: &[Decision],
    active: &[&Decision],
    archs: &[Arch],
    notes: &mut Notes,
) -> (Vec<Edit>, Vec<Capped>) {
    // Each kernel template with a decided instantiation, by where its definition begins.
    let mut templates: BTreeMap<(Arc<str>, usize), BTreeSet<String>> = BTreeMap::new();
    let mut found: BTreeMap<String, Option<(&Node, &Node)>> = BTreeMap::new();
    let mut locate = |symbol: &str| -> Option<(&Node, &Node)> {
        *found.entry(symbol.to_string()).or_insert_with(|| match source.definition(symbol) {
            Some((decl, Some(parent))) if parent.kind == "FunctionTemplateDecl" => Some((decl, parent)),
            _ => None,
        })
    };
    let key = |decl: &Node| decl.begin.as_ref().map(|b| (b.file.clone(), b.offset));
    for d in active {
        if let Some(k) = locate(&d.symbol).and_then(|(decl, _)| key(decl)) {
            templates.entry(k).or_default();
        }
    }
    if templates.is_empty() {
        return (vec![], vec![]);
    }
    // Every instantiation the db knows of each, decided or not.
    let named: BTreeSet<String> = active.iter().map(|d| names::unqualified(&d.symbol)).collect();
    for d in decisions.iter().filter(|d| named.contains(&names::unqualified(&d.symbol))) {
        if let Some(k) = locate(&d.symbol).and_then(|(decl, _)| key(decl)) {
            if let Some(members) = templates.get_mut(&k) {
                members.insert(d.symbol.clone());
            }
        }
    }
    let mut edits = Vec::new();
    let mut out = Vec::new();
    for members in templates.values() {
        let members: Vec<(&str, &Node, &Node)> =
            members.iter().filter_map(|s| locate(s).map(|(decl, parent)| (s.as_str(), decl, parent))).collect();
        match template(source, files, decisions, &members, archs, notes) {
            Ok(Some((e, c))) => {
                edits.extend(e);
                out.push(c);
            }
            Ok(None) => {}
            Err(why) => {
                let (symbol, decl, _) = members[0];
                let name = decl.name.clone().unwrap_or_else(|| source.function_name(symbol));
                let place =
                    decl.begin.as_ref().map(|b| (files.shown(&b.file), files.text(&b.file).map(|t| super::ast::line_col(t, b.offset).0)));
                let (shown, line) = place.unwrap_or_default();
                notes.file(&shown, line, format!("{name}: its instantiations' register caps are not spelled per instantiation: {why}"));
            }
        }
    }
    (edits, out)
}

/// One template's trait and cap, when its instantiations need one: None
/// where they do not (the usual edits follow); Err: why they cannot have
/// one (the usual edits follow too, noted).
fn template(
    source: &Source<'_>,
    files: &Files,
    decisions: &[Decision],
    members: &[(&str, &Node, &Node)],
    archs: &[Arch],
    notes: &mut Notes,
) -> Result<Option<(Vec<Edit>, Capped)>, String> {
    let Some(&(first, decl, parent)) = members.first() else { return Ok(None) };
    // Each instantiation's cap and plain registers per target; a decision other than a cap: not this.
    let mut caps: Vec<Vec<Option<u32>>> = Vec::new();
    let mut plain_registers: Vec<Vec<Option<u32>>> = Vec::new();
    for (symbol, _, _) in members {
        let (mut per_arch, mut plain) = (Vec::new(), Vec::new());
        for arch in archs {
            let Some(d) = decisions.iter().find(|d| d.symbol == *symbol && &d.arch == arch) else {
                return Err(format!("{} has no decision for {arch} in the db", names::short(symbol)));
            };
            let t = &d.transforms;
            let cap = match &d.as_maxnreg {
                // nvcc's -maxrregcount=R, as the instantiation's own cap.
                Some(f) => Some(f.cap()),
                None if !t.without_occupancy().is_empty() => return Ok(None),
                None => t.occupancy().map(nvidia::register_cap_for_warps),
            };
            per_arch.push(cap);
            plain.push(d.before.map(|u| u.vgpr).filter(|r| *r > 0));
        }
        caps.push(per_arch);
        plain_registers.push(plain);
    }
    // All alike on every target: the cap on the template, as for any kernel.
    if (0..archs.len()).all(|a| caps.iter().all(|c| c[a] == caps[0][a])) {
        return Ok(None);
    }
    // A block size in the source takes the cap as its second argument (attributes.rs).
    if decl.inner.iter().any(|n| n.kind == "CUDALaunchBoundsAttr") {
        return Ok(None);
    }
    let params = parameters(parent)?;
    let mut arguments = Vec::new();
    for (symbol, spec, _) in members {
        let args = arguments_of(spec, &params).map_err(|why| format!("{}: {why}", names::short(symbol)))?;
        arguments.push(args);
    }
    let name = decl.name.clone().ok_or("clang gives the template no name")?;
    let trait_name = format!("regtune_maxnreg_{name}");
    let Some(file) = decl.begin.as_ref().map(|b| b.file.clone()) else { return Err("clang gives its definition no place".into()) };
    let Some(text) = files.text(&file) else { return Ok(None) };
    let header = header(source, decl, parent).ok_or("its template header is not in clang's AST")?;
    let header_at = header.begin.as_ref().filter(|b| b.file == file && !b.in_macro).map(|b| b.offset);
    let Some(header_at) = header_at else { return Err("its template header is not in its definition's file".into()) };
    let kernel = Kernel {
        symbol: first,
        name: source.function_name(first),
        decl,
        file: &file,
        text,
        shown: files.shown(&file),
        files,
        template: true,
    };
    if kernel.defined_by_macro() {
        return Ok(None);
    }
    let uses: Vec<String> = params.iter().map(|p| p.used.clone()).collect();
    let value = format!("{trait_name}<{}>::value", uses.join(", "));
    // A comma in the macro's argument would split it.
    let attribute = if value.contains(',') { format!("{MAXNREG_MACRO}(({value}))") } else { format!("{MAXNREG_MACRO}({value})") };
    let per_arch_attrs: Vec<(&Arch, String)> = archs.iter().map(|a| (a, attribute.clone())).collect();
    let capped: Vec<String> =
        members.iter().zip(&caps).filter(|(_, c)| c.iter().any(Option::is_some)).map(|((s, _, _), _)| s.to_string()).collect();
    let plain: Vec<(String, Arch)> = members
        .iter()
        .zip(&caps)
        .flat_map(|((s, _, _), c)| archs.iter().zip(c).filter(|(_, r)| r.is_none()).map(move |(a, _)| (s.to_string(), a.clone())))
        .collect();
    // Written where the cap goes, or noted why not (then none of it is).
    let Some(cap) = attributes::place(&kernel, &per_arch_attrs, &[MAXNREG_MACRO], notes) else {
        let c = Capped { capped, plain, ..Capped::placeholder(name, trait_name, file) };
        return Ok(Some((vec![], c)));
    };
    let cap = Edit { defines: Some(MAXNREG_DEFINITION), kernels: capped.iter().cloned().collect(), ..cap };
    let members = members
        .iter()
        .zip(arguments)
        .zip(caps)
        .zip(plain_registers)
        .map(|((((symbol, _, _), args), caps), plain)| Member { symbol: symbol.to_string(), args, caps, plain })
        .collect();
    let c = Capped {
        name,
        trait_name,
        capped,
        plain,
        at_plain_count: None,
        members,
        archs: archs.to_vec(),
        params: params.iter().map(|p| p.declared.as_str()).collect::<Vec<_>>().join(", "),
        indent: edit::indentation(text, header_at).to_string(),
        own_line: edit::starts_line(text, header_at),
        // Above the template's comment too, which stays with it.
        at: if edit::starts_line(text, header_at) { edit::above_comments(text, edit::line_start(text, header_at)) } else { header_at },
        file,
        cap,
    };
    Ok(Some((c.edits(), c)))
}

impl Capped {
    /// A template whose cap could not be placed (noted): no edits.
    fn placeholder(name: String, trait_name: String, file: Arc<str>) -> Capped {
        Capped {
            name,
            trait_name,
            capped: vec![],
            plain: vec![],
            at_plain_count: None,
            members: vec![],
            archs: vec![],
            params: String::new(),
            cap: Edit::new(&file, 0, 0, "", "", "occupancy"),
            file,
            at: 0,
            indent: String::new(),
            own_line: true,
        }
    }
}

/// What the patch's note says of a template whose caps per instantiation
/// were verified: which instantiations, without a decision, were held to
/// plain's registers, spills and occupancy, and what nvcc's build gave them
/// (`usage`, by symbol and target).
pub(crate) fn verified_plain(c: &Capped, usage: &BTreeMap<(String, String), Usage>) -> String {
    let head = format!("{}: register caps per instantiation ({})", c.name, c.trait_name);
    if c.plain.is_empty() {
        return format!("{head}, every instantiation decided");
    }
    let each: Vec<String> = c
        .plain
        .iter()
        .map(|(s, arch)| {
            let got = usage.get(&(s.clone(), arch.to_string())).map_or_else(
                || "not measured".to_string(),
                |u| format!("registers {}, spill stores {} bytes, occupancy {}", u.vgpr, u.vgpr_spills + u.sgpr_spills, u.occupancy),
            );
            format!("{} on {arch} ({got})", names::short(s))
        })
        .collect();
    let none = "__maxnreg__ has no \"none\": not plain's code";
    let cap = match &c.at_plain_count {
        None => format!("the default cap {DEFAULT} ({none})"),
        Some(why) => format!("its plain register count as its cap ({none}; {why})"),
    };
    format!("{head}; without a decision, {cap}, verified by nvcc's build at plain's registers, spills and occupancy: {}", each.join("; "))
}

/// A template parameter: as the trait declares it and as its use names it.
#[derive(Debug)]
pub(crate) struct Param {
    declared: String,
    used: String,
    pack: bool,
    /// A non-type parameter's type (as written, and desugared).
    ty: Option<(String, String)>,
}

/// The template's parameters (`typename Real`, `size_t PPWI`, `int... Ns`).
fn parameters(template: &Node) -> Result<Vec<Param>, String> {
    let mut out = Vec::new();
    for p in &template.inner {
        let dots = if p.is_parameter_pack { "..." } else { "" };
        let name = || p.name.clone().filter(|n| !n.is_empty()).ok_or("a template parameter has no name the trait could use");
        match p.kind.as_str() {
            "TemplateTypeParmDecl" => {
                let name = name()?;
                let tag = p.tag_used.as_deref().unwrap_or("typename");
                out.push(Param {
                    declared: format!("{tag}{dots} {name}"),
                    used: format!("{name}{dots}"),
                    pack: p.is_parameter_pack,
                    ty: None,
                });
            }
            "NonTypeTemplateParmDecl" => {
                let name = name()?;
                let ty = p.ty.clone().ok_or("a template parameter has no type clang names")?;
                let desugared = p.desugared.clone().unwrap_or_else(|| ty.clone());
                out.push(Param {
                    declared: format!("{ty}{dots} {name}"),
                    used: format!("{name}{dots}"),
                    pack: p.is_parameter_pack,
                    ty: Some((ty, desugared)),
                });
            }
            "TemplateTemplateParmDecl" => return Err("a template template parameter, which the trait does not spell".into()),
            _ => {}
        }
    }
    if out.is_empty() {
        return Err("clang's AST gives the template no parameters".into());
    }
    Ok(out)
}

/// An instantiation's template arguments as an explicit specialization of
/// the trait spells them (a pack's, one by one).
fn arguments_of(spec: &Node, params: &[Param]) -> Result<Vec<String>, String> {
    let args: Vec<&Node> = spec.inner.iter().filter(|n| n.kind == "TemplateArgument").collect();
    if args.len() != params.len() {
        return Err(format!("clang gives {} template arguments for {} parameters", args.len(), params.len()));
    }
    let mut out = Vec::new();
    for (p, a) in params.iter().zip(args) {
        if a.is_pack || p.pack {
            for inner in a.inner.iter().filter(|n| n.kind == "TemplateArgument") {
                out.push(argument(p, inner)?);
            }
        } else {
            out.push(argument(p, a)?);
        }
    }
    Ok(out)
}

/// The built-in integer types, a non-type argument of which is its number.
const INTEGERS: &[&str] = &[
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned int",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
    "wchar_t",
    "char8_t",
    "char16_t",
    "char32_t",
    "__int128",
    "unsigned __int128",
];

/// One template argument, spelled: a type as clang prints it (`double`),
/// an integer as its number (`2` for the `size_t` clang's demangler writes
/// `(unsigned long)2`), `true`/`false` for a `bool` (clang's JSON gives
/// `true` as -1), a cast to the parameter's type for another (an
/// enumeration: `(Color)1`).
pub(crate) fn argument(param: &Param, arg: &Node) -> Result<String, String> {
    if let Some(value) = &arg.value {
        let Some((ty, desugared)) = &param.ty else { return Err(format!("a value ({value}) for a type parameter")) };
        let n: i128 = value.parse().map_err(|_| format!("a template argument ({value}) that is not an integer"))?;
        let bare = desugared.trim_start_matches("const ").trim();
        if bare == "bool" {
            return Ok((n != 0).to_string());
        }
        if INTEGERS.contains(&bare) {
            return Ok(n.to_string());
        }
        if ty.contains("auto") || !ty.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == ' ') {
            return Err(format!("a template argument of type `{ty}`, which the trait does not spell"));
        }
        return Ok(format!("({ty}){n}"));
    }
    match &arg.ty {
        Some(t) if param.ty.is_none() => {
            let unnamed = ["(anonymous", "(lambda", "(unnamed", "<anonymous", "<unnamed", "type-parameter-"];
            if unnamed.iter().any(|u| t.contains(u)) {
                return Err(format!("a template argument `{t}` no source can name"));
            }
            Ok(t.clone())
        }
        _ => Err("a template argument that is neither a type nor an integer".into()),
    }
}

/// The `template <...>` declaration the kernel's definition belongs to: its
/// parent, where that holds the definition, else the one around it (a
/// template declared before its definition lists its instantiations under
/// the first declaration).
fn header<'a>(source: &Source<'a>, decl: &Node, parent: &'a Node) -> Option<&'a Node> {
    let at = decl.begin.as_ref()?;
    let around = |t: &Node| {
        let (Some(b), Some(e)) = (t.begin.as_ref(), t.end.as_ref()) else { return false };
        b.file == at.file && e.file == at.file && b.offset <= at.offset && at.offset < e.token_end()
    };
    if around(parent) {
        return Some(parent);
    }
    source.nodes.iter().flat_map(|n| n.walk()).find(|n| n.kind == "FunctionTemplateDecl" && around(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::ast;

    /// Shortened from clang 22's dump of miniBUDE's kernel and a type
    /// parameter's: the template, its parameter, two instantiations.
    const BUDE: &str = r#"{"id": "0x1", "kind": "FunctionTemplateDecl", "name": "fasten_main",
      "inner": [
        {"id": "0x2", "kind": "NonTypeTemplateParmDecl", "name": "PPWI",
         "type": {"desugaredQualType": "unsigned long", "qualType": "size_t", "typeAliasDeclId": "0x9"}, "depth": 0, "index": 0},
        {"id": "0x3", "kind": "FunctionDecl", "name": "fasten_main"},
        {"id": "0x4", "kind": "FunctionDecl", "name": "fasten_main", "mangledName": "_ZL11fasten_mainILm2EEviiPK4AtomS2_PKfS4_S4_S4_S4_S4_PfPK8FFParamsi",
         "inner": [{"kind": "TemplateArgument", "value": 2}]}
      ]}
    {"id": "0x5", "kind": "FunctionTemplateDecl", "name": "computeValue",
      "inner": [
        {"id": "0x6", "kind": "TemplateTypeParmDecl", "name": "Real", "tagUsed": "typename", "depth": 0, "index": 0},
        {"id": "0x7", "kind": "NonTypeTemplateParmDecl", "name": "B", "type": {"qualType": "bool"}},
        {"id": "0x8", "kind": "NonTypeTemplateParmDecl", "name": "C", "type": {"qualType": "Color"}},
        {"id": "0x9", "kind": "TemplateTypeParmDecl", "name": "Ts", "tagUsed": "class", "isParameterPack": true},
        {"id": "0xa", "kind": "FunctionDecl", "name": "computeValue", "mangledName": "_Z12computeValueIdLb1EL5Color1EJifEEvPT_",
         "inner": [{"kind": "TemplateArgument", "type": {"qualType": "double"}, "inner": [{"id": "0xb", "kind": "BuiltinType", "type": {"qualType": "double"}}]},
                   {"kind": "TemplateArgument", "value": -1},
                   {"kind": "TemplateArgument", "value": 1},
                   {"kind": "TemplateArgument", "isPack": true, "inner": [{"kind": "TemplateArgument", "type": {"qualType": "int"}},
                                                                       {"kind": "TemplateArgument", "type": {"qualType": "float"}}]}]}
      ]}
    "#;

    #[test]
    fn the_trait_spells_type_and_non_type_arguments_as_the_ast_gives_them() {
        let nodes = ast::parse(BUDE).unwrap();
        let bude = parameters(&nodes[0]).unwrap();
        assert_eq!(bude.iter().map(|p| (p.declared.as_str(), p.used.as_str())).collect::<Vec<_>>(), [("size_t PPWI", "PPWI")]);
        let spec = &nodes[0].inner[2];
        // clang's demangler writes the instantiation's argument (unsigned long)2; the trait, 2.
        let symbol = spec.mangled_name.as_deref().unwrap();
        assert_eq!(names::short(symbol), "void fasten_main<(unsigned long)2>");
        assert_eq!(arguments_of(spec, &bude).unwrap(), ["2"]);

        let value = parameters(&nodes[1]).unwrap();
        let declared: Vec<&str> = value.iter().map(|p| p.declared.as_str()).collect();
        assert_eq!(declared, ["typename Real", "bool B", "Color C", "class... Ts"]);
        assert_eq!(value.iter().map(|p| p.used.as_str()).collect::<Vec<_>>(), ["Real", "B", "C", "Ts..."]);
        assert_eq!(arguments_of(&nodes[1].inner[4], &value).unwrap(), ["double", "true", "(Color)1", "int", "float"]);
    }

    #[test]
    fn arguments_no_source_can_name_are_refused() {
        let p = Param { declared: "typename T".into(), used: "T".into(), pack: false, ty: None };
        let lambda = Node { kind: "TemplateArgument".into(), ty: Some("(lambda at k.cu:3:5)".into()), ..Default::default() };
        assert!(argument(&p, &lambda).unwrap_err().contains("no source can name"));
        let n = Param { declared: "auto N".into(), used: "N".into(), pack: false, ty: Some(("auto".into(), "auto".into())) };
        let two = Node { kind: "TemplateArgument".into(), value: Some("2".into()), ..Default::default() };
        assert!(argument(&n, &two).is_err());
        let size = Param { ty: Some(("size_t".into(), "unsigned long".into())), ..n };
        assert_eq!(argument(&size, &two).unwrap(), "2");
    }
}
