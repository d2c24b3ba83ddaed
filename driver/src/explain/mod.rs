//! `regtune explain`: why a kernel needs its registers.
//!
//! Per file and target, four compiles of the device code, two at a time:
//!   1. the plain build, as `report` measures it;
//!   2. the same with `-gline-tables-only`, printing the machine code after
//!      the backend's last pass (`mir`): checked to measure exactly as the
//!      plain build, it gives the pressure timeline (`pressure`, `timeline`);
//!   3. optimized IR with full debug info (`-g`): names for the values live
//!      at the peak, and most of the diagnostics (`diagnose`);
//!   4. the frontend's IR (`-g`, no optimization): the `pow` calls, before
//!      the device library is inlined into them.
//!
//! On NVPTX, registers are allocated by ptxas in SASS, which regtune does
//! not read: there is no timeline, only the usage and the diagnostics.

pub(crate) mod diagnose;
pub(crate) mod html;
pub(crate) mod lds;
pub(crate) mod loops;
pub(crate) mod mir;
pub(crate) mod pressure;
pub(crate) mod text;
pub(crate) mod timeline;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use regtune_decisions::{Db, Usage};
use serde::Serialize;

use crate::context::Context;
use crate::gpu::compile::{self, compile_failure, CompileError, Unit};
use crate::gpu::resources::{self, Measured};
use crate::gpu::{self, Arch, Limiter};
use crate::ir;
use crate::launch;
use crate::names::{self, demangle, short_name};
use crate::output::{self, Failure};
use crate::toolchain::Toolchain;

pub(crate) use diagnose::{Diagnostic, Tuned};
pub(crate) use timeline::Timeline;

pub struct Options<'a> {
    /// Only kernels whose name (demangled, without parameters) or symbol is this.
    pub kernel: Option<&'a str>,
    /// The decisions db `tune` wrote, for what it measured.
    pub db: &'a Db,
}

/// Everything `explain` says about one kernel on one target.
#[derive(Debug, Clone, Serialize)]
pub struct KernelExplain {
    /// Demangled.
    pub name: String,
    pub symbol: String,
    pub file: String,
    pub line: u32,
    pub arch: String,
    /// As `report` measures it: the plain build.
    pub usage: Usage,
    pub limiter: Limiter,
    pub vgprs_to_next_step: Option<u32>,
    /// The `-gline-tables-only` build's usage differs from the plain
    /// build's: the timeline is of slightly different code.
    pub line_tables_changed_code: bool,
    pub line_tables_usage: Option<Usage>,
    pub timeline: Option<Timeline>,
    /// Why there is no timeline.
    pub no_timeline: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Html,
}

/// Write the explanations: text or JSON to `output` (stdout without one),
/// or one HTML page per kernel into the directory `output` (default: the
/// current one). Returns the pages written.
pub fn emit(kernels: &[KernelExplain], format: Format, output: Option<&Path>) -> anyhow::Result<Vec<PathBuf>> {
    let source = |file: &str| std::fs::read_to_string(file).ok();
    match format {
        Format::Text => output::emit(&text::render(kernels, source), output)?,
        Format::Json => {
            let doc = serde_json::json!({ "kernels": kernels });
            output::emit(&(serde_json::to_string_pretty(&doc)? + "\n"), output)?
        }
        Format::Html => {
            let dir = output.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            let mut written: Vec<PathBuf> = Vec::new();
            for k in kernels {
                let stem: String =
                    short_name(&k.name).chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
                let mut path = dir.join(format!("{stem}.{}.html", k.arch.replace(':', "_")));
                for n in 2.. {
                    if !written.contains(&path) {
                        break;
                    }
                    path = dir.join(format!("{stem}-{n}.{}.html", k.arch.replace(':', "_")));
                }
                output::emit(&html::page(k, source(&k.file).as_deref()), Some(&path))?;
                written.push(path);
            }
            return Ok(written);
        }
    }
    Ok(vec![])
}

