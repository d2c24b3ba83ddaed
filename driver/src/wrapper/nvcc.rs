//! The wrapper for nvcc (`regtune-nvcc`, `regtune cc -- nvcc ...`, CMake's
//! `CMAKE_CUDA_COMPILER_LAUNCHER`): nvcc's own steps, with each PTX edited
//! for the db's decisions just before nvcc's own ptxas reads it.
//!
//! nvcc prints its steps (`--dryrun`, with `--keep-dir` in a temporary
//! directory so every intermediate file lands there); the wrapper runs
//! them as nvcc would (one shell, nvcc's variable assignments first), and
//! before each `ptxas` step reads its PTX, computes the input hash `tune
//! --compiler nvcc` recorded (nvcc, the arch, ptxas and its arguments, the
//! PTX: `gpu/nvptx/nvcc.rs`), and writes the decided kernels' entries into
//! it (`.maxnreg`, `.maxntid`, the shared-memory spill pragma). So the
//! cubin in the object is byte for byte the candidate `regtune measure`
//! timed, and a source, flag or compiler change leaves the hash unmatched
//! and the build plain.
//!
//! A kernel's `-maxrregcount=R` (`Transforms::maxrregcount`: its code as
//! nvcc's own flag builds it) is its entry from nvcc's PTX of the file at
//! R: nvcc's cicc step for that PTX runs again with `-maxreg R` (into a
//! file of the wrapper's own: nvcc's files stay as they were), once per R,
//! and the kernels that chose R take their entries from it
//! (`gpu/nvptx/splice.rs`); the other kernels keep theirs, and ptxas's line
//! is nvcc's. A kernel whose decision rewrites the source (sink, pow2, an
//! unroll cap, noalias) takes its entry, in the same way, from nvcc's PTX
//! of the source as `regtune fix` writes those rewrites (the build tune
//! measured: `fix/spell.rs`), its entry edits on top. Where an entry cannot
//! be taken (tune found it could), that kernel is built plain, said in one
//! warning line.
//!
//! Never breaking a build: the steps' output is held until they all
//! succeed; anything regtune cannot do (a db it cannot read, a step that
//! fails with the edits, an unreadable PTX) builds with nvcc untouched
//! instead, which says why in one line if that build succeeds. A build
//! with no decision for it runs nvcc untouched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use regtune_decisions::{Db, Entry, Transforms};

use crate::fix::spell::Speller;
use crate::gpu::nvptx::nvcc::{self as build, Kept};
use crate::gpu::nvptx::splice;
use crate::gpu::Arch;
use crate::session::Rewriter;
use crate::toolchain::nvcc::Nvcc;

/// Whether `compiler` is nvcc (by its name).
pub(crate) fn is_nvcc(compiler: &Path) -> bool {
    compiler.file_name().is_some_and(|n| n.to_string_lossy().starts_with("nvcc"))
}

/// What the wrapper did with a command.
pub(crate) enum Built {
    /// Nothing to apply: build with nvcc untouched.
    Plain,
    /// nvcc's steps ran with these kernels' entries edited, and succeeded;
    /// what they printed; the decisions applied; why any was not (a line
    /// each: the kernel built plain).
    Edited { stdout: Vec<u8>, stderr: Vec<u8>, applied: Vec<String>, warnings: Vec<String> },
}

