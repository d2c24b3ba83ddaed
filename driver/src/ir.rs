//! A reader for the parts of textual LLVM IR that `explain` and `fix` look
//! at: functions, blocks, instructions (result, opcode, operands, type, debug
//! location, loop ID), debug records (`#dbg_value`, `#dbg_declare`) and the
//! metadata they point to (debug info, loop IDs). The IR is the compiler's
//! own output (`clang -S -emit-llvm -g`), one instruction per line, so a line
//! reader is enough; anything it does not recognise is skipped.

use std::collections::{HashMap, HashSet};

/// One place in the source: file as the debug info names it, line, column.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SourcePos {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl SourcePos {
    /// The file's last path component: the debug info may spell a path
    /// relative to the compile directory or absolute.
    pub(crate) fn file_name(&self) -> &str {
        self.file.rsplit('/').next().unwrap_or(&self.file)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Module {
    pub functions: Vec<Function>,
    metadata: HashMap<u32, Node>,
}

#[derive(Debug, Default)]
pub(crate) struct Function {
    /// The symbol, without `@` or quotes.
    pub name: String,
    /// Parameters: (name without `%`, full text with type and attributes).
    pub params: Vec<(String, String)>,
    /// The `DISubprogram`.
    pub dbg: Option<u32>,
    pub blocks: Vec<Block>,
    pub records: Vec<DbgRecord>,
}

#[derive(Debug, Default)]
pub(crate) struct Block {
    /// Without `%`; empty for an unnamed entry block.
    pub name: String,
    pub insts: Vec<Inst>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Inst {
    /// Without `%`.
    pub result: Option<String>,
    pub opcode: String,
    /// From the opcode on, metadata attachments removed.
    pub text: String,
    /// Values read, in order (names without `%`; constants are not listed).
    pub operands: Vec<String>,
    /// The result's type ("" when unknown or none).
    pub ty: String,
    pub dbg: Option<u32>,
    /// `!llvm.loop` on a loop's latch branch.
    pub loop_md: Option<u32>,
}

/// `#dbg_value(double %x, !12, ...)`: the value (`%x` without `%`, or a
/// constant) is the variable `!12`.
#[derive(Debug, Clone)]
pub(crate) struct DbgRecord {
    pub declare: bool,
    pub value: String,
    pub variable: u32,
}

#[derive(Debug, Default)]
struct Node {
    kind: String,
    fields: Vec<(String, String)>,
}

impl Node {
    fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    fn id(&self, key: &str) -> Option<u32> {
        self.get(key).and_then(md_id)
    }
    fn num(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.parse().ok())
    }
    fn string(&self, key: &str) -> Option<&str> {
        self.get(key).map(|v| v.trim_matches('"'))
    }
}

fn md_id(s: &str) -> Option<u32> {
    s.trim().strip_prefix('!')?.parse().ok()
}

/// A quoted metadata string, with LLVM's `\XX` escapes undone.
fn unquote(text: &str) -> String {
    let inner = text.trim_matches('"');
    let mut out = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if let Some(b) = inner.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A source variable as the debug info describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Variable {
    pub name: String,
    pub line: u32,
    /// 1-based parameter number, for parameters.
    pub arg: Option<u32>,
    pub ty: Option<u32>,
    pub scope: Option<u32>,
}

pub(crate) fn parse(text: &str) -> Module {
    let mut m = Module::default();
    let mut current: Option<Function> = None;
    for line in text.lines() {
        if let Some(f) = current.as_mut() {
            if line.starts_with('}') {
                m.functions.extend(current.take());
                continue;
            }
            let body = line.trim();
            if body.is_empty() || body.starts_with(';') {
                continue;
            }
            if let Some(record) = body.strip_prefix("#dbg_") {
                f.records.extend(dbg_records(record));
            } else if !line.starts_with(' ') {
                // A block label: `name:` or `"name":`, then maybe `; preds = ...`.
                let label = body.split(';').next().unwrap_or("").trim().trim_end_matches(':');
                f.blocks.push(Block { name: label.trim_matches('"').to_string(), insts: vec![] });
            } else {
                if f.blocks.is_empty() {
                    f.blocks.push(Block::default());
                }
                let inst = instruction(body);
                f.blocks.last_mut().expect("a block").insts.push(inst);
            }
            continue;
        }
        if line.starts_with("define ") {
            current = Some(function_header(line));
        } else if line.starts_with('!') {
            if let Some((id, node)) = metadata(line) {
                m.metadata.insert(id, node);
            }
        }
    }
    // Type names (`%struct.X`) look like values; keep only names defined here.
    for f in &mut m.functions {
        let defined: HashSet<String> = f
            .params
            .iter()
            .map(|(n, _)| n.clone())
            .chain(f.blocks.iter().flat_map(|b| b.insts.iter().filter_map(|i| i.result.clone())))
            .collect();
        for b in &mut f.blocks {
            for i in &mut b.insts {
                i.operands.retain(|o| defined.contains(o));
            }
        }
    }
    m
}

fn function_header(line: &str) -> Function {
    let at = line.find(" @").map_or(0, |i| i + 2);
    let rest = &line[at..];
    let (name, after) = if let Some(q) = rest.strip_prefix('"') {
        let end = q.find('"').unwrap_or(q.len());
        (&q[..end], &q[(end + 1).min(q.len())..])
    } else {
        let end = rest.find('(').unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    };
    let params_text = balanced(after).unwrap_or("");
    let params = split_top(params_text, ',')
        .into_iter()
        .filter_map(|p| {
            let p = p.trim();
            let name = p.rsplit(' ').next()?.strip_prefix('%')?;
            Some((name.trim_matches('"').to_string(), p.to_string()))
        })
        .collect();
    let dbg = line.find("!dbg !").and_then(|i| md_id(line[i + 5..].split_whitespace().next().unwrap_or("")));
    Function { name: name.to_string(), params, dbg, ..Function::default() }
}

/// The text inside the parentheses that open `s`.
fn balanced(s: &str) -> Option<&str> {
    let start = s.find('(')?;
    let mut depth = 0;
    for (i, c) in s[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[start + 1..start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Split at `sep` outside brackets, parentheses, braces and quotes.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' | '<' if !quoted => depth += 1,
            ')' | ']' | '}' | '>' if !quoted => depth -= 1,
            c if c == sep && depth == 0 && !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

fn instruction(body: &str) -> Inst {
    // Metadata attachments come last: `, !dbg !12, !tbaa !7`.
    let parts = split_top(body, ',');
    let mut keep = parts.len();
    let mut dbg = None;
    let mut loop_md = None;
    while keep > 0 {
        let p = parts[keep - 1].trim();
        let mut words = p.split_whitespace();
        let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else { break };
        if !key.starts_with('!') || !value.starts_with('!') {
            break;
        }
        match key {
            "!dbg" => dbg = md_id(value),
            "!llvm.loop" => loop_md = md_id(value),
            _ => {}
        }
        keep -= 1;
    }
    let text = parts[..keep].join(",");
    let (result, rhs) = match text.split_once(" = ") {
        Some((lhs, rhs)) if lhs.trim_start().starts_with('%') => {
            (Some(lhs.trim().trim_start_matches('%').trim_matches('"').to_string()), rhs.trim())
        }
        _ => (None, text.trim()),
    };
    let rhs = ["tail ", "musttail ", "notail "].iter().fold(rhs, |r, p| r.strip_prefix(p).unwrap_or(r));
    let opcode = rhs.split_whitespace().next().unwrap_or("").to_string();
    let operands = value_names(&rhs[opcode.len()..]);
    let ty = result_type(&opcode, &rhs[opcode.len()..]);
    Inst { result, opcode, text: rhs.to_string(), operands, ty, dbg, loop_md }
}

/// Every `%name` in `s`, in order.
fn value_names(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if bytes.get(i + 1) == Some(&b'"') {
                let rest = &s[i + 2..];
                let end = rest.find('"').unwrap_or(rest.len());
                out.push(rest[..end].to_string());
                i += end + 3;
                continue;
            }
            let len =
                s[i + 1..].find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-'))).unwrap_or(s.len() - i - 1);
            if len > 0 {
                out.push(s[i + 1..i + 1 + len].to_string());
            }
            i += len + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Flags that may stand between an opcode and its type.
const FLAGS: &[&str] = &[
    "nuw", "nsw", "exact", "disjoint", "nneg", "samesign", "fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "inbounds",
    "nusw", "volatile", "atomic",
];

fn result_type(opcode: &str, rest: &str) -> String {
    let first_type = |s: &str| -> String {
        let mut words = s.split_whitespace().skip_while(|w| FLAGS.contains(w));
        match words.next() {
            Some(w) if w.starts_with('<') => {
                // A vector: `<2 x double>`.
                let start = s.find('<').unwrap_or(0);
                s[start..].find('>').map_or(String::new(), |e| s[start..start + e + 1].to_string())
            }
            Some(w) => w.trim_end_matches(',').to_string(),
            None => String::new(),
        }
    };
    match opcode {
        "add" | "sub" | "mul" | "shl" | "lshr" | "ashr" | "and" | "or" | "xor" | "udiv" | "sdiv" | "urem" | "srem" | "fadd" | "fsub"
        | "fmul" | "fdiv" | "frem" | "fneg" | "phi" | "load" | "freeze" => first_type(rest),
        "sext" | "zext" | "trunc" | "fptrunc" | "fpext" | "fptoui" | "fptosi" | "uitofp" | "sitofp" | "ptrtoint" | "inttoptr"
        | "bitcast" | "addrspacecast" => rest.rsplit(" to ").next().unwrap_or("").trim().to_string(),
        "icmp" | "fcmp" => "i1".to_string(),
        "getelementptr" | "alloca" => "ptr".to_string(),
        "select" => split_top(rest, ',').get(1).map_or(String::new(), |s| first_type(s)),
        "call" => {
            let before = rest.split(" @").next().unwrap_or("");
            first_type(before.rsplit(' ').next().unwrap_or(""))
        }
        _ => String::new(),
    }
}

/// One record per value: `#dbg_value(!DIArgList(i64 %a, i64 %b), !7, ...)`
/// binds both `a` and `b` to `!7`.
fn dbg_records(record: &str) -> Vec<DbgRecord> {
    let Some((kind, args)) = record.split_once('(') else { return vec![] };
    if !matches!(kind, "value" | "declare" | "assign") {
        return vec![];
    }
    let args = split_top(args, ',');
    let (Some(first), Some(variable)) = (args.first(), args.get(1).and_then(|v| md_id(v))) else { return vec![] };
    let first = first.trim();
    let values: Vec<&str> = match first.strip_prefix("!DIArgList") {
        Some(list) => balanced(list).map(|l| split_top(l, ',')).unwrap_or_default(),
        None => vec![first],
    };
    values
        .into_iter()
        .filter_map(|v| v.trim().rsplit(' ').next())
        .map(|v| DbgRecord { declare: kind == "declare", value: v.trim_start_matches('%').trim_matches('"').to_string(), variable })
        .collect()
}

fn metadata(line: &str) -> Option<(u32, Node)> {
    let (id, rest) = line.split_once(" = ")?;
    let id = md_id(id)?;
    let rest = rest.trim().trim_start_matches("distinct ").trim();
    let rest = rest.strip_prefix('!')?;
    let (kind, body) = match rest.find('(') {
        Some(open) if !rest.starts_with('{') => (&rest[..open], balanced(&rest[open..]).unwrap_or("")),
        _ => ("", rest.trim_start_matches('{').trim_end_matches('}')),
    };
    let fields = split_top(body, ',')
        .into_iter()
        .map(|f| match f.split_once(": ") {
            Some((k, v)) if !kind.is_empty() => (k.trim().to_string(), v.trim().to_string()),
            _ => (String::new(), f.trim().to_string()),
        })
        .collect();
    Some((id, Node { kind: kind.to_string(), fields }))
}

impl Module {
    pub(crate) fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// A debug location with its inlined-at chain, innermost first.
    pub(crate) fn location(&self, id: u32) -> Vec<SourcePos> {
        let mut out = Vec::new();
        let mut next = Some(id);
        while let Some(id) = next.take() {
            let Some(n) = self.metadata.get(&id).filter(|n| n.kind == "DILocation") else { break };
            out.push(SourcePos {
                file: n.id("scope").map(|s| self.file_of(s)).unwrap_or_default(),
                line: n.num("line").unwrap_or(0) as u32,
                col: n.num("column").unwrap_or(0) as u32,
            });
            next = n.id("inlinedAt");
            if out.len() > 64 {
                break;
            }
        }
        out
    }

    /// The file a scope (subprogram, lexical block) belongs to.
    fn file_of(&self, scope: u32) -> String {
        let mut id = Some(scope);
        for _ in 0..64 {
            let Some(n) = id.and_then(|i| self.metadata.get(&i)) else { break };
            if n.kind == "DIFile" {
                return n.string("filename").unwrap_or("").to_string();
            }
            id = n.id("file").or_else(|| n.id("scope"));
        }
        String::new()
    }

    pub(crate) fn variable(&self, id: u32) -> Option<Variable> {
        let n = self.metadata.get(&id).filter(|n| n.kind == "DILocalVariable")?;
        Some(Variable {
            name: n.string("name").unwrap_or("").to_string(),
            line: n.num("line").unwrap_or(0) as u32,
            arg: n.num("arg").map(|a| a as u32),
            ty: n.id("type"),
            scope: n.id("scope"),
        })
    }

    /// The `line:` of a metadata node (a subprogram's first line).
    pub(crate) fn line_of(&self, id: u32) -> Option<u32> {
        self.metadata.get(&id).and_then(|n| n.num("line")).map(|l| l as u32)
    }

    /// Every parameter whose scope is `subprogram`, in order.
    pub(crate) fn parameters(&self, subprogram: u32) -> Vec<Variable> {
        let mut vars: Vec<Variable> =
            self.metadata.keys().filter_map(|&id| self.variable(id)).filter(|v| v.arg.is_some() && v.scope == Some(subprogram)).collect();
        vars.sort_by_key(|v| v.arg);
        vars.dedup_by_key(|v| v.arg);
        vars
    }

    /// The type under typedefs and cv-qualifiers.
    fn underlying(&self, ty: u32) -> Option<&Node> {
        let mut id = ty;
        for _ in 0..32 {
            let n = self.metadata.get(&id)?;
            let tag = n.get("tag").unwrap_or("");
            let transparent = n.kind == "DIDerivedType"
                && matches!(
                    tag,
                    "DW_TAG_typedef" | "DW_TAG_const_type" | "DW_TAG_volatile_type" | "DW_TAG_restrict_type" | "DW_TAG_atomic_type"
                );
            match n.id("baseType") {
                Some(base) if transparent => id = base,
                _ => return Some(n),
            }
        }
        None
    }

    /// How the source spells a type: the outermost name (`size_t`, `Params`).
    pub(crate) fn type_name(&self, ty: u32) -> String {
        let mut id = ty;
        for _ in 0..32 {
            let Some(n) = self.metadata.get(&id) else { break };
            if let Some(name) = n.string("name") {
                return name.to_string();
            }
            match n.id("baseType") {
                Some(b) if n.get("tag") != Some("DW_TAG_pointer_type") => id = b,
                _ => break,
            }
        }
        match self.metadata.get(&ty).and_then(|n| n.get("tag")) {
            Some("DW_TAG_array_type") => "array".into(),
            Some("DW_TAG_pointer_type") => "pointer".into(),
            _ => "?".into(),
        }
    }

    /// Size in bytes of a type.
    pub(crate) fn type_bytes(&self, ty: u32) -> Option<u64> {
        self.underlying(ty).and_then(|n| n.num("size")).map(|bits| bits / 8)
    }

    /// A 64-bit integer type (`long`, `size_t`, `int64_t`, ...).
    pub(crate) fn is_64bit_integer(&self, ty: u32) -> bool {
        self.underlying(ty).is_some_and(|n| {
            n.kind == "DIBasicType"
                && n.num("size") == Some(64)
                && n.get("encoding").is_some_and(|e| matches!(e, "DW_ATE_signed" | "DW_ATE_unsigned"))
        })
    }

    /// Where a `!DILocation` is, its file as `directory/filename` (the name
    /// alone where it is absolute or has no directory); None on line 0.
    pub(crate) fn full_position(&self, id: u32) -> Option<SourcePos> {
        let loc = self.metadata.get(&id).filter(|n| n.kind == "DILocation")?;
        let line = loc.num("line")? as u32;
        let col = loc.num("column").unwrap_or(0) as u32;
        let scope = self.metadata.get(&loc.id("scope")?)?;
        let file = self.metadata.get(&scope.id("file")?).filter(|n| n.kind == "DIFile")?;
        let name = unquote(file.get("filename")?);
        let dir = file.get("directory").map(unquote).unwrap_or_default();
        let file = if name.starts_with('/') || dir.is_empty() { name } else { format!("{dir}/{name}") };
        (line > 0).then_some(SourcePos { file, line, col })
    }

    /// A loop ID holds `!{!"llvm.loop.unroll.disable"}`.
    pub(crate) fn disables_unroll(&self, loop_md: u32) -> bool {
        let Some(n) = self.metadata.get(&loop_md).filter(|n| n.kind.is_empty()) else { return false };
        n.fields.iter().filter_map(|(_, v)| md_id(v)).any(|op| {
            self.metadata
                .get(&op)
                .is_some_and(|m| m.kind.is_empty() && m.fields.len() == 1 && m.fields[0].1 == "!\"llvm.loop.unroll.disable\"")
        })
    }

    /// A loop ID's start location: its first `!DILocation` operand.
    pub(crate) fn loop_start(&self, loop_md: u32) -> Option<SourcePos> {
        let n = self.metadata.get(&loop_md).filter(|n| n.kind.is_empty())?;
        n.fields
            .iter()
            .filter_map(|(_, v)| md_id(v))
            .filter(|&op| op != loop_md)
            .find(|op| self.metadata.get(op).is_some_and(|n| n.kind == "DILocation"))
            .and_then(|op| self.full_position(op))
    }

    /// The source lines a loop spans, from its `!llvm.loop` node.
    pub(crate) fn loop_lines(&self, loop_md: u32) -> Option<(u32, u32)> {
        let n = self.metadata.get(&loop_md)?;
        let lines: Vec<u32> = n
            .fields
            .iter()
            .filter_map(|(_, v)| md_id(v))
            .filter_map(|id| self.metadata.get(&id).filter(|n| n.kind == "DILocation"))
            .filter_map(|n| n.num("line").map(|l| l as u32))
            .collect();
        Some((*lines.first()?, *lines.get(1).unwrap_or(&lines[0])))
    }
}

impl Inst {
    /// The function a direct call calls (without `@`); None for an
    /// indirect call (its first global is an argument, not followed by `(`).
    pub(crate) fn callee(&self) -> Option<&str> {
        if !matches!(self.opcode.as_str(), "call" | "invoke") {
            return None;
        }
        let at = self.text.find(" @")? + 2;
        let rest = &self.text[at..];
        let (name, after) = match rest.strip_prefix('"') {
            Some(q) => {
                let end = q.find('"')?;
                (&q[..end], &q[end + 1..])
            }
            None => {
                let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || b"$._-".contains(b)).count();
                (&rest[..len], &rest[len..])
            }
        };
        (!name.is_empty() && after.starts_with('(')).then_some(name)
    }

    /// A call's arguments as written (`double noundef 2.000000e+00`).
    pub(crate) fn call_args(&self) -> Vec<&str> {
        let Some(callee) = self.callee() else { return vec![] };
        let after = self.text.find(callee).map_or("", |i| &self.text[i + callee.len()..]);
        balanced(after).map(|a| split_top(a, ',').into_iter().map(str::trim).collect()).unwrap_or_default()
    }
}

impl Function {
    /// Variables each value is bound to by `#dbg_value`/`#dbg_declare`.
    pub(crate) fn variables_of(&self, module: &Module) -> HashMap<String, Vec<Variable>> {
        let mut out: HashMap<String, Vec<Variable>> = HashMap::new();
        for r in &self.records {
            if let Some(v) = module.variable(r.variable) {
                let list = out.entry(r.value.clone()).or_default();
                if !list.iter().any(|x| x.name == v.name && x.line == v.line) {
                    list.push(v);
                }
            }
        }
        out
    }

    /// Block names of each block's successors.
    pub(crate) fn successors(&self, b: usize) -> Vec<String> {
        let Some(term) = self.blocks[b].insts.last() else { return vec![] };
        if !matches!(term.opcode.as_str(), "br" | "switch" | "indirectbr" | "invoke" | "callbr") {
            return vec![];
        }
        term.text
            .split("label ")
            .skip(1)
            .filter_map(|s| s.trim_start().strip_prefix('%'))
            .map(|s| {
                let s = s.trim_start_matches('"');
                s.split([',', ' ', ']', '"']).next().unwrap_or("").to_string()
            })
            .collect()
    }
}

/// 32-bit registers a value of this IR type takes (pointers in the private
/// and LDS address spaces are 32-bit on AMDGPU).
pub(crate) fn registers_of_type(ty: &str) -> u32 {
    let ty = ty.trim();
    if let Some(inner) = ty.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
        let (n, elem) = inner.split_once(" x ").unwrap_or(("1", inner));
        let n: u32 = n.trim().parse().unwrap_or(1);
        let bits = scalar_bits(elem.trim());
        return (n * bits).div_ceil(32);
    }
    scalar_bits(ty).div_ceil(32)
}

fn scalar_bits(ty: &str) -> u32 {
    match ty {
        "i1" => 1,
        "i8" => 8,
        "i16" | "half" | "bfloat" => 16,
        "i32" | "float" => 32,
        "i64" | "double" => 64,
        "i128" | "fp128" => 128,
        t if t.starts_with("ptr addrspace(3)") || t.starts_with("ptr addrspace(5)") => 32,
        t if t.starts_with("ptr") => 64,
        t => t.strip_prefix('i').and_then(|b| b.parse().ok()).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"
%struct.P = type { [16 x double], i32 }

define protected amdgpu_kernel void @_Z1kPdl(ptr addrspace(1) noundef %out.coerce, i64 noundef %n, ptr addrspace(4) noundef byref(%struct.P) align 8 %0) local_unnamed_addr #0 !dbg !10 {
entry:
    #dbg_value(i64 %n, !20, !DIExpression(), !30)
  %1 = tail call i32 @llvm.amdgcn.workitem.id.x(), !dbg !31
  %idx = zext nneg i32 %1 to i64, !dbg !31
  %mul = mul nsw i64 %idx, %n, !dbg !32
    #dbg_value(!DIArgList(i64 %mul, i64 %idx), !21, !DIExpression(), !30)
  %gep = getelementptr inbounds double, ptr addrspace(1) %out.coerce, i64 %mul, !dbg !33
  %v = load double, ptr addrspace(1) %gep, align 8, !dbg !33, !tbaa !40
  %s = select i1 true, double %v, double 0.000000e+00
  %h = alloca [64 x i32], align 16, addrspace(5)
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %i = phi i32 [ 0, %entry ], [ %inc, %for.body ]
  %inc = add nuw nsw i32 %i, 1, !dbg !34
  %cmp = icmp ult i32 %inc, 8
  br i1 %cmp, label %for.body, label %exit, !dbg !34, !llvm.loop !50

exit:
  store double %v, ptr addrspace(1) %out.coerce, align 8
  ret void
}

!10 = distinct !DISubprogram(name: "k", linkageName: "_Z1kPdl", scope: !11, file: !11, line: 3, type: !12, unit: !0)
!11 = !DIFile(filename: "k.hip", directory: "/w")
!12 = !DISubroutineType(types: !{null})
!13 = distinct !DISubprogram(name: "sq", scope: !14, file: !14, line: 9, unit: !0)
!14 = !DIFile(filename: "inc/h.h", directory: "/w")
!20 = !DILocalVariable(name: "n", arg: 2, scope: !10, file: !11, line: 3, type: !60)
!21 = !DILocalVariable(name: "pos", scope: !10, file: !11, line: 5, type: !60)
!22 = !DILocalVariable(name: "p", arg: 3, scope: !10, file: !11, line: 3, type: !63)
!30 = !DILocation(line: 0, scope: !10)
!31 = !DILocation(line: 4, column: 7, scope: !13, inlinedAt: !35)
!32 = !DILocation(line: 5, column: 20, scope: !10)
!33 = !DILocation(line: 6, column: 3, scope: !36)
!34 = !DILocation(line: 7, column: 3, scope: !10)
!35 = !DILocation(line: 4, column: 12, scope: !10)
!36 = distinct !DILexicalBlock(scope: !10, file: !11, line: 6, column: 1)
!50 = distinct !{!50, !51, !52, !53}
!51 = !DILocation(line: 7, column: 3, scope: !10)
!52 = !DILocation(line: 8, column: 5, scope: !10)
!53 = !{!"llvm.loop.mustprogress"}
!60 = !DIDerivedType(tag: DW_TAG_typedef, name: "size_t", file: !11, line: 1, baseType: !61)
!61 = !DIBasicType(name: "unsigned long", size: 64, encoding: DW_ATE_unsigned)
!63 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "P", file: !11, line: 1, size: 1088, elements: !{})
"#;

    #[test]
    fn functions_blocks_and_instructions_are_read() {
        let m = parse(IR);
        let f = m.function("_Z1kPdl").unwrap();
        assert_eq!(f.params.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["out.coerce", "n", "0"]);
        assert_eq!(f.dbg, Some(10));
        assert_eq!(f.blocks.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["entry", "for.body", "exit"]);
        let mul = &f.blocks[0].insts[2];
        assert_eq!((mul.result.as_deref(), mul.opcode.as_str(), mul.ty.as_str()), (Some("mul"), "mul", "i64"));
        assert_eq!(mul.operands, ["idx", "n"]);
        assert_eq!(f.blocks[0].insts[1].ty, "i64", "zext's result type");
        assert_eq!(f.blocks[0].insts[0].ty, "i32", "a call's return type");
        assert_eq!(f.blocks[0].insts[0].callee(), Some("llvm.amdgcn.workitem.id.x"));
        let call =
            instruction("%c = call contract noundef double @_ZL3powdd(double noundef %40, double noundef 2.000000e+00) #25, !dbg !7");
        assert_eq!((call.callee(), call.call_args()), (Some("_ZL3powdd"), vec!["double noundef %40", "double noundef 2.000000e+00"]));
        assert_eq!(call.dbg, Some(7));
        assert_eq!(instruction("call void %fp(ptr noundef @g)").callee(), None, "indirect");
        assert_eq!(instruction("%s = call %struct.S @make(i32 1)").callee(), Some("make"));
        assert_eq!(instruction("call i32 (ptr, ...) @printf(ptr @fmt)").callee(), Some("printf"));
        assert_eq!(f.blocks[0].insts[4].ty, "double", "a load's type");
        assert_eq!(f.blocks[0].insts[5].ty, "double", "a select's type");
        assert_eq!(f.blocks[0].insts[6].text, "alloca [64 x i32], align 16, addrspace(5)");
        assert_eq!(f.successors(1), ["for.body", "exit"]);
        assert_eq!(f.successors(0), ["for.body"]);
        assert_eq!(f.blocks[1].insts[3].loop_md, Some(50));
        assert_eq!(m.loop_lines(50), Some((7, 8)));
    }

    #[test]
    fn locations_variables_and_types_come_from_the_debug_info() {
        let m = parse(IR);
        let f = m.function("_Z1kPdl").unwrap();
        let chain = m.location(f.blocks[0].insts[0].dbg.unwrap());
        assert_eq!(chain.iter().map(|p| (p.file.as_str(), p.line, p.col)).collect::<Vec<_>>(), [("inc/h.h", 4, 7), ("k.hip", 4, 12)]);
        assert_eq!(m.location(33)[0].file, "k.hip", "through a lexical block");
        let vars = f.variables_of(&m);
        assert_eq!((vars["mul"][0].name.as_str(), vars["idx"][0].name.as_str()), ("pos", "pos"));
        let n = &vars["n"][0];
        assert_eq!((n.arg, m.type_name(n.ty.unwrap()).as_str()), (Some(2), "size_t"));
        assert!(m.is_64bit_integer(n.ty.unwrap()));
        let params = m.parameters(10);
        assert_eq!(params.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["n", "p"]);
        let p = &params[1];
        assert!(!m.is_64bit_integer(p.ty.unwrap()));
        assert_eq!((m.type_bytes(p.ty.unwrap()), m.type_name(p.ty.unwrap()).as_str()), (Some(136), "P"));
    }

    #[test]
    fn register_counts_follow_the_type() {
        assert_eq!(registers_of_type("double"), 2);
        assert_eq!(registers_of_type("float"), 1);
        assert_eq!(registers_of_type("<4 x float>"), 4);
        assert_eq!(registers_of_type("ptr addrspace(1)"), 2);
        assert_eq!(registers_of_type("ptr addrspace(5)"), 1);
        assert_eq!(registers_of_type("i16"), 1);
    }
}
