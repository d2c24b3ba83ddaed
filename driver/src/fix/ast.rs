//! Source ranges from clang's own AST: the device-side JSON dump
//! (`-Xclang -ast-dump=json -fsyntax-only`, the unit's flags), one run per
//! function name (`-ast-dump-filter`), read into a small tree of the nodes
//! the edits need.
//!
//! clang's JSON leaves out a location's file when it is the one printed
//! just before, so locations are read in the order clang wrote them, with
//! the last file carried along (a `DeserializeSeed` over the text).
//! Positions are byte offsets into the file; a location inside a macro
//! expansion keeps the expansion's position and says so, so no edit ever
//! lands inside a macro by accident, and carries where the token is spelled
//! (the macro's definition, or an argument of its invocation) for the edits
//! that mean to. File names are made canonical, so that a header is one
//! file however the includes reached it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::gpu::compile::Unit;

#[derive(Debug, thiserror::Error)]
pub(crate) enum AstError {
    #[error("cannot run clang for the AST of {file}: {detail}")]
    Run { file: String, detail: String },
    #[error("clang could not parse {file} for its AST: {first_error}")]
    Parse { file: String, first_error: String },
    #[error("clang's AST dump of {file} is not the JSON regtune reads: {detail}")]
    Json { file: String, detail: String },
}

/// A position in a file, as clang's JSON gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loc {
    pub file: Arc<str>,
    pub offset: usize,
    pub tok_len: usize,
    /// Spelled inside a macro expansion (`offset` is the expansion's).
    pub in_macro: bool,
    /// In a macro expansion, the token comes from an argument of the invocation.
    pub macro_arg: bool,
    /// In a macro expansion, where the token is spelled.
    pub spelling: Option<Box<Loc>>,
}

impl Loc {
    /// The byte just past this location's token.
    pub(crate) fn token_end(&self) -> usize {
        self.offset + self.tok_len
    }

    /// Where the token's text is: its spelling in a macro, else itself.
    pub(crate) fn spelled(&self) -> &Loc {
        self.spelling.as_deref().unwrap_or(self)
    }
}

/// A declaration another node refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ref {
    pub id: String,
    pub kind: String,
    pub name: String,
}

/// One AST node, with what the edits read. Absent children (a `for`
/// without an increment) are nodes with an empty `kind`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub id: String,
    pub kind: String,
    /// The name's location (declarations).
    pub loc: Option<Loc>,
    pub begin: Option<Loc>,
    pub end: Option<Loc>,
    pub name: Option<String>,
    pub mangled_name: Option<String>,
    /// `type.qualType`.
    pub ty: Option<String>,
    /// `type.desugaredQualType`, where clang gives one (`unsigned long` for `size_t`).
    pub desugared: Option<String>,
    pub value: Option<String>,
    pub opcode: Option<String>,
    pub cast_kind: Option<String>,
    pub storage_class: Option<String>,
    pub referenced: Option<Ref>,
    pub is_implicit: bool,
    /// A template parameter's `typename` or `class`.
    pub tag_used: Option<String>,
    /// A template parameter pack (`typename... Ts`).
    pub is_parameter_pack: bool,
    /// A template argument that is a pack's arguments (its `inner`).
    pub is_pack: bool,
    pub inner: Vec<Node>,
}

impl Node {
    /// This node and every node below it, depth first, in source order.
    pub(crate) fn walk(&self) -> Vec<&Node> {
        fn collect<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
            out.push(n);
            for c in &n.inner {
                collect(c, out);
            }
        }
        let mut out = Vec::new();
        collect(self, &mut out);
        out
    }

    /// Byte range `[begin, end)` in `file`, when both ends lie in it
    /// outside any macro expansion.
    pub(crate) fn span_in(&self, file: &str) -> Option<(usize, usize)> {
        let (b, e) = (self.begin.as_ref()?, self.end.as_ref()?);
        (&*b.file == file && &*e.file == file && !b.in_macro && !e.in_macro).then(|| (b.offset, e.token_end()))
    }

    /// The text both ends are spelled in, in or out of a macro: (file,
    /// [begin, end)), when they are spelled in one file in that order.
    pub(crate) fn spelled_span(&self) -> Option<(&Arc<str>, usize, usize)> {
        let (b, e) = (self.begin.as_ref()?.spelled(), self.end.as_ref()?.spelled());
        (b.file == e.file && b.offset <= e.offset).then(|| (&b.file, b.offset, e.token_end()))
    }

    /// The node below implicit casts and parentheses.
    pub(crate) fn ignoring_implicit(&self) -> &Node {
        let mut n = self;
        while matches!(n.kind.as_str(), "ImplicitCastExpr" | "ParenExpr" | "ExprWithCleanups" | "ConstantExpr" | "MaterializeTemporaryExpr")
            && n.inner.len() == 1
        {
            n = &n.inner[0];
        }
        n
    }

    pub(crate) fn is_placeholder(&self) -> bool {
        self.kind.is_empty()
    }
}

