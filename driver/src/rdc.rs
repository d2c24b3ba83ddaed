//! Relocatable device code (`-fgpu-rdc`): kernels may call device
//! functions that another translation unit defines, and only the build's
//! device link resolves (and inlines) those calls. So a unit's kernels are
//! measured from its own device compile linked with every other unit given,
//! as the build links them: [`LinkSet`] compiles each unit of one target
//! once (keeping the temps its variants start from) and says which kernels
//! still call a function no unit defines. Those are named, not measured:
//! their registers depend on code regtune was not given. How a target links
//! is its own ([`crate::gpu::Compile::device_link`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rayon::prelude::*;

use crate::gpu::compile::{self, CompileError, Compiled, Emit, Location, Temps, Variant};
use crate::gpu::resources::{self, MeasureError, Measured};
use crate::gpu::{self, Arch};
use crate::names;
use crate::output::Failure;
use crate::toolchain::Toolchain;

#[derive(Debug, thiserror::Error)]
pub(crate) enum RdcError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Measure(#[from] MeasureError),
    /// A unit that did not compile, llvm-dis or llvm-extract failing: one line.
    #[error("{0}")]
    Other(String),
}

/// Do these flags build relocatable device code? (The last of `-fgpu-rdc`
/// and `-fno-gpu-rdc` wins, as in clang.)
pub(crate) fn enabled(user_args: &[String]) -> bool {
    user_args.iter().rev().find(|a| *a == "-fgpu-rdc" || *a == "-fno-gpu-rdc").is_some_and(|a| a == "-fgpu-rdc")
}

/// With `-fgpu-rdc` among `user_args`: per target, every file compiled
/// once for the device link; none otherwise (each file is on its own).
pub(crate) fn link_sets(
    toolchain: &Toolchain,
    files: &[PathBuf],
    archs: &[Arch],
    user_args: &[String],
) -> Vec<(Arch, Result<LinkSet, Failure>)> {
    if !enabled(user_args) {
        return vec![];
    }
    let units: Vec<(&Path, &[String])> = files.iter().map(|f| (f.as_path(), user_args)).collect();
    archs.iter().map(|a| (a.clone(), LinkSet::build(toolchain, a, &units))).collect()
}

/// Where the units of a link set came from, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Given<'a> {
    /// The files of a `report` or `tune` command; `done`: what a kernel
    /// that cannot be linked is not ("reported", "tuned").
    Files { command: &'a str, done: &'a str },
    /// Every `-fgpu-rdc` unit of a compilation database (`batch`).
    CompileDb,
}

/// For the commands that do not link relocatable units (yet): the one line
/// they stop with under `-fgpu-rdc`.
pub fn unsupported(command: &str, user_args: &[String]) -> Result<(), String> {
    if enabled(user_args) {
        return Err(format!("-fgpu-rdc: `regtune {command}` does not link relocatable device code yet (report, tune and batch do)"));
    }
    Ok(())
}

/// One translation unit's `-fgpu-rdc` device compile.
pub(crate) struct Unit {
    pub user_args: Vec<String>,
    /// `object` is the unit's optimized bitcode, what the device link reads.
    pub temps: Temps,
    pub plain_seconds: f64,
    graph: CallGraph,
}

impl Unit {
    /// Its kernels, by symbol.
    pub(crate) fn kernels(&self) -> BTreeSet<String> {
        self.graph.functions.iter().filter(|(_, f)| f.kernel).map(|(name, _)| name.clone()).collect()
    }
}

/// Every unit of one target, each compiled once; the units that failed
/// keep their failure.
pub(crate) struct LinkSet {
    pub arch: Arch,
    units: Vec<(PathBuf, Result<Unit, Failure>)>,
    _dir: tempfile::TempDir,
}

impl LinkSet {
    /// Compile every unit (source, flags) for `arch`, in parallel.
    pub(crate) fn build(toolchain: &Toolchain, arch: &Arch, units: &[(&Path, &[String])]) -> Result<LinkSet, Failure> {
        let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
        let compiled = units
            .par_iter()
            .enumerate()
            .map(|(i, (source, args))| {
                let unit_dir = dir.path().join(i.to_string());
                (source.to_path_buf(), compile_unit(toolchain, arch, source, args, &unit_dir))
            })
            .collect();
        Ok(LinkSet { arch: arch.clone(), units: compiled, _dir: dir })
    }

    /// The unit compiled from `source`, or why it did not compile.
    pub(crate) fn unit(&self, source: &Path) -> Result<&Unit, Failure> {
        match self.units.iter().find(|(s, _)| s == source) {
            Some((_, Ok(unit))) => Ok(unit),
            Some((_, Err(f))) => Err(f.clone()),
            None => Err(Failure::new(format!("{} is not among the units linked for {}", source.display(), self.arch))),
        }
    }