/// Explain every kernel of every file on every target; a file that fails
/// is reported and the rest still come back.
pub fn run(ctx: &Context, files: &[PathBuf], options: &Options<'_>) -> (Vec<KernelExplain>, Vec<Failure>) {
    let (toolchain, archs, user_args) = (&ctx.toolchain, &ctx.archs[..], &ctx.user_args[..]);
    let jobs: Vec<(&PathBuf, &Arch)> = files.iter().flat_map(|f| archs.iter().map(move |a| (f, a))).collect();
    let results: Vec<Result<Vec<KernelExplain>, Failure>> =
        jobs.par_iter().map(|(file, arch)| one(toolchain, file, arch, user_args, options)).collect();
    let (rows, mut failures) = output::partition(results);
    if let (Some(k), true, true) = (options.kernel, rows.is_empty(), failures.is_empty()) {
        failures.push(Failure::new(format!("no kernel named `{k}` in {}", list(files))));
    }
    (rows, failures)
}

fn list(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// What the four compiles of one file produced.
struct Builds {
    plain: Vec<Measured>,
    /// Each kernel's largest block size, where the object records one.
    max_block_sizes: Vec<(String, u32)>,
    locations: Vec<compile::Location>,
    /// The line-tables build: its usage and its machine code (AMDGPU).
    line_tables: Option<(Vec<Measured>, Vec<mir::Function>)>,
    post: ir::Module,
    pre: ir::Module,
}

fn with_args(user_args: &[String], extra: &[&str]) -> Vec<String> {
    user_args.iter().cloned().chain(extra.iter().map(|s| s.to_string())).collect()
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))
}

fn build(toolchain: &Toolchain, file: &Path, arch: &Arch, user_args: &[String], dir: &Path) -> Result<Builds, Failure> {
    let unit = |args| Unit { toolchain, arch, source: file, user_args: args };
    let line_table_args = with_args(user_args, &["-gline-tables-only", "-mllvm", &format!("-print-after={}", mir::LAST_PASS)]);
    let debug_args = with_args(user_args, &["-g", "-fno-discard-value-names"]);
    let measured = |obj: &Path, compiled: compile::Compiled| -> Result<(Vec<Measured>, String), Failure> {
        let m = resources::object_file_with(obj, arch, &compiled.stderr, &resources::Options::default())
            .map_err(|e| Failure::new(e.to_string()))?;
        Ok((m, compiled.stderr))
    };
    let plain_obj = dir.join("plain.o");
    let lt_obj = dir.join("line-tables.o");
    let (post_ll, pre_ll) = (dir.join("post.ll"), dir.join("pre.ll"));
    let ((plain, line_tables), (post, pre)) = rayon::join(
        || {
            rayon::join(
                || unit(user_args).code_object(&plain_obj).map_err(compile_failure).and_then(|c| measured(&plain_obj, c)),
                || -> Result<Option<(Vec<Measured>, String)>, Failure> {
                    if gpu::of(arch).pressure_timeline().is_err() {
                        return Ok(None);
                    }
                    let c = unit(&line_table_args).code_object(&lt_obj).map_err(compile_failure)?;
                    measured(&lt_obj, c).map(Some)
                },
            )
        },
        || {
            let ir = |out: &Path, extra: &[&str]| -> Result<ir::Module, Failure> {
                unit(&debug_args).listing(out, extra).map_err(|e: CompileError| compile_failure(e))?;
                Ok(ir::parse(&read(out)?))
            };
            rayon::join(|| ir(&post_ll, &["-emit-llvm"]), || ir(&pre_ll, &["-emit-llvm", "-Xclang", "-disable-llvm-passes"]))
        },
    );
    let (plain, stderr) = plain?;
    let target = gpu::of(arch);
    let max_block_sizes = target.max_block_sizes(&plain_obj).map_err(Failure::new)?;
    let locations = target.locations(file, &stderr, &plain.iter().map(|m| m.symbol.clone()).collect::<Vec<_>>());
    Ok(Builds {
        plain,
        max_block_sizes,
        locations,
        line_tables: line_tables?.map(|(m, dump)| (m, mir::parse(&dump))),
        post: post?,
        pre: pre?,
    })
}