/// Every top-level declaration whose qualified name contains one of `names`,
/// from the device side of `unit` (the same flags as the build).
pub(crate) fn dump(unit: &Unit<'_>, names: &[String]) -> Result<Vec<Node>, AstError> {
    let file = unit.source.display().to_string();
    let mut nodes = Vec::new();
    for name in names {
        let mut cmd = unit.device_command().map_err(|e| AstError::Run { file: file.clone(), detail: e.to_string() })?;
        cmd.args(["-fsyntax-only", "-Xclang", "-ast-dump=json", "-Xclang"]).arg(format!("-ast-dump-filter={name}")).arg(unit.source);
        let out = cmd.output().map_err(|e| AstError::Run { file: file.clone(), detail: e.to_string() })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first_error = stderr.lines().find(|l| l.contains("error")).unwrap_or("clang failed").trim().to_string();
            return Err(AstError::Parse { file, first_error });
        }
        let text = String::from_utf8_lossy(&out.stdout);
        nodes.extend(parse(&text).map_err(|detail| AstError::Json { file: file.clone(), detail })?);
    }
    let mut names = HashMap::new();
    for n in &mut nodes {
        canonical_names(n, &mut names);
    }
    Ok(nodes)
}

/// Every location's file by its canonical path (clang names a file as the
/// include reached it: `./inc/k.h`, `../common/k.h`, relative to the
/// current directory); names that are no file (`<built-in>`) stay.
fn canonical_names(node: &mut Node, names: &mut HashMap<Arc<str>, Arc<str>>) {
    fn fix(loc: &mut Loc, names: &mut HashMap<Arc<str>, Arc<str>>) {
        loc.file = names.entry(loc.file.clone()).or_insert_with(|| canonical(&loc.file)).clone();
        if let Some(s) = loc.spelling.as_deref_mut() {
            fix(s, names);
        }
    }
    for loc in [&mut node.loc, &mut node.begin, &mut node.end].into_iter().flatten() {
        fix(loc, names);
    }
    for c in &mut node.inner {
        canonical_names(c, names);
    }
}

/// A file name as one canonical path; the name itself when it is no file.
pub(crate) fn canonical(name: &str) -> Arc<str> {
    match std::fs::canonicalize(name) {
        Ok(p) => Arc::from(p.to_string_lossy().as_ref()),
        Err(_) => Arc::from(name),
    }
}

/// The nodes of a dump: one JSON object per declaration, back to back.
pub(crate) fn parse(text: &str) -> Result<Vec<Node>, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut state = State::default();
    let mut nodes = Vec::new();
    while de.end().is_err() {
        nodes.push(NodeSeed { state: &mut state }.deserialize(&mut de).map_err(|e| e.to_string())?);
    }
    Ok(nodes)
}

/// The file clang printed last: a location without `"file"` is in it.
#[derive(Default)]
struct State {
    file: Arc<str>,
}