    /// The bitcode of the units the device link adds to `source`'s (those
    /// that compiled).
    pub(crate) fn others(&self, source: &Path) -> Vec<PathBuf> {
        self.units.iter().filter(|(s, _)| s != source).filter_map(|(_, u)| u.as_ref().ok()).map(|u| u.temps.object.clone()).collect()
    }

    /// The kernels of `source` that reach a function no unit of the set
    /// defines, each with those functions (symbols).
    pub(crate) fn unresolved(&self, source: &Path) -> BTreeMap<String, Vec<String>> {
        let Ok(unit) = self.unit(source) else { return BTreeMap::new() };
        let elsewhere: BTreeSet<&String> =
            self.units.iter().filter(|(s, _)| s != source).filter_map(|(_, u)| u.as_ref().ok()).flat_map(|u| u.graph.exported()).collect();
        unit.graph
            .external_calls()
            .into_iter()
            .map(|(kernel, calls)| (kernel, calls.into_iter().filter(|c| !elsewhere.contains(c)).collect::<Vec<_>>()))
            .filter(|(_, calls)| !calls.is_empty())
            .collect()
    }

    /// One failure per kernel of `source` whose callees are not all
    /// defined, saying where they were looked for (`given`).
    pub(crate) fn unresolved_failures(&self, source: &Path, given: Given<'_>) -> Vec<Failure> {
        self.unresolved(source)
            .into_iter()
            .map(|(kernel, calls)| {
                let names: Vec<String> = calls.iter().map(|c| format!("`{}`", names::demangle(c))).collect();
                let it = if calls.len() == 1 { "it" } else { "them" };
                let (looked, done, named) = match given {
                    Given::Files { command, done } => (
                        format!(
                            "defined in none of the files given; give the files that define {it} too, as the build links them \
                             (regtune {command} {} FILE... -- -fgpu-rdc)",
                            source.display()
                        ),
                        done,
                        format!("{} for {}: ", source.display(), self.arch),
                    ),
                    // batch's line names the unit and the target already.
                    Given::CompileDb => ("defined in no -fgpu-rdc unit of the compilation database".to_string(), "tuned", String::new()),
                };
                Failure::new(format!(
                    "{named}kernel {} calls {}, {looked}; not {done}",
                    names::short_name(&names::demangle(&kernel)),
                    names.join(", "),
                ))
            })
            .collect()
    }
}

/// A relocatable unit's device link: the other units' bitcode, and the
/// kernels that are this unit's (the linked code object holds every unit's).
pub(crate) struct Link {
    pub others: Vec<PathBuf>,
    pub kernels: BTreeSet<String>,
}

impl Link {
    /// Link the unit's bitcode `own` with the other units'.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn device_link(
        &self,
        toolchain: &Toolchain,
        arch: &Arch,
        own: PathBuf,
        out: &Path,
        emit: Emit,
        user_args: &[String],
        variant: &Variant,
    ) -> Result<Compiled, CompileError> {
        let inputs: Vec<PathBuf> = std::iter::once(own).chain(self.others.iter().cloned()).collect();
        gpu::of(arch).device_link(toolchain, &inputs, out, emit, user_args, variant)
    }

    /// The unit's own kernels of a linked code object.
    pub(crate) fn own(&self, all: Vec<Measured>) -> Vec<Measured> {
        all.into_iter().filter(|m| self.kernels.contains(&m.symbol)).collect()
    }
}

/// A unit's plain build, linked: what `report` shows and where a tune
/// session starts.
pub(crate) struct Plain<'a> {
    pub unit: &'a Unit,
    /// The IR its variants compile from: the unit's, less the kernels that
    /// cannot link.
    pub pre_ir: PathBuf,
    /// The linked code object.
    pub object: PathBuf,
    pub preprocessed: Vec<u8>,
    pub measured: Vec<Measured>,
    pub locations: Vec<Location>,
    pub link: Link,
    /// The unit's compile and its link.
    pub seconds: f64,
}