/// Build `args` (nvcc's arguments) with the decisions of `db`; Err: why
/// regtune could not (the caller then builds plainly).
pub(crate) fn build(nvcc: &Path, args: &[String], db: &Path) -> Result<Built, String> {
    if !compiles_device_code(args) {
        return Ok(Built::Plain);
    }
    let db = match Db::load(db) {
        Ok(db) => db,
        Err(regtune_decisions::DbError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(Built::Plain),
        Err(e) => return Err(e.to_string()),
    };
    if !db.kernels.values().any(|e| e.arch.starts_with("sm_") && !e.effective().is_empty()) {
        return Ok(Built::Plain);
    }
    let nvcc = Nvcc::at(nvcc).map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    // nvcc filters the dependency file itself (a step --dryrun cannot show):
    // the steps run without it, and nvcc writes it afterwards (`-M`).
    let (compile, depend) = dependencies_apart(args);
    let out = Command::new(&nvcc.path)
        .args(&compile)
        .args(["--dryrun", "--keep", "--keep-dir"])
        .arg(dir.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.path.display()))?;
    if !out.status.success() {
        return Err(format!("`nvcc --dryrun` failed ({})", out.status));
    }
    let steps = Steps::read(&String::from_utf8_lossy(&out.stderr));
    if steps.ptxas.is_empty() {
        return Ok(Built::Plain);
    }
    let (mut applied, mut warnings, mut stdout, mut stderr) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut done = 0;
    let ends: Vec<(usize, Option<build::PtxasLine>)> =
        steps.ptxas.iter().map(|(at, line)| (*at, Some(line.clone()))).chain([(steps.commands.len(), None)]).collect();
    for (at, line) in ends {
        let out = steps.run(done..at)?;
        stdout.extend(out.stdout);
        stderr.extend(out.stderr);
        // A step that fails with regtune's edits: the plain build decides
        // whose error it is.
        if !out.status.success() {
            let said = String::from_utf8_lossy(&stderr);
            let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string();
            return Err(format!("nvcc's steps failed with regtune's edits ({}: {last})", out.status));
        }
        done = at;
        if let Some(line) = line {
            let unit = Unit { nvcc: &nvcc, db: &db, args, keep_dir: dir.path() };
            let got = edit(&unit, &steps, at, &line)?;
            applied.extend(got.applied);
            warnings.extend(got.warnings);
        }
    }
    if applied.is_empty() && warnings.is_empty() {
        return Ok(Built::Plain);
    }
    if let Some(depend) = depend {
        let out = Command::new(&nvcc.path).args(&depend).output().map_err(|e| format!("cannot run {}: {e}", nvcc.path.display()))?;
        if !out.status.success() {
            return Err(format!("nvcc's dependency file failed ({})", out.status));
        }
    }
    Ok(Built::Edited { stdout, stderr, applied, warnings })
}

/// The command without its dependency-file flags, and (where it has them)
/// the command that writes that file alone: `-MD`/`-MMD` as `-M`/`-MM`,
/// without `-c` and `-o`.
fn dependencies_apart(args: &[String]) -> (Vec<String>, Option<Vec<String>>) {
    const WITH_COMPILE: &[(&str, &str)] = &[
        ("-MD", "-M"),
        ("-MMD", "-MM"),
        ("--generate-dependencies-with-compile", "-M"),
        ("--generate-nonsystem-dependencies-with-compile", "-MM"),
    ];
    const VALUED: &[&str] = &["-MF", "--dependency-output", "-MT", "--dependency-target-name", "-MQ"];
    let Some(&(_, alone)) = WITH_COMPILE.iter().find(|(f, _)| args.iter().any(|a| a == f)) else { return (args.to_vec(), None) };
    let (mut compile, mut depend) = (Vec::new(), vec![alone.to_string()]);
    let mut words = args.iter();
    while let Some(a) = words.next() {
        if WITH_COMPILE.iter().any(|(f, _)| a == f) {
            continue;
        }
        if VALUED.contains(&a.as_str()) {
            depend.push(a.clone());
            depend.extend(words.next().cloned());
            continue;
        }
        if a == "-MP" || VALUED.iter().any(|f| a.starts_with(&format!("{f}="))) {
            depend.push(a.clone());
            continue;
        }
        compile.push(a.clone());
        if a == "-o" || a == "--output-file" {
            compile.extend(words.next().cloned());
            continue;
        }
        if a != "-c" && a != "--compile" && !a.starts_with("--output-file=") {
            depend.push(a.clone());
        }
    }
    (compile, Some(depend))
}

