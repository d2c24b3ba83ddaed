//! CUDA code built with nvcc: nvcc's own PTX and its own ptxas line, and
//! every candidate as that PTX with a kernel's entry edited, assembled by
//! the same ptxas with the same arguments.
//!
//! nvcc compiles once, as the user's command would, with `--keep` and `-v`:
//! its steps are printed (`#$ ptxas -arch=sm_90 -m64 "k.ptx" -o
//! "k.sm_90.cubin"`) and their files kept. The plain candidate is the cubin
//! nvcc made, byte for byte (the same ptxas line run again with `-v` must
//! give it back, or nothing is tuned). A candidate changes only what ptxas
//! reads from a kernel's entry, exactly what the source spellings make
//! cicc write there:
//!
//! ```text
//! .visible .entry _Z5saxpyfPKfPfi(
//!     .param .f32 _Z5saxpyfPKfPfi_param_0, ...
//! )
//! .maxntid 256, 1, 1                 launch_bounds: __launch_bounds__(256)
//! .maxnreg 64                        warps-per-sm: __maxnreg__(64)
//! {
//! .pragma "enable_smem_spilling";    spill-to-shared (needs .maxntid)
//! ```
//!
//! So a register cap costs one ptxas run, and the cubin of an entry edited
//! here equals the one nvcc builds from the source `regtune fix` writes
//! (tests/nvcc.rs checks it). Rewrites of the source (sink, pow2, unroll
//! caps, noalias) are not built this way (nvcc's frontend is not LLVM): the
//! session builds the source as `regtune fix` rewrites it with nvcc, and
//! edits that build's entries ([`split`]).
//!
//! nvcc's own `-maxrregcount=R` is more than a `.maxnreg`: nvcc hands it
//! to cicc too (`-maxreg R`, which changes the PTX), for every kernel of
//! the file. For one kernel ([`Transforms::maxrregcount`]) it is that
//! kernel's entry from nvcc's PTX of the file at R ([`keep_ptx`], once per
//! R), spliced into the plain PTX (`splice.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use regtune_decisions::Transforms;

use super::nvidia;
use super::ptxas;
use crate::gpu::compile::CompileError;
use crate::gpu::Arch;
use crate::job::{self, JobError};
use crate::toolchain::nvcc::Nvcc;

/// nvcc's build of one file for one arch, kept.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The PTX cicc made for the arch's virtual architecture.
    pub ptx: String,
    /// nvcc's ptxas line for the arch, without its input and output.
    pub ptxas_args: Vec<String>,
    /// The cubin nvcc made: the plain candidate.
    pub cubin: PathBuf,
    /// ptxas's `-v` report on it.
    pub report: String,
    pub ptxas: PathBuf,
    pub ptxas_version: String,
}