impl LinkSet {
    /// Link `source`'s plain build with the other units (in `dir`) and
    /// measure its kernels; those whose callees no unit defines are turned
    /// into declarations first, so the rest links.
    pub(crate) fn plain(
        &self,
        toolchain: &Toolchain,
        source: &Path,
        dir: &Path,
        options: &resources::Options,
    ) -> Result<Plain<'_>, RdcError> {
        let arch = &self.arch;
        let unit = self.unit(source).map_err(|f| RdcError::Other(f.message))?;
        let unresolved: Vec<String> = self.unresolved(source).into_keys().collect();
        let kernels = unit.kernels().into_iter().filter(|k| !unresolved.contains(k)).collect();
        let link = Link { others: self.others(source), kernels };
        let started = Instant::now();
        // The unit's own bitcode, unless kernels must go: then from its IR without them.
        let (pre_ir, own) = if unresolved.is_empty() {
            (unit.temps.pre_opt_ir.clone(), unit.temps.object.clone())
        } else {
            let pre_ir = dir.join("resolved.bc");
            without_kernels(toolchain, &unit.temps.pre_opt_ir, &unresolved, &pre_ir).map_err(|f| RdcError::Other(f.message))?;
            let own = dir.join("resolved.o.bc");
            gpu::of(arch).ir_to_bitcode(toolchain, &pre_ir, &own, &Variant::default())?;
            (pre_ir, own)
        };
        let object = dir.join("plain.o");
        let linked = link.device_link(toolchain, arch, own, &object, Emit::Object, &unit.user_args, &Variant::default())?;
        let measured = link.own(resources::object_file_with(&object, arch, &linked.stderr, options)?);
        let preprocessed = std::fs::read(&unit.temps.preprocessed)
            .map_err(|e| RdcError::Other(format!("cannot read {}: {e}", unit.temps.preprocessed.display())))?;
        let symbols: Vec<String> = measured.iter().map(|m| m.symbol.clone()).collect();
        // No code generator ran in the unit's compile, so no remarks: read the source.
        let locations = compile::source_locations(source, &symbols);
        let seconds = unit.plain_seconds + started.elapsed().as_secs_f64();
        Ok(Plain { unit, pre_ir, object, preprocessed, measured, locations, link, seconds })
    }
}

fn compile_unit(toolchain: &Toolchain, arch: &Arch, source: &Path, args: &[String], dir: &Path) -> Result<Unit, Failure> {
    gpu::of(arch).relocatable().map_err(|why| Failure::new(format!("{}: -fgpu-rdc for {arch}: {why}", source.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.display())))?;
    let unit = compile::Unit { toolchain, arch, source, user_args: args };
    let started = Instant::now();
    let temps = unit.build_keeping_temps(dir).map_err(compile::compile_failure)?;
    let plain_seconds = started.elapsed().as_secs_f64();
    let ir = disassemble(toolchain, &temps.pre_opt_ir)?;
    Ok(Unit { user_args: args.to_vec(), temps, plain_seconds, graph: CallGraph::parse(&ir) })
}