/// A device compile nvcc finishes itself: a CUDA source, no relocatable
/// device code (nvlink links it), no preprocess-, dependency- or PTX-only run.
fn compiles_device_code(args: &[String]) -> bool {
    let cuda = args.iter().any(|a| a.ends_with(".cu")) || args.windows(2).any(|w| w[0] == "-x" && w[1] == "cu");
    let stops_early = ["-E", "-M", "-MM", "-ptx", "--ptx", "-dryrun", "--dryrun", "--preprocess", "-fatbin", "--fatbin", "-cuda", "--cuda"];
    cuda && build::unsupported(args).is_none() && !args.iter().any(|a| stops_early.contains(&a.as_str()))
}

/// The compile the wrapper builds: nvcc, the db, nvcc's arguments, and
/// where nvcc's steps keep their files (the wrapper's own among them).
struct Unit<'a> {
    nvcc: &'a Nvcc,
    db: &'a Db,
    args: &'a [String],
    keep_dir: &'a Path,
}

/// Edit the PTX a `ptxas` step (`steps.commands[at]`) is about to read
/// for the db's decisions; the labels applied, per kernel. A kernel's
/// `-maxrregcount=R` takes its entry from cicc's PTX at R ([`capped`]), a
/// rewrite of the source from nvcc's PTX of the rewritten source
/// ([`rewritten`]).
fn edit(unit: &Unit<'_>, steps: &Steps, at: usize, line: &build::PtxasLine) -> Result<Applied, String> {
    let (nvcc, db, dir) = (unit.nvcc, unit.db, unit.keep_dir);
    let Ok(arch) = Arch::parse(&line.arch) else { return Ok(Applied::default()) };
    let ptx_path = PathBuf::from(&line.input);
    let ptx = std::fs::read_to_string(&ptx_path).map_err(|e| format!("cannot read {}: {e}", ptx_path.display()))?;
    let tool = if line.tool.contains('/') { PathBuf::from(&line.tool) } else { nvcc.ptxas() };
    let kept = Kept::of_ptx(ptx, line.args.clone(), tool);
    let hash = kept.input_hash(nvcc, &arch);
    let entries: Vec<&Entry> = db.kernels.values().filter(|e| e.arch == arch.processor() && e.input_hash == hash).collect();
    if entries.is_empty() {
        return Ok(Applied { warnings: stale(db, &kept.ptx, &arch).into_iter().collect(), ..Applied::default() });
    }
    let mut decided: Vec<(String, Transforms)> =
        entries.iter().map(|e| (e.symbol.clone(), e.effective())).filter(|(_, t)| !t.is_empty()).collect();
    let label = |(symbol, t): &(String, Transforms)| format!("{} on {}: {}", crate::names::short(symbol), arch, t.labels().join(" + "));
    let labels: Vec<(String, String)> = decided.iter().map(|d| (d.0.clone(), label(d))).collect();
    let (mut ptx, mut warnings, mut plain) = (kept.ptx.clone(), Vec::new(), Vec::new());
    // Rewrites of the source first: the kernel's entry from that build, its
    // entry edits (a cap) then on top as on nvcc's own.
    let rewrites = |t: &Transforms| !build::split(t).1.is_empty();
    let rewriting: Vec<(String, Transforms)> = decided.iter().filter(|(_, t)| rewrites(t)).cloned().collect();
    if !rewriting.is_empty() {
        match rewritten(unit, &arch, &kept, &rewriting) {
            Ok(spliced) => {
                ptx = spliced;
                for (_, t) in decided.iter_mut().filter(|(_, t)| rewrites(t)) {
                    *t = build::split(t).0;
                }
            }
            Err(why) => {
                let names: Vec<String> = rewriting.iter().map(|(s, _)| crate::names::short(s)).collect();
                warnings.push(format!("rewrites of the source not applied on {arch}: {why}; built plain: {}", names.join(", ")));
                plain.extend(rewriting.iter().map(|(s, _)| s.clone()));
                decided.retain(|(_, t)| !rewrites(t));
            }
        }
    }
    let wanted: Vec<(String, u32)> = decided.iter().filter_map(|(symbol, t)| Some((symbol.clone(), t.maxrregcount?))).collect();
    if !wanted.is_empty() {
        match capped(Capped { steps, at, line, ptx: &ptx, wanted: &wanted, dir }) {
            Ok(spliced) => ptx = spliced,
            Err(why) => {
                let names: Vec<String> = wanted.iter().map(|(s, _)| crate::names::short(s)).collect();
                warnings.push(format!("-maxrregcount not applied on {arch}: {why}; built plain: {}", names.join(", ")));
                plain.extend(wanted.iter().map(|(s, _)| s.clone()));
                decided.retain(|(_, t)| t.maxrregcount.is_none());
            }
        }
    }
    let applied: Vec<String> = labels.into_iter().filter(|(s, _)| !plain.contains(s)).map(|(_, l)| l).collect();
    let others: Vec<(String, Transforms)> = decided.into_iter().filter(|(_, t)| t.maxrregcount.is_none() && !t.is_empty()).collect();
    if ptx != kept.ptx || !others.is_empty() {
        let edited = Kept { ptx, ..kept }.edited(&others)?;
        std::fs::write(&ptx_path, edited).map_err(|e| format!("cannot write {}: {e}", ptx_path.display()))?;
    }
    Ok(Applied { applied, warnings })
}