/// The user's flags that say what to make or where, not how to compile:
/// nvcc is run for a device build of its own, so these go.
const DROPPED: &[&str] = &[
    "-c",
    "--compile",
    "-E",
    "--preprocess",
    "-M",
    "-MM",
    "-MD",
    "-MMD",
    "-MP",
    "--generate-dependencies",
    "--generate-nonsystem-dependencies",
    "--generate-dependencies-with-compile",
    "--generate-nonsystem-dependencies-with-compile",
    "-keep",
    "--keep",
    "-dryrun",
    "--dryrun",
    "-v",
    "--verbose",
    "-save-temps",
    "--save-temps",
    "-ptx",
    "--ptx",
    "-cubin",
    "--cubin",
    "-fatbin",
    "--fatbin",
    "-link",
    "--link",
    "-lib",
    "--lib",
];
/// The same, taking a value (`-o out` or `-o=out`, `-oout` for `-o`, `-MF`, `-MT`, `-MQ`).
const DROPPED_WITH_VALUE: &[&str] = &[
    "-o",
    "--output-file",
    "-MF",
    "--dependency-output",
    "-MT",
    "--dependency-target-name",
    "-MQ",
    "-odir",
    "--output-directory",
    "-keep-dir",
    "--keep-dir",
    "-time",
    "--time",
];
/// Flags whose value is the next argument and kept with it (`-Xptxas -v`
/// is ptxas's `-v`, not nvcc's).
const KEPT_WITH_VALUE: &[&str] = &[
    "-Xptxas",
    "--ptxas-options",
    "-Xcompiler",
    "--compiler-options",
    "-Xlinker",
    "--linker-options",
    "-Xnvlink",
    "--nvlink-options",
    "-Xarchive",
    "--archive-options",
    "-ccbin",
    "--compiler-bindir",
    "-I",
    "--include-path",
    "-isystem",
    "--system-include",
    "-include",
    "--pre-include",
    "-D",
    "--define-macro",
    "-U",
    "--undefine-macro",
    "-x",
    "--x",
    "-L",
    "-l",
    "-maxrregcount",
    "--maxrregcount",
    "-std",
    "--std",
    "-arch",
    "--gpu-architecture",
    "-code",
    "--gpu-code",
    "-gencode",
    "--generate-code",
    "-rdc",
    "--relocatable-device-code",
];
/// Flags that make relocatable device code, linked later by nvlink.
const RELOCATABLE: &[&str] = &["-rdc=true", "--relocatable-device-code=true", "-dc", "--device-c", "-dw", "--device-w"];
/// Flags that pick the architectures to build (then the user's own choice stands).
const ARCH_FLAGS: &[&str] = &["-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code"];

/// The user's nvcc flags for a device build: without output, dependency
/// and driver-mode flags.
pub(crate) fn compile_args(user_args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(user_args.len());
    let mut args = user_args.iter();
    while let Some(a) = args.next() {
        if KEPT_WITH_VALUE.contains(&a.as_str()) {
            out.push(a.clone());
            out.extend(args.next().cloned());
            continue;
        }
        if DROPPED.contains(&a.as_str()) {
            continue;
        }
        if DROPPED_WITH_VALUE.contains(&a.as_str()) {
            args.next();
            continue;
        }
        let joined =
            DROPPED_WITH_VALUE.iter().any(|f| a.strip_prefix(f).is_some_and(|v| v.starts_with('=') || (*f == "-o" && !v.is_empty())));
        if !joined {
            out.push(a.clone());
        }
    }
    out
}

/// Why nvcc's build cannot be tuned per kernel here, if it cannot.
pub(crate) fn unsupported(user_args: &[String]) -> Option<String> {
    let separate = user_args.windows(2).find(|w| matches!(w[0].as_str(), "-rdc" | "--relocatable-device-code") && w[1] == "true");
    separate.map(|w| &w[0]).or_else(|| user_args.iter().find(|a| RELOCATABLE.contains(&a.as_str()))).map(|a| {
        format!("{a}: relocatable device code is linked by nvlink, which regtune does not tune yet; build it without -rdc or with clang")
    })
}

/// Whether the user's flags name the architectures themselves.
fn names_archs(user_args: &[String]) -> bool {
    user_args.iter().any(|a| ARCH_FLAGS.iter().any(|f| a == f || a.strip_prefix(f).is_some_and(|v| v.starts_with('='))))
}

/// nvcc's flags for a build of its own: the user's, less what regtune's
/// build sets ([`compile_args`]), plus `-arch=` when they name none.
fn arch_args(user_args: &[String], arch: &Arch) -> Vec<String> {
    let mut args = compile_args(user_args);
    if !names_archs(&args) {
        args.push(format!("-arch={}", arch.processor()));
    }
    args
}

/// nvcc stopped at its deadline, `after` it started, compiling `source`.
fn timed_out(nvcc: &Nvcc, arch: &Arch, source: &Path, after: std::time::Duration) -> CompileError {
    CompileError::TimedOut { tool: nvcc.path.clone(), file: source.into(), arch: arch.to_string(), seconds: after.as_secs_f64() }
}