/// `llvm-dis` to text.
pub(crate) fn disassemble(toolchain: &Toolchain, bc: &Path) -> Result<String, Failure> {
    let llvm_dis = toolchain.llvm_bin.join("llvm-dis");
    let out = Command::new(&llvm_dis)
        .arg(bc)
        .args(["-o", "-"])
        .output()
        .map_err(|e| Failure::new(format!("cannot run {}: {e}", llvm_dis.display())))?;
    if !out.status.success() {
        return Err(Failure::new(format!("llvm-dis failed on {}: {}", bc.display(), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Turn the kernels `symbols` of the pre-optimization IR `ir` into
/// declarations (`llvm-extract --delete`): what is left links without them.
pub(crate) fn without_kernels(toolchain: &Toolchain, ir: &Path, symbols: &[String], out: &Path) -> Result<(), Failure> {
    let tool = toolchain.llvm_bin.join("llvm-extract");
    let mut cmd = Command::new(&tool);
    cmd.arg("--delete").args(symbols.iter().map(|s| format!("--func={s}"))).arg(ir).arg("-o").arg(out);
    let done = cmd.output().map_err(|e| Failure::new(format!("cannot run {}: {e}", tool.display())))?;
    if !done.status.success() {
        return Err(Failure::new(format!("llvm-extract failed on {}: {}", ir.display(), String::from_utf8_lossy(&done.stderr).trim())));
    }
    Ok(())
}

/// The functions a module defines and whom each calls directly, read from
/// its textual IR (the compiler's own `llvm-dis` output, one instruction a
/// line).
#[derive(Debug, Default)]
struct CallGraph {
    functions: BTreeMap<String, Function>,
}

#[derive(Debug, Default)]
struct Function {
    kernel: bool,
    /// Visible to other modules (not `internal` or `private`).
    exported: bool,
    callees: BTreeSet<String>,
}

impl CallGraph {
    fn parse(ir: &str) -> CallGraph {
        let mut graph = CallGraph::default();
        let mut current: Option<(String, Function)> = None;
        for line in ir.lines() {
            if let Some((_, f)) = current.as_mut() {
                if line.starts_with('}') {
                    let (name, f) = current.take().expect("inside a function");
                    graph.functions.insert(name, f);
                } else if let Some(callee) = callee(line) {
                    f.callees.insert(callee);
                }
                continue;
            }
            if let Some(header) = line.strip_prefix("define ") {
                let Some(at) = header.find('@') else { continue };
                let (before, name) = (&header[..at], symbol(&header[at + 1..]));
                let words: Vec<&str> = before.split_whitespace().collect();
                let f = Function {
                    kernel: words.iter().any(|w| *w == "amdgpu_kernel" || *w == "ptx_kernel"),
                    exported: !words.iter().any(|w| *w == "internal" || *w == "private"),
                    callees: BTreeSet::new(),
                };
                current = Some((name, f));
            }
        }
        graph
    }

    /// What other modules may call.
    fn exported(&self) -> impl Iterator<Item = &String> {
        self.functions.iter().filter(|(_, f)| f.exported).map(|(name, _)| name)
    }

    /// Per kernel: the functions it reaches through direct calls that the
    /// module does not define (intrinsics aside).
    fn external_calls(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out = BTreeMap::new();
        for (kernel, _) in self.functions.iter().filter(|(_, f)| f.kernel) {
            let mut seen: BTreeSet<&str> = BTreeSet::from([kernel.as_str()]);
            let mut todo = vec![kernel.as_str()];
            let mut missing = BTreeSet::new();
            while let Some(name) = todo.pop() {
                let Some(f) = self.functions.get(name) else { continue };
                for c in &f.callees {
                    if c.starts_with("llvm.") {
                        continue;
                    }
                    if !self.functions.contains_key(c) {
                        missing.insert(c.clone());
                    } else if seen.insert(c) {
                        todo.push(c);
                    }
                }
            }
            out.insert(kernel.clone(), missing);
        }
        out
    }
}

/// The symbol at the start of `s` (after `@`): quoted, or up to `(`.
fn symbol(s: &str) -> String {
    match s.strip_prefix('"') {
        Some(q) => q.split('"').next().unwrap_or_default().to_string(),
        None => s.split(|c: char| c == '(' || c.is_whitespace() || c == ',').next().unwrap_or_default().to_string(),
    }
}

/// The function a `call` or `invoke` instruction calls directly: the first
/// `@name(` after the keyword (indirect calls name none).
fn callee(line: &str) -> Option<String> {
    let body = line.trim_start();
    let at = ["call ", "invoke "].iter().filter_map(|k| body.find(k).map(|i| i + k.len())).min()?;
    let mut rest = &body[at..];
    while let Some(i) = rest.find('@') {
        let name = symbol(&rest[i + 1..]);
        let after = &rest[i + 1..];
        let after = after.strip_prefix('"').map_or(&after[name.len()..], |q| &q[(name.len() + 1).min(q.len())..]);
        if after.starts_with('(') {
            return Some(name);
        }
        rest = &rest[i + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"
define internal void @helper(ptr %p) #0 {
  %1 = tail call double @_Z5otherd(double 1.0)
  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr @table, i64 8, i1 false)
  ret void
}
define protected amdgpu_kernel void @_Z1kPd(ptr addrspace(1) %p) #1 {
entry:
  call void @helper(ptr %p)
  %x = call fastcc noundef double @"quoted.name"(double 2.0) #4
  ret void
}
define protected amdgpu_kernel void @_Z4selfPd(ptr addrspace(1) %p) {
  ret void
}
define hidden double @_Z7definedd(double %x) {
  ret double %x
}
declare double @_Z5otherd(double)
"#;

    #[test]
    fn kernels_reach_external_callees_through_their_helpers() {
        let g = CallGraph::parse(IR);
        let calls = g.external_calls();
        assert_eq!(calls["_Z1kPd"], BTreeSet::from(["_Z5otherd".to_string(), "quoted.name".to_string()]));
        assert!(calls["_Z4selfPd"].is_empty());
        let exported: Vec<&String> = g.exported().collect();
        assert_eq!(exported, ["_Z1kPd", "_Z4selfPd", "_Z7definedd"]);
    }

    #[test]
    fn the_last_rdc_flag_wins() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(enabled(&args(&["-O3", "-fgpu-rdc"])));
        assert!(!enabled(&args(&["-fgpu-rdc", "-fno-gpu-rdc"])));
        assert!(!enabled(&args(&["-O3"])));
    }
}