/// nvcc's PTX `kept` with each kernel of `rewriting` given its entry from
/// nvcc's PTX of the source as `regtune fix` writes that kernel's
/// rewrites (fix/spell.rs's [`Speller`], as tune built them: one build per
/// kernel, its own rewrites alone), in the unit's keep directory. Err: why
/// not (no source, no clang or pass plugin for fix's reading of it, fix
/// cannot write it, an entry that cannot be taken).
fn rewritten(unit: &Unit<'_>, arch: &Arch, kept: &Kept, rewriting: &[(String, Transforms)]) -> Result<String, String> {
    let source = source_of(unit.args).ok_or("nvcc's arguments name no CUDA source")?;
    let user_args: Vec<String> = build::compile_args(unit.args).into_iter().filter(|a| Path::new(a) != source).collect();
    let toolchain = crate::toolchain::Toolchain::detect_for(false).map_err(|e| e.to_string())?;
    let plugin = crate::plugin::find().map_err(|e| e.to_string())?;
    let kernels = build::entry_names(&kept.ptx);
    let speller = Speller::new(&toolchain, &plugin, unit.nvcc, arch, source, &user_args, unit.keep_dir, kernels)?;
    let mut ptx = kept.ptx.clone();
    for (i, (symbol, t)) in rewriting.iter().enumerate() {
        let scratch = unit.keep_dir.join(format!("rewrite-{i}"));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let built = speller.build(&[(symbol.clone(), build::split(t).1)], kept, &scratch, None).map_err(|e| e.to_string())?;
        ptx = splice::take_entry(&ptx, &built.ptx, symbol, None, splice::Calls::AsBuilt)
            .map_err(|why| format!("{}: {why}", crate::names::short(symbol)))?;
    }
    Ok(ptx)
}

/// The CUDA source nvcc's arguments compile.
fn source_of(args: &[String]) -> Option<&Path> {
    let cuda = args.windows(2).any(|w| w[0] == "-x" && w[1] == "cu");
    args.iter().map(Path::new).find(|p| p.extension().is_some_and(|e| e == "cu" || (cuda && !e.is_empty())) && p.is_file())
}

/// Where the db decides for this PTX's kernels on `arch` but under another
/// input hash (tuned with another nvcc, runtime headers, flags or source:
/// nvcc's PTX differs, line information included), the line that says so;
/// the build is plain, as without a db.
fn stale(db: &Db, ptx: &str, arch: &Arch) -> Option<String> {
    let kernels = build::entry_names(ptx);
    let mut decided: Vec<String> = db
        .kernels
        .values()
        .filter(|e| e.arch == arch.processor() && kernels.contains(&e.symbol) && !e.effective().is_empty())
        .map(|e| crate::names::short(&e.symbol))
        .collect();
    decided.sort();
    decided.dedup();
    (!decided.is_empty()).then(|| {
        format!(
            "{} on {arch}: the db's decisions were tuned from other inputs (another nvcc or runtime headers, other flags, or an edited source: nvcc's PTX differs); built plain: run `regtune tune --compiler nvcc` again",
            decided.join(", ")
        )
    })
}