/// Compile `source` with nvcc as the user's flags say (plus `-arch=` when
/// they name none), keeping nvcc's files in `dir`, stopped at `deadline`.
pub(crate) fn keep(
    nvcc: &Nvcc,
    arch: &Arch,
    source: &Path,
    user_args: &[String],
    dir: &Path,
    deadline: Option<Instant>,
) -> Result<Kept, CompileError> {
    let fail =
        |status: String, diagnostics: String| CompileError::Nvcc { file: source.into(), arch: arch.to_string(), status, diagnostics };
    if let Some(why) = unsupported(user_args) {
        return Err(fail("not tuned".into(), why));
    }
    let args = arch_args(user_args, arch);
    let mut cmd = Command::new(&nvcc.path);
    cmd.args(&args).args(["-c", "--keep", "-v", "--keep-dir"]).arg(dir).arg("-o").arg(dir.join("unit.o")).arg(source);
    let done = job::run(cmd, deadline).map_err(|e| match e {
        JobError::Spawn(source) => CompileError::Spawn { tool: nvcc.path.clone(), source },
        JobError::TimedOut(after) => timed_out(nvcc, arch, source, after),
    })?;
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    if !done.status.success() {
        let diagnostics: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("#$ ")).collect();
        return Err(fail(done.status.to_string(), diagnostics.join("\n")));
    }
    let lines = ptxas_lines(&stderr);
    let Some(line) = lines.iter().find(|l| l.arch == arch.processor()) else {
        let built: Vec<&str> = lines.iter().map(|l| l.arch.as_str()).collect();
        return Err(fail(
            "no code".into(),
            format!(
                "the nvcc flags build no {} code (ptxas ran for: {}); give --offload-arch one of those, or add -arch={}",
                arch.processor(),
                if built.is_empty() { "nothing".to_string() } else { built.join(", ") },
                arch.processor()
            ),
        ));
    };
    let within = |p: &str| if Path::new(p).is_absolute() { PathBuf::from(p) } else { std::env::current_dir().unwrap_or_default().join(p) };
    let (ptx_path, cubin) = (within(&line.input), within(&line.output));
    let ptx = std::fs::read_to_string(&ptx_path).map_err(|source| CompileError::Input { file: ptx_path.clone(), source })?;
    let tool = if line.tool.contains('/') { PathBuf::from(&line.tool) } else { nvcc.ptxas() };
    let ptxas_version = crate::toolchain::cuda::ptxas_version(&tool);
    let mut kept = Kept { ptx, ptxas_args: line.args.clone(), cubin: cubin.clone(), report: String::new(), ptxas: tool, ptxas_version };
    // The same line again must give nvcc's cubin back: the candidates are built by it.
    let again = dir.join("plain-again.cubin");
    kept.assemble_as_nvcc(arch, &ptx_path, &again, deadline)?;
    let (ours, nvccs) = (std::fs::read(&again).unwrap_or_default(), std::fs::read(&cubin).unwrap_or_default());
    if ours != nvccs || ours.is_empty() {
        return Err(fail(
            "not reproduced".into(),
            format!("ptxas run again as nvcc ran it ({}) did not give nvcc's cubin back; nothing tuned", line.args.join(" ")),
        ));
    }
    kept.report = kept.assemble(arch, &ptx_path, &dir.join("plain-report.cubin"), deadline)?;
    Ok(kept)
}

/// nvcc's cubin of `source` for `arch` alone, as the user's flags make it,
/// written to `out`: `-cubin`, no host compile (a third of the time of
/// `-c` on dxtc, the same cubin byte for byte). Where nvcc refuses
/// `-cubin` (flags naming several architectures) or fails, the cubin of
/// its whole build ([`keep`], in `dir`).
pub(crate) fn cubin(
    nvcc: &Nvcc,
    arch: &Arch,
    source: &Path,
    user_args: &[String],
    (dir, out): (&Path, &Path),
    deadline: Option<Instant>,
) -> Result<(), CompileError> {
    let args = arch_args(user_args, arch);
    let mut cmd = Command::new(&nvcc.path);
    cmd.args(&args).arg("-cubin").arg("-o").arg(out).arg(source);
    match job::run(cmd, deadline) {
        Ok(done) if done.status.success() && out.is_file() => Ok(()),
        Err(JobError::TimedOut(after)) => Err(timed_out(nvcc, arch, source, after)),
        _ => {
            let kept = keep(nvcc, arch, source, user_args, dir, deadline)?;
            std::fs::copy(&kept.cubin, out).map(|_| ()).map_err(|source| CompileError::Input { file: kept.cubin.clone(), source })
        }
    }
}

