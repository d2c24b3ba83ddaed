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
//! Never breaking a build: the steps' output is held until they all
//! succeed; anything regtune cannot do (a db it cannot read, a step that
//! fails with the edits, an unreadable PTX) builds with nvcc untouched
//! instead, which says why in one line if that build succeeds. A build
//! with no decision for it runs nvcc untouched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use regtune_decisions::{Db, Transforms};

use crate::gpu::nvptx::nvcc::{self as build, Kept};
use crate::gpu::Arch;
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
    /// what they printed; the decisions left plain (they rewrite the source).
    Edited { stdout: Vec<u8>, stderr: Vec<u8>, applied: Vec<String>, left_plain: Vec<String> },
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
    let (mut applied, mut left_plain, mut stdout, mut stderr) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut done = 0;
    let ends = steps.ptxas.iter().map(|(at, line)| (*at, Some(line))).chain([(steps.commands.len(), None)]);
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
            let got = edit(&nvcc, &db, line)?;
            applied.extend(got.applied);
            left_plain.extend(got.left_plain);
        }
    }
    if applied.is_empty() && left_plain.is_empty() {
        return Ok(Built::Plain);
    }
    if let Some(depend) = depend {
        let out = Command::new(&nvcc.path).args(&depend).output().map_err(|e| format!("cannot run {}: {e}", nvcc.path.display()))?;
        if !out.status.success() {
            return Err(format!("nvcc's dependency file failed ({})", out.status));
        }
    }
    Ok(Built::Edited { stdout, stderr, applied, left_plain })
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

/// Edit the PTX a `ptxas` step is about to read for the db's decisions;
/// the labels applied, per kernel.
fn edit(nvcc: &Nvcc, db: &Db, line: &build::PtxasLine) -> Result<Applied, String> {
    let Ok(arch) = Arch::parse(&line.arch) else { return Ok(Applied::default()) };
    let ptx_path = PathBuf::from(&line.input);
    let ptx = std::fs::read_to_string(&ptx_path).map_err(|e| format!("cannot read {}: {e}", ptx_path.display()))?;
    let tool = if line.tool.contains('/') { PathBuf::from(&line.tool) } else { nvcc.ptxas() };
    let kept = Kept::of_ptx(ptx, line.args.clone(), tool);
    let hash = kept.input_hash(nvcc, &arch);
    let decided: Vec<(String, Transforms)> = db
        .kernels
        .values()
        .filter(|e| e.arch == arch.processor() && e.input_hash == hash)
        .map(|e| (e.symbol.clone(), e.effective()))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let label = |(symbol, t): &(String, Transforms)| {
        format!(
            "{} on {}: {}",
            crate::names::short_name(&crate::names::demangle(symbol)),
            arch,
            crate::gpu::labels(t, &arch, &[]).join(" + ")
        )
    };
    // A decision that rewrites the source is no PTX edit: that kernel is
    // built plain (its cap alone was never measured), the others as decided.
    let (variant, rewrites): (Vec<_>, Vec<_>) = decided.into_iter().partition(|(_, t)| build::split(t).1.is_empty());
    let left_plain: Vec<String> = rewrites.iter().map(label).collect();
    if !variant.is_empty() {
        let edited = kept.edited(&variant)?;
        std::fs::write(&ptx_path, edited).map_err(|e| format!("cannot write {}: {e}", ptx_path.display()))?;
    }
    Ok(Applied { applied: variant.iter().map(label).collect(), left_plain })
}

/// What one PTX got: the decisions applied, and those left plain because
/// they rewrite the source (labels).
#[derive(Default)]
struct Applied {
    applied: Vec<String>,
    left_plain: Vec<String>,
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
        let mut script = vec!["set -e".to_string()];
        // nvcc's values are raw text (`SYSTEM_INCLUDES="-isystem" "dir"`): quoted whole.
        script.extend(self.assignments.iter().map(|a| {
            let (name, value) = a.split_once('=').unwrap_or((a, ""));
            format!("{name}='{}'", value.replace('\'', "'\\''"))
        }));
        script.extend(self.commands[range].iter().cloned());
        Command::new("sh").arg("-c").arg(script.join("\n")).output().map_err(|e| format!("cannot run sh for nvcc's steps: {e}"))
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