/// What [`capped`] works on: the ptxas step `steps.commands[at]`
/// (`line`), its PTX as nvcc made it, the kernels that chose a
/// `-maxrregcount` (symbol, R).
struct Capped<'a> {
    steps: &'a Steps,
    at: usize,
    line: &'a build::PtxasLine,
    ptx: &'a str,
    wanted: &'a [(String, u32)],
    dir: &'a Path,
}

/// The PTX with each kernel of `c.wanted` given its entry at its R: nvcc's
/// cicc step again with `-maxreg R` (its PTX in `c.dir`), once per R, the
/// entries spliced. Err: why not (no cicc step, cicc failed, an entry that
/// cannot be taken).
fn capped(c: Capped<'_>) -> Result<String, String> {
    let Some(cicc) = c.steps.cicc_writing(c.at, &c.line.input) else {
        return Err(format!("nvcc's steps show no cicc run that writes {}", c.line.input));
    };
    let mut ptxs = std::collections::BTreeMap::new();
    for &(_, r) in c.wanted {
        if ptxs.contains_key(&r) {
            continue;
        }
        let scratch = c.dir.join(format!("maxrregcount-{r}-{}", c.at));
        std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let ptx_r = scratch.join("capped.ptx");
        let command = cicc_with_maxreg(&c.steps.commands[cicc], r, &c.line.input, &ptx_r, &scratch)
            .ok_or_else(|| format!("cannot read nvcc's cicc step for {}", c.line.input))?;
        let out = c.steps.run_script(&[command])?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            return Err(format!("cicc -maxreg {r} failed ({}: {})", out.status, said.lines().next().unwrap_or_default().trim()));
        }
        ptxs.insert(r, std::fs::read_to_string(&ptx_r).map_err(|e| format!("cannot read {}: {e}", ptx_r.display()))?);
    }
    splice::splice(c.ptx, c.wanted, &ptxs)
}

/// nvcc's cicc step (`command`, as `--dryrun` printed it) with `-maxreg R`
/// (what nvcc's `-maxrregcount=R` gives cicc) in place of its own or where
/// nvcc puts it, writing its PTX to `ptx` instead of `input`, and its other
/// outputs (host stubs) into `scratch`: nvcc's own files stay untouched.
/// None: not a cicc step writing `input`.
fn cicc_with_maxreg(command: &str, r: u32, input: &str, ptx: &Path, scratch: &Path) -> Option<String> {
    let words = shlex::split(command)?;
    if !words.first()?.ends_with("cicc") {
        return None;
    }
    let output = words.iter().position(|w| w == "-o")?;
    if words.get(output + 1)? != input {
        return None;
    }
    let quoted = |p: &str| format!("\"{p}\"");
    // The value of `option` as printed: quoted, or a bare word.
    let replace_value = |text: String, option: &str, value: &str, new: &str| {
        let (q, bare) = (format!("{option} {}", quoted(value)), format!("{option} {value}"));
        let new = format!("{option} {}", quoted(new));
        if text.contains(&q) {
            text.replacen(&q, &new, 1)
        } else {
            text.replacen(&bare, &new, 1)
        }
    };
    let mut text = replace_value(command.to_string(), "-o", input, &ptx.display().to_string());
    for option in ["--gen_c_file_name", "--stub_file_name", "--gen_device_file_name"] {
        if let Some(value) = words.iter().position(|w| w == option).and_then(|i| words.get(i + 1)) {
            let name = Path::new(value).file_name()?.to_string_lossy().into_owned();
            text = replace_value(text, option, value, &scratch.join(name).display().to_string());
        }
    }
    // The module id nvcc's first run wrote is read, not made again.
    text = text.replace(" --gen_module_id_file ", " ");
    match words.iter().position(|w| w == "-maxreg").and_then(|i| words.get(i + 1)) {
        Some(old) => text = text.replacen(&format!("-maxreg {old}"), &format!("-maxreg {r}"), 1),
        None if text.contains(" -tused") => text = text.replacen(" -tused", &format!(" -maxreg {r} -tused"), 1),
        None => text = text.replacen(" -o ", &format!(" -maxreg {r} -o "), 1),
    }
    Some(text)
}