/// nvcc's PTX of `source` alone (`-ptx`: no host compile, no ptxas: a
/// third of a whole build), as the build `plain` kept with the same flags
/// makes it (cicc runs alike: the PTX is the one `-c` keeps), stopped at
/// `deadline`: `plain`'s ptxas line with this PTX. Where nvcc refuses
/// `-ptx` (flags naming several architectures) or fails, its whole build
/// ([`keep`]) instead.
pub(crate) fn keep_ptx(
    nvcc: &Nvcc,
    arch: &Arch,
    source: &Path,
    user_args: &[String],
    dir: &Path,
    deadline: Option<Instant>,
    plain: &Kept,
) -> Result<Kept, CompileError> {
    let args = arch_args(user_args, arch);
    let out = dir.join("unit.ptx");
    let mut cmd = Command::new(&nvcc.path);
    cmd.args(&args).args(["-ptx", "--keep", "--keep-dir"]).arg(dir).arg("-o").arg(&out).arg(source);
    match job::run(cmd, deadline) {
        Ok(done) if done.status.success() => {
            let ptx = std::fs::read_to_string(&out).map_err(|source| CompileError::Input { file: out.clone(), source })?;
            Ok(Kept { ptx, cubin: PathBuf::new(), report: String::new(), ..plain.clone() })
        }
        Err(JobError::TimedOut(after)) => Err(timed_out(nvcc, arch, source, after)),
        _ => keep(nvcc, arch, source, user_args, dir, deadline),
    }
}

impl Kept {
    /// A PTX about to be assembled by `ptxas` with `ptxas_args` (the
    /// wrapper's: nvcc's own build, mid-way), for its hash and edits.
    pub(crate) fn of_ptx(ptx: String, ptxas_args: Vec<String>, ptxas: PathBuf) -> Kept {
        let ptxas_version = crate::toolchain::cuda::ptxas_version(&ptxas);
        Kept { ptx, ptxas_args, cubin: PathBuf::new(), report: String::new(), ptxas, ptxas_version }
    }

    /// nvcc's ptxas line with `-v`, on `ptx` into `cubin` (through the
    /// cache): the report. ptxas 13 writes its options into the cubin
    /// (`.note.nv.tkinfo`), so this cubin differs from the build's in that
    /// note; its code and resources are the same.
    pub(crate) fn assemble(&self, arch: &Arch, ptx: &Path, cubin: &Path, deadline: Option<Instant>) -> Result<String, CompileError> {
        let mut args: Vec<OsString> = self.ptxas_args.iter().map(OsString::from).collect();
        if !self.ptxas_args.iter().any(|a| a == "-v" || a == "--verbose") {
            args.push("-v".into());
        }
        Ok(ptxas::assemble_with((&self.ptxas, &self.ptxas_version), args, arch, ptx, cubin, deadline)?)
    }

    /// nvcc's ptxas line exactly: the cubin nvcc's build makes of `ptx`,
    /// byte for byte (the one `regtune measure` times).
    pub(crate) fn assemble_as_nvcc(&self, arch: &Arch, ptx: &Path, cubin: &Path, deadline: Option<Instant>) -> Result<(), CompileError> {
        let args: Vec<OsString> = self.ptxas_args.iter().map(OsString::from).collect();
        ptxas::assemble_with((&self.ptxas, &self.ptxas_version), args, arch, ptx, cubin, deadline)?;
        Ok(())
    }