struct NodeSeed<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AST node")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut n = Node::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => n.id = map.next_value()?,
                "kind" => n.kind = map.next_value()?,
                "name" => n.name = Some(map.next_value()?),
                "mangledName" => n.mangled_name = Some(map.next_value()?),
                "value" => n.value = Some(map.next_value::<serde_json::Value>()?.to_string().trim_matches('"').to_string()),
                "opcode" => n.opcode = Some(map.next_value()?),
                "castKind" => n.cast_kind = Some(map.next_value()?),
                "storageClass" => n.storage_class = Some(map.next_value()?),
                "isImplicit" => n.is_implicit = map.next_value()?,
                "type" => (n.ty, n.desugared) = map.next_value::<TypeField>()?.0,
                "tagUsed" => n.tag_used = Some(map.next_value()?),
                "isParameterPack" => n.is_parameter_pack = map.next_value()?,
                "isPack" => n.is_pack = map.next_value()?,
                "referencedDecl" => n.referenced = Some(map.next_value::<RefField>()?.0),
                "loc" => n.loc = map.next_value_seed(LocSeed { state: self.state })?,
                "range" => {
                    let (b, e) = map.next_value_seed(RangeSeed { state: self.state })?;
                    n.begin = b;
                    n.end = e;
                }
                "inner" => n.inner = map.next_value_seed(InnerSeed { state: self.state })?,
                // Anything else may still carry locations: read it for them.
                _ => map.next_value_seed(AnySeed { state: self.state })?,
            }
        }
        Ok(n)
    }
}

struct InnerSeed<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for InnerSeed<'_> {
    type Value = Vec<Node>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<Node>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for InnerSeed<'_> {
    type Value = Vec<Node>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of AST nodes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Node>, A::Error> {
        let mut out = Vec::new();
        while let Some(n) = seq.next_element_seed(NodeSeed { state: &mut *self.state })? {
            out.push(n);
        }
        Ok(out)
    }
}

/// `{"qualType": ..., "desugaredQualType": ...}`.
struct TypeField((Option<String>, Option<String>));

impl<'de> serde::Deserialize<'de> for TypeField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let field = |k: &str| v.get(k).and_then(|t| t.as_str()).map(str::to_string);
        Ok(TypeField((field("qualType"), field("desugaredQualType"))))
    }
}

/// `{"id": ..., "kind": ..., "name": ...}`.
struct RefField(Ref);

impl<'de> serde::Deserialize<'de> for RefField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string();
        Ok(RefField(Ref { id: s("id"), kind: s("kind"), name: s("name") }))
    }
}

/// `{"begin": LOC, "end": LOC}`.
struct RangeSeed<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for RangeSeed<'_> {
    type Value = (Option<Loc>, Option<Loc>);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RangeSeed<'_> {
    type Value = (Option<Loc>, Option<Loc>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a source range")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut begin, mut end) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "begin" => begin = map.next_value_seed(LocSeed { state: self.state })?,
                "end" => end = map.next_value_seed(LocSeed { state: self.state })?,
                _ => map.next_value_seed(AnySeed { state: self.state })?,
            }
        }
        Ok((begin, end))
    }
}

/// A location: a bare one, or `{"spellingLoc": ..., "expansionLoc": ...}`
/// for a token from a macro (the expansion's position is kept). `{}` (an
/// invalid location) is `None`.
struct LocSeed<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for LocSeed<'_> {
    type Value = Option<Loc>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<Loc>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LocSeed<'_> {
    type Value = Option<Loc>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a source location")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Loc>, A::Error> {
        let mut bare = Bare::default();
        let (mut spelling, mut expansion) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "spellingLoc" => spelling = map.next_value_seed(LocSeed { state: self.state })?,
                "expansionLoc" => expansion = map.next_value_seed(LocSeed { state: self.state })?,
                _ => bare.field(&key, &mut map)?,
            }
        }
        if let Some(mut e) = expansion {
            e.in_macro = true;
            e.spelling = spelling.map(Box::new);
            return Ok(Some(e));
        }
        Ok(bare.finish(self.state))
    }
}

/// The fields of a bare location, in the order clang writes them.
#[derive(Default)]
struct Bare {
    offset: Option<usize>,
    file: Option<String>,
    tok_len: usize,
    macro_arg: bool,
}

impl Bare {
    fn field<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "offset" => self.offset = Some(map.next_value()?),
            "file" => self.file = Some(map.next_value()?),
            "tokLen" => self.tok_len = map.next_value()?,
            "isMacroArgExpansion" => self.macro_arg = map.next_value()?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn finish(self, state: &mut State) -> Option<Loc> {
        if let Some(f) = self.file {
            state.file = Arc::from(f);
        }
        let offset = self.offset?;
        Some(Loc { file: state.file.clone(), offset, tok_len: self.tok_len, in_macro: false, macro_arg: self.macro_arg, spelling: None })
    }
}