/// What one PTX got: the decisions applied, and why any was not (a line each).
#[derive(Default)]
struct Applied {
    applied: Vec<String>,
    warnings: Vec<String>,
}

/// nvcc's steps as `--dryrun` printed them.
struct Steps {
    /// `NAME=value` lines, which every later step reads (`$CICC_PATH`, `PATH`).
    assignments: Vec<String>,
    commands: Vec<String>,
    /// Each ptxas step: its index in `commands`, and what it reads.
    ptxas: Vec<(usize, build::PtxasLine)>,
}

impl Steps {
    fn read(dryrun: &str) -> Steps {
        let lines: Vec<&str> = dryrun.lines().filter_map(|l| l.strip_prefix("#$ ")).collect();
        let is_assignment = |l: &str| {
            let name = l.split('=').next().unwrap_or_default();
            l.contains('=') && !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let split = lines.iter().position(|l| !is_assignment(l)).unwrap_or(lines.len());
        let commands: Vec<String> = lines[split..].iter().map(|l| l.to_string()).collect();
        let ptxas = commands
            .iter()
            .enumerate()
            .filter_map(|(i, c)| build::ptxas_lines(&format!("#$ {c}")).into_iter().next().map(|p| (i, p)))
            .collect();
        Steps { assignments: lines[..split].iter().map(|l| l.to_string()).collect(), commands, ptxas }
    }

    /// Run `commands[range]` in one shell after the assignments, stopping at
    /// the first that fails; their output passes through.
    fn run(&self, range: std::ops::Range<usize>) -> Result<std::process::Output, String> {
        self.run_script(&self.commands[range])
    }

    /// Run `commands` as [`Steps::run`] runs nvcc's.
    fn run_script(&self, commands: &[String]) -> Result<std::process::Output, String> {
        let mut script = vec!["set -e".to_string()];
        // nvcc's values are raw text (`SYSTEM_INCLUDES="-isystem" "dir"`): quoted whole.
        script.extend(self.assignments.iter().map(|a| {
            let (name, value) = a.split_once('=').unwrap_or((a, ""));
            format!("{name}='{}'", value.replace('\'', "'\\''"))
        }));
        script.extend(commands.iter().cloned());
        Command::new("sh").arg("-c").arg(script.join("\n")).output().map_err(|e| format!("cannot run sh for nvcc's steps: {e}"))
    }

    /// The last cicc step before `commands[at]` that writes `ptx`.
    fn cicc_writing(&self, at: usize, ptx: &str) -> Option<usize> {
        (0..at).rev().find(|&i| {
            shlex::split(&self.commands[i])
                .is_some_and(|w| w.first().is_some_and(|t| t.ends_with("cicc")) && w.windows(2).any(|p| p[0] == "-o" && p[1] == ptx))
        })
    }
}

/// The arguments as strings (nvcc's are), or None.
pub(crate) fn strings(args: &[OsString]) -> Option<Vec<String>> {
    args.iter().map(|a| a.to_str().map(String::from)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvccs_steps_split_into_assignments_and_commands() {
        let dryrun = "#$ _SPACE_= \n#$ PATH=/n/bin:$PATH\n#$ INCLUDES=\"-I/n/include\"\n#$ gcc -E k.cu -o k.ii\n\
#$ \"$CICC_PATH/cicc\" -arch compute_90 k.ii -o \"d/k.ptx\"\n#$ ptxas -arch=sm_90 -m64 \"d/k.ptx\" -o \"d/k.sm_90.cubin\"\n#$ fatbinary -64\n";
        let steps = Steps::read(dryrun);
        assert_eq!(steps.assignments, ["_SPACE_= ", "PATH=/n/bin:$PATH", "INCLUDES=\"-I/n/include\""]);
        assert_eq!(steps.commands.len(), 4);
        assert_eq!(steps.ptxas.len(), 1);
        assert_eq!((steps.ptxas[0].0, steps.ptxas[0].1.input.as_str()), (2, "d/k.ptx"));
    }

    #[test]
    fn ciccs_step_again_with_maxreg_writes_files_of_its_own() {
        let cicc = "\"$CICC_PATH/cicc\" --c++17 --orig_src_file_name \"k.cu\" -arch compute_90 -m64 --include_file_name \"k.fatbin.c\" \
-tused --gen_module_id_file --module_id_file_name \"d/k.module_id\" --gen_c_file_name \"d/k.cudafe1.c\" \
--stub_file_name \"d/k.cudafe1.stub.c\" --gen_device_file_name \"d/k.cudafe1.gpu\"  \"d/k.cpp1.ii\" -o \"d/k.ptx\"";
        let (ptx, scratch) = (Path::new("/w/file-wide.ptx"), Path::new("/w"));
        let out = cicc_with_maxreg(cicc, 64, "d/k.ptx", ptx, scratch).unwrap();
        assert!(out.starts_with("\"$CICC_PATH/cicc\""), "the shell expands it as nvcc's does: {out}");
        assert!(out.contains("\"k.fatbin.c\" -maxreg 64 -tused --module_id_file_name \"d/k.module_id\""), "{out}");
        assert!(out.contains("--gen_c_file_name \"/w/k.cudafe1.c\" --stub_file_name \"/w/k.cudafe1.stub.c\""), "{out}");
        assert!(out.contains("--gen_device_file_name \"/w/k.cudafe1.gpu\""), "{out}");
        assert!(out.ends_with("\"d/k.cpp1.ii\" -o \"/w/file-wide.ptx\""), "{out}");
        // The user's own -maxrregcount (cicc's -maxreg) is replaced.
        let theirs = cicc.replace(" -tused", " -maxreg 32 -tused");
        let out = cicc_with_maxreg(&theirs, 48, "d/k.ptx", ptx, scratch).unwrap();
        assert!(out.contains(" -maxreg 48 -tused") && !out.contains("-maxreg 32"), "{out}");
        assert_eq!(cicc_with_maxreg(cicc, 64, "d/other.ptx", ptx, scratch), None, "not the step that writes it");
        assert_eq!(cicc_with_maxreg("ptxas -arch=sm_90 -o \"d/k.ptx\"", 64, "d/k.ptx", ptx, scratch), None);
        let steps = Steps::read(&format!("#$ PATH=/n/bin\n#$ {cicc}\n#$ ptxas -arch=sm_90 -m64 \"d/k.ptx\" -o \"d/k.sm_90.cubin\"\n"));
        assert_eq!((steps.cicc_writing(1, "d/k.ptx"), steps.cicc_writing(1, "d/j.ptx")), (Some(0), None));
    }

    #[test]
    fn the_dependency_file_is_written_apart() {
        let args: Vec<String> =
            ["-O3", "-MD", "-MT", "k.o", "-MF", "k.o.d", "-x", "cu", "-c", "k.cu", "-o", "k.o"].iter().map(|s| s.to_string()).collect();
        let (compile, depend) = dependencies_apart(&args);
        assert_eq!(compile, ["-O3", "-x", "cu", "-c", "k.cu", "-o", "k.o"]);
        assert_eq!(depend.unwrap(), ["-M", "-O3", "-MT", "k.o", "-MF", "k.o.d", "-x", "cu", "k.cu"]);
        assert_eq!(dependencies_apart(&args[6..]), (args[6..].to_vec(), None));
    }

    #[test]
    fn only_device_compiles_are_edited() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(compiles_device_code(&args(&["-O3", "-c", "k.cu", "-o", "k.o"])));
        assert!(compiles_device_code(&args(&["-x", "cu", "-c", "k.hip"])));
        assert!(!compiles_device_code(&args(&["k.o", "-o", "app"])));
        assert!(!compiles_device_code(&args(&["-E", "k.cu"])));
        assert!(!compiles_device_code(&args(&["-dc", "k.cu"])));
    }
}