    /// The same ptxas line building `symbol` alone (`-e`, ptxas's own
    /// choice of entries): the kernel's code as the whole file's build
    /// gives it, for a ptxas run of one kernel. A PTX of that one kernel
    /// is built as it is (ptxas records its options in the cubin).
    pub(crate) fn alone(&self, symbol: &str) -> Kept {
        if entry_names(&self.ptx) == [symbol] {
            return self.clone();
        }
        let mut ptxas_args = self.ptxas_args.clone();
        ptxas_args.extend(["-e".to_string(), symbol.to_string()]);
        Kept { ptxas_args, ..self.clone() }
    }

    /// The PTX with each kernel's entry edited for its transforms.
    pub(crate) fn edited(&self, variant: &[(String, Transforms)]) -> Result<String, String> {
        let mut ptx = self.ptx.clone();
        for (symbol, t) in variant {
            ptx = edit_entry(&ptx, symbol, &Entry::of(t)?)?;
        }
        Ok(ptx)
    }

    /// The input hash: nvcc, the arch, ptxas and its arguments, and the PTX
    /// (its `.file` directives by file name alone: where the checkout is
    /// does not change the code).
    pub(crate) fn input_hash(&self, nvcc: &Nvcc, arch: &Arch) -> String {
        let ptx: String = self.ptx.lines().map(|l| canonical_file_line(l) + "\n").collect();
        let mut parts: Vec<&[u8]> = vec![nvcc.version.as_bytes(), arch.processor().as_bytes(), self.ptxas_version.as_bytes()];
        parts.extend(self.ptxas_args.iter().map(|a| a.as_bytes()));
        parts.push(ptx.as_bytes());
        regtune_decisions::hash::of_parts(parts)
    }
}

/// `.file 1 "/abs/dir/k.cu"` → `.file 1 "k.cu"`; other lines as they are.
fn canonical_file_line(line: &str) -> String {
    if !line.trim_start().starts_with(".file") {
        return line.to_string();
    }
    let Some((head, quoted)) = line.split_once('"') else { return line.to_string() };
    let path = quoted.split('"').next().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or(path);
    format!("{head}\"{name}\"")
}

/// A variant's transforms as (what the kernel's PTX entry carries, what
/// rewrites the source). nvcc's `-maxrregcount` ([`Transforms::maxrregcount`])
/// is neither: the kernel's entry is another PTX's (`splice.rs`).
pub(crate) fn split(t: &Transforms) -> (Transforms, Transforms) {
    let entry = Transforms {
        warps_per_sm: t.warps_per_sm,
        launch_bounds: t.launch_bounds,
        spill_to_shared: t.spill_to_shared,
        ..Default::default()
    };
    let rewrites = Transforms { warps_per_sm: None, launch_bounds: None, spill_to_shared: false, maxrregcount: None, ..t.clone() };
    (entry, rewrites)
}

/// The `-maxrregcount` candidate at the register cap of `warps` warps per
/// SM: nvcc's flag at the `.maxnreg` candidate's registers.
pub(crate) fn maxrregcount_at(warps: u32) -> Transforms {
    Transforms::with_maxrregcount(nvidia::register_cap_for_warps(warps))
}

/// Whether `a` is nvcc's `-maxrregcount` flag, alone (`-maxrregcount`,
/// `--maxrregcount`, its value next) or joined (`-maxrregcount=N`).
fn is_maxrregcount(a: &str) -> Option<bool> {
    let name = a.split('=').next().unwrap_or(a);
    (name == "-maxrregcount" || name == "--maxrregcount").then_some(a.contains('='))
}

/// The user's nvcc flags with `-maxrregcount=R` in place of any of theirs.
pub(crate) fn user_args_with_maxrregcount(user_args: &[String], r: u32) -> Vec<String> {
    let mut out = Vec::with_capacity(user_args.len() + 1);
    let mut args = user_args.iter();
    while let Some(a) = args.next() {
        match is_maxrregcount(a) {
            Some(true) => {}
            Some(false) => {
                args.next();
            }
            None => out.push(a.clone()),
        }
    }
    out.push(format!("-maxrregcount={r}"));
    out
}