fn one(
    toolchain: &Toolchain,
    file: &Path,
    arch: &Arch,
    user_args: &[String],
    options: &Options<'_>,
) -> Result<Vec<KernelExplain>, Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::new(format!("cannot create a temporary directory: {e}")))?;
    let b = build(toolchain, file, arch, user_args, dir.path())?;
    if b.plain.is_empty() {
        return Err(Failure::new(format!("{} defines no kernels (no __global__ functions for {arch})", file.display())));
    }
    let (lds_inputs, lds_session) = (OnceCell::new(), OnceCell::new());
    let lds_notes = lds::Notes { toolchain, source: file, arch, user_args, inputs: &lds_inputs, session: &lds_session };
    let wanted = |m: &Measured| {
        options.kernel.is_none_or(|k| k == m.symbol || k == short_name(&demangle(&m.symbol)) || k == names::unqualified(&m.symbol))
    };
    let source = std::fs::read_to_string(file).unwrap_or_default();
    let input_hash = if options.db.kernels.is_empty() { None } else { Some(input_hash(toolchain, file, arch, user_args, dir.path())?) };
    let mut out = Vec::new();
    for m in b.plain.iter().filter(|m| wanted(m)) {
        let location = b.locations.iter().find(|l| l.symbol == m.symbol);
        let kernel_file = location.map_or_else(|| file.display().to_string(), |l| l.file.clone());
        let lt_usage = b.line_tables.as_ref().and_then(|(ms, _)| ms.iter().find(|x| x.symbol == m.symbol)).map(|x| x.usage);
        let post_fn = b.post.function(&m.symbol);
        let (timeline, no_timeline) = match &b.line_tables {
            None => {
                (None, Some(format!("no pressure timeline on {arch}: {}", gpu::of(arch).pressure_timeline().err().unwrap_or_default())))
            }
            Some((_, functions)) => match functions.iter().find(|f| f.name == m.symbol) {
                None => (None, Some(format!("the backend printed no machine code for this kernel after `{}`", mir::LAST_PASS))),
                Some(f) => {
                    let live = pressure::liveness(f);
                    let pre = b.pre.function(&m.symbol).map(|pf| (&b.pre, pf));
                    let names = post_fn.map(|pf| timeline::Names::new(&b.post, pf, pre));
                    let loops: Vec<(u32, u32)> = post_fn
                        .map(|pf| loops::Cfg::new(pf).loops(pf, &b.post).into_iter().filter_map(|l| l.lines).collect())
                        .unwrap_or_default();
                    (Some(timeline::build(&live, &kernel_file, names.as_ref(), &loops)), None)
                }
            },
        };
        let tuned = match &input_hash {
            None => Tuned::Never,
            Some(h) => {
                let current = options.db.lookup(&m.symbol, arch.processor(), Some(h)).next().cloned();
                let any = options.db.lookup(&m.symbol, arch.processor(), None).next().cloned();
                match (current, any) {
                    (Some(e), _) => Tuned::Current(e),
                    (None, Some(_)) => Tuned::Stale,
                    (None, None) => Tuned::Never,
                }
            }
        };
        let cx = diagnose::Context {
            arch,
            symbol: &m.symbol,
            usage: &m.usage,
            max_flat_workgroup_size: b.max_block_sizes.iter().find(|(k, _)| *k == m.symbol).map(|(_, n)| *n),
            post: &b.post,
            pre: &b.pre,
            launch_block_size: launch::block_size(&source, &names::unqualified(&m.symbol)),
            tuned: &tuned,
        };
        let mut diagnostics = diagnose::diagnose(&cx);
        let place = lds::Place { file: &kernel_file, line: location.map_or(0, |l| l.line) };
        match lds::diagnostic(&lds_notes, &m.symbol, &tuned, place) {
            Some(Ok(d)) => diagnostics.push(d),
            Some(Err(why)) => return Err(Failure::new(format!("{}: the lds-spill build of {}: {why}", file.display(), m.symbol))),
            None => {}
        }
        out.push(KernelExplain {
            name: demangle(&m.symbol),
            symbol: m.symbol.clone(),
            file: kernel_file,
            line: location.map_or(0, |l| l.line),
            arch: arch.to_string(),
            usage: m.usage,
            limiter: m.limiter,
            vgprs_to_next_step: m.vgprs_to_next_step,
            line_tables_changed_code: lt_usage.is_some_and(|u| u != m.usage),
            line_tables_usage: lt_usage,
            timeline,
            no_timeline,
            diagnostics,
        });
    }
    Ok(out)
}

/// The db's key for this input: what `tune` hashes (preprocessed source,
/// the user's flags, compiler, target).
fn input_hash(toolchain: &Toolchain, file: &Path, arch: &Arch, user_args: &[String], dir: &Path) -> Result<String, Failure> {
    let unit = Unit { toolchain, arch, source: file, user_args };
    let (hash, _) = unit.preprocess_and_hash(&dir.join("preprocessed.i")).map_err(compile_failure)?;
    Ok(hash)
}