/// Any other value: skipped, except that a location inside it still
/// moves the carried file along.
struct AnySeed<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for AnySeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(AnySeed { state: &mut *self.state })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut bare = Bare::default();
        let mut is_location = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "offset" | "file" | "tokLen" | "line" | "col" => {
                    is_location |= key == "offset";
                    bare.field(&key, &mut map)?;
                }
                "spellingLoc" | "expansionLoc" => {
                    map.next_value_seed(LocSeed { state: self.state })?;
                }
                _ => map.next_value_seed(AnySeed { state: self.state })?,
            }
        }
        if is_location {
            bare.finish(self.state);
        }
        Ok(())
    }
}

/// The line (1-based) and column (1-based, in bytes) of `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() as u32 + 1;
    (line, col)
}

/// The byte offset of a 1-based line and column.
pub(crate) fn offset_of(text: &str, line: u32, col: u32) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let offset = start + col.checked_sub(1)? as usize;
    (offset <= text.len()).then_some(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shortened from clang 22's dump: the second location repeats no file.
    const DUMP: &str = r#"{
      "id": "0x1", "kind": "FunctionDecl",
      "loc": {"offset": 30, "file": "k.hip", "line": 3, "col": 17, "tokLen": 1},
      "range": {"begin": {"spellingLoc": {"offset": 705, "file": "/h/wrapper.h", "line": 23, "col": 20, "tokLen": 13,
                                          "includedFrom": {"file": "<built-in>"}},
                          "expansionLoc": {"offset": 14, "file": "k.hip", "line": 3, "col": 1, "tokLen": 10}},
                "end": {"offset": 80, "line": 5, "col": 1, "tokLen": 1}},
      "name": "k", "mangledName": "_Z1kPf",
      "type": {"qualType": "void (float *)"},
      "inner": [
        {"id": "0x2", "kind": "ParmVarDecl", "loc": {"offset": 39, "col": 26, "tokLen": 1},
         "range": {"begin": {"offset": 32, "col": 19, "tokLen": 5}, "end": {"offset": 39, "col": 26, "tokLen": 1}},
         "name": "x", "type": {"qualType": "float *"}},
        {"id": "0x3", "kind": "CompoundStmt", "range": {"begin": {"offset": 42, "col": 29, "tokLen": 1}, "end": {"offset": 80, "line": 5, "col": 1, "tokLen": 1}},
         "inner": [{}, {"id": "0x4", "kind": "DeclRefExpr", "range": {"begin": {"offset": 50, "tokLen": 1}, "end": {"offset": 50, "tokLen": 1}},
                        "referencedDecl": {"id": "0x2", "kind": "ParmVarDecl", "name": "x", "type": {"qualType": "float *"}}}]}
      ]
    }
    {"id": "0x9", "kind": "FunctionDecl", "loc": {"offset": 7, "file": "other.h", "tokLen": 1}, "range": {"begin": {"offset": 0, "tokLen": 4}, "end": {"offset": 9, "tokLen": 1}}, "name": "q"}
    "#;

    #[test]
    fn locations_carry_the_last_file_and_macros_keep_their_expansion() {
        let nodes = parse(DUMP).unwrap();
        assert_eq!(nodes.len(), 2);
        let k = &nodes[0];
        assert_eq!(k.mangled_name.as_deref(), Some("_Z1kPf"));
        let begin = k.begin.as_ref().unwrap();
        assert_eq!((&*begin.file, begin.offset, begin.in_macro), ("k.hip", 14, true));
        assert_eq!(&*k.end.as_ref().unwrap().file, "k.hip");
        let x = &k.inner[0];
        assert_eq!(x.span_in("k.hip"), Some((32, 40)));
        assert!(k.inner[1].inner[0].is_placeholder());
        assert_eq!(k.inner[1].inner[1].referenced.as_ref().unwrap().name, "x");
        assert_eq!(&*nodes[1].begin.as_ref().unwrap().file, "other.h");
        assert_eq!(k.walk().len(), 5);
    }

    #[test]
    fn lines_and_columns_round_trip() {
        let text = "ab\ncde\n\nf";
        assert_eq!(line_col(text, 4), (2, 2));
        assert_eq!(offset_of(text, 2, 2), Some(4));
        assert_eq!(offset_of(text, 4, 1), Some(8));
    }
}