/// What a kernel's entry is given.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub maxnreg: Option<u32>,
    pub maxntid: Option<u32>,
    pub smem_spilling: bool,
}

impl Entry {
    /// The entry edits of a set of transforms; an error names what nvcc's
    /// PTX cannot carry.
    pub(crate) fn of(t: &Transforms) -> Result<Entry, String> {
        if let Some(r) = t.maxrregcount {
            return Err(format!(
                "-maxrregcount={r} takes the kernel's entry from nvcc's PTX at that flag, which no edit of this one gives"
            ));
        }
        let (_, rewrites) = split(t);
        if !rewrites.is_empty() {
            return Err(format!(
                "{} rewrite the source, which no PTX entry carries (`regtune fix --compiler nvcc` writes them in the source)",
                rewrites.labels().join(" + ")
            ));
        }
        Ok(Entry {
            maxnreg: t.warps_per_sm.map(nvidia::register_cap_for_warps),
            maxntid: t.launch_bounds,
            smem_spilling: t.spill_to_shared,
        })
    }
}

/// `ptx` with `symbol`'s entry given `entry`: a new `.maxnreg` or
/// `.maxntid` replaces the one there; `.pragma "enable_smem_spilling";`
/// opens the body where a block size is promised and the module declares
/// no dynamic shared memory (ptxas refuses it otherwise, as the plugin's
/// pass leaves such kernels alone).
pub(crate) fn edit_entry(ptx: &str, symbol: &str, entry: &Entry) -> Result<String, String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let head = format!(".entry {symbol}(");
    let start = lines.iter().position(|l| l.contains(&head)).ok_or_else(|| format!("the PTX has no entry {symbol}"))?;
    let open = (start..lines.len()).find(|&i| lines[i].trim() == "{").ok_or_else(|| format!("the entry {symbol} has no body"))?;
    let directive = |l: &str, d: &str| l.trim_start().starts_with(d) && l.trim_start()[d.len()..].starts_with([' ', '\t']);
    // The entry's head, less what the edit replaces.
    let replaced =
        |l: &&str| (entry.maxntid.is_some() && directive(l, ".maxntid")) || (entry.maxnreg.is_some() && directive(l, ".maxnreg"));
    let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
    out.extend(lines[start..open].iter().filter(|l| !replaced(l)).map(|l| l.to_string()));
    if let Some(n) = entry.maxntid {
        out.push(format!(".maxntid {n}, 1, 1"));
    }
    if let Some(r) = entry.maxnreg {
        out.push(format!(".maxnreg {r}"));
    }
    out.push(lines[open].to_string());
    let promised = out[start..].iter().any(|l| directive(l, ".maxntid") || directive(l, ".reqntid"));
    let dynamic_shared = lines.iter().any(|l| l.trim_start().starts_with(".extern .shared"));
    if entry.smem_spilling && promised && !dynamic_shared {
        out.push("\t.pragma \"enable_smem_spilling\";".to_string());
    }
    out.extend(lines[open + 1..].iter().map(|l| l.to_string()));
    Ok(out.join("\n") + "\n")
}

/// The kernels (`.entry`) a PTX defines, in its order.
pub(crate) fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.split_once(".entry ")?.1;
            let name: String = rest.chars().take_while(|c| !c.is_whitespace() && *c != '(').collect();
            (!name.is_empty() && !l.trim_start().starts_with("//")).then_some(name)
        })
        .collect()
}

/// One `#$ ptxas ...` step nvcc printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PtxasLine {
    pub tool: String,
    /// "sm_90".
    pub arch: String,
    /// Everything but the input and `-o output`.
    pub args: Vec<String>,
    pub input: String,
    pub output: String,
}

/// nvcc's ptxas steps from its `-v` (or `--dryrun`) output.
pub(crate) fn ptxas_lines(stderr: &str) -> Vec<PtxasLine> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("#$ "))
        .filter_map(shlex::split)
        .filter(|words| words.first().is_some_and(|w| w == "ptxas" || w.ends_with("/ptxas")))
        .filter_map(|words| {
            let mut args = Vec::new();
            let (mut input, mut output, mut arch) = (None, None, None);
            let mut rest = words[1..].iter();
            while let Some(w) = rest.next() {
                if w == "-o" || w == "--output-file" {
                    output = rest.next().cloned();
                } else if w.ends_with(".ptx") && !w.starts_with('-') {
                    input = Some(w.clone());
                } else {
                    if let Some(a) = w.strip_prefix("-arch=").or_else(|| w.strip_prefix("--gpu-name=")) {
                        arch = Some(a.to_string());
                    }
                    if (w == "-arch" || w == "--gpu-name") && arch.is_none() {
                        args.push(w.clone());
                        if let Some(a) = rest.next() {
                            arch = Some(a.clone());
                            args.push(a.clone());
                        }
                        continue;
                    }
                    args.push(w.clone());
                }
            }
            Some(PtxasLine { tool: words[0].clone(), arch: arch?, args, input: input?, output: output? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 9.5\n.target sm_90\n.address_size 64\n\n\t// .globl\t_Z1kPf\n\
.visible .entry _Z1kPf(\n\t.param .u64 .ptr .align 1 _Z1kPf_param_0\n)\n{\n\t.reg .b32 \t%r<3>;\n\tret;\n\n}\n\
\t// .globl\t_Z1jv\n.visible .entry _Z1jv()\n.maxntid 128, 1, 1\n.maxnreg 40\n{\n\tret;\n\n}\n";

    #[test]
    fn a_cap_goes_between_the_parameters_and_the_body() {
        let out = edit_entry(PTX, "_Z1kPf", &Entry { maxnreg: Some(64), ..Default::default() }).unwrap();
        assert!(out.contains("_Z1kPf_param_0\n)\n.maxnreg 64\n{\n\t.reg"), "{out}");
        // The other kernel keeps its own.
        assert!(out.contains("_Z1jv()\n.maxntid 128, 1, 1\n.maxnreg 40\n{"), "{out}");
    }

    #[test]
    fn a_new_cap_or_block_replaces_the_sources() {
        let out = edit_entry(PTX, "_Z1jv", &Entry { maxnreg: Some(32), maxntid: Some(256), smem_spilling: false }).unwrap();
        assert!(out.contains("_Z1jv()\n.maxntid 256, 1, 1\n.maxnreg 32\n{\n\tret;"), "{out}");
        assert_eq!(out.matches(".maxnreg").count(), 1);
    }

    #[test]
    fn spilling_to_shared_needs_a_promised_block_and_no_dynamic_shared_memory() {
        let spill = Entry { smem_spilling: true, ..Default::default() };
        let out = edit_entry(PTX, "_Z1kPf", &spill).unwrap();
        assert!(!out.contains("enable_smem_spilling"), "no block size: {out}");
        let out = edit_entry(PTX, "_Z1jv", &spill).unwrap();
        assert!(out.contains(".maxnreg 40\n{\n\t.pragma \"enable_smem_spilling\";\n\tret;"), "{out}");
        let dynamic = PTX.replace(".address_size 64\n", ".address_size 64\n.extern .shared .align 16 .b8 s[];\n");
        assert!(!edit_entry(&dynamic, "_Z1jv", &spill).unwrap().contains("enable_smem_spilling"));
    }

    #[test]
    fn a_variant_splits_into_its_entry_edits_and_its_rewrites() {
        let t = Transforms { sink: true, unroll_cap: Some(2), warps_per_sm: Some(32), launch_bounds: Some(256), ..Default::default() };
        let (entry, rewrites) = split(&t);
        assert_eq!(entry, Transforms { warps_per_sm: Some(32), launch_bounds: Some(256), ..Default::default() });
        assert_eq!(rewrites, Transforms { sink: true, unroll_cap: Some(2), ..Default::default() });
        assert!(Entry::of(&entry).is_ok());
    }

    #[test]
    fn nvccs_maxrregcount_is_no_entry_edit_and_replaces_the_users_flag() {
        let capped = Transforms { maxrregcount: Some(64), ..Default::default() };
        let (entry, rewrites) = split(&capped);
        assert!(entry.is_empty() && rewrites.is_empty(), "{entry:?} {rewrites:?}");
        assert!(Entry::of(&capped).unwrap_err().contains("-maxrregcount=64 takes the kernel's entry from nvcc's PTX"));
        assert_eq!(maxrregcount_at(32), capped, "the .maxnreg step's registers");
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            user_args_with_maxrregcount(&v(&["-O3", "-maxrregcount", "32", "--maxrregcount=40", "-Iinc"]), 64),
            ["-O3", "-Iinc", "-maxrregcount=64"]
        );
    }

    #[test]
    fn rewrites_of_the_source_are_named_not_built() {
        let e = Entry::of(&Transforms { sink: true, warps_per_sm: Some(32), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("sink rewrite the source"), "{e}");
        assert_eq!(Entry::of(&Transforms { warps_per_sm: Some(32), ..Default::default() }).unwrap().maxnreg, Some(64));
        assert!(edit_entry(PTX, "_Z1nope", &Entry::default()).unwrap_err().contains("no entry _Z1nope"));
    }

    #[test]
    fn nvccs_ptxas_steps_are_read_from_its_verbose_output() {
        let stderr = "#$ _NVVM_BRANCH_=nvvm\n#$ cicc --c++17 -arch compute_90 -o \"d/k.ptx\"\n\
#$ ptxas -arch=sm_90 -m64 --generate-line-info \"d/k.ptx\"  -o \"d/k.sm_90.cubin\" \n\
#$ ptxas -arch=sm_80 -m64 \"d/k.compute_80.ptx\" -o \"d/k.sm_80.cubin\"\n";
        let lines = ptxas_lines(stderr);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            PtxasLine {
                tool: "ptxas".into(),
                arch: "sm_90".into(),
                args: vec!["-arch=sm_90".into(), "-m64".into(), "--generate-line-info".into()],
                input: "d/k.ptx".into(),
                output: "d/k.sm_90.cubin".into(),
            }
        );
        assert_eq!(lines[1].arch, "sm_80");
    }

    #[test]
    fn output_and_driver_flags_are_dropped_and_relocatable_code_refused() {
        let args: Vec<String> =
            ["-O3", "-c", "-o", "k.o", "-MD", "-MF", "k.d", "-Iinc", "-arch=sm_90", "--keep-dir=x", "-ok2.o", "-Xptxas", "-v"]
                .map(String::from)
                .to_vec();
        assert_eq!(compile_args(&args), ["-O3", "-Iinc", "-arch=sm_90", "-Xptxas", "-v"]);
        assert!(names_archs(&args));
        assert!(!names_archs(&["-O3".to_string()]));
        assert!(unsupported(&["-rdc=true".to_string()]).unwrap().contains("relocatable device code"));
        assert!(unsupported(&args).is_none());
        assert!(unsupported(&["-rdc".to_string(), "true".to_string()]).is_some());
        assert!(unsupported(&["-rdc".to_string(), "false".to_string()]).is_none());
    }

    #[test]
    fn a_ptxs_kernels_are_its_entries() {
        assert_eq!(entry_names(PTX), ["_Z1kPf", "_Z1jv"]);
        assert!(entry_names("\t// .globl\t_Z1kPf\n.func f()\n").is_empty());
    }

    #[test]
    fn the_hash_reads_file_names_not_where_they_are() {
        assert_eq!(canonical_file_line("\t.file\t1 \"/home/a/src/k.cu\""), "\t.file\t1 \"k.cu\"");
        assert_eq!(canonical_file_line("\tret;"), "\tret;");
    }
}
