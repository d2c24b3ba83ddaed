//! Assemble PTX with ptxas, as clang's CUDA device compile does, and read
//! its `-v` report: per function, registers, barriers, stack frame, spill
//! stores and loads, and shared memory.
//!
//! clang runs `ptxas -m64 -O<n> --gpu-name sm_XX --output-file out.cubin
//! in.s` (no `-c`: a complete, loadable cubin); regtune runs the same
//! command with `-v` added, so the cubin is the one the user's build makes.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use crate::gpu::Arch;
use crate::hash;
use crate::job::{self, JobError};
use crate::toolchain::cuda::Cuda;

#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    #[error("cannot run {}: {source}", tool.display())]
    Spawn { tool: std::path::PathBuf, source: std::io::Error },
    /// ptxas's own messages are in `diagnostics`.
    #[error("ptxas failed to assemble {} for {arch} ({status})", file.display())]
    Failed { file: std::path::PathBuf, arch: String, status: String, diagnostics: String },
    #[error("cannot write {}: {source}", file.display())]
    Write { file: std::path::PathBuf, source: std::io::Error },
    #[error("ptxas ran past its time limit on {} for {arch} ({seconds:.1} s) and was stopped", file.display())]
    TimedOut { file: std::path::PathBuf, arch: String, seconds: f64 },
}

/// One function as `ptxas -v` describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FunctionInfo {
    pub name: String,
    /// "Compiling entry function": a kernel.
    pub entry: bool,
    pub registers: u32,
    pub barriers: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// Static shared memory per block (`bytes smem`).
    pub shared_bytes: u32,
}

/// ptxas's optimization level for the user's clang flags, as clang's CUDA
/// driver maps them: the last `-O` wins (`-O0`..`-O3` as given, `-Ofast` and
/// `-O4` are 3, `-Os`/`-Oz` 2, a bare `-O` 1); none means 3.
pub(crate) fn opt_level(user_args: &[String]) -> &'static str {
    let last = user_args.iter().rev().find(|a| a.starts_with("-O"));
    match last.map(String::as_str) {
        Some("-O0") => "-O0",
        Some("-O1") | Some("-O") => "-O1",
        Some("-O2") | Some("-Os") | Some("-Oz") => "-O2",
        _ => "-O3",
    }
}

/// Arguments the user passed to ptxas through clang (`-Xcuda-ptxas X`).
pub(crate) fn user_ptxas_args(user_args: &[String]) -> Vec<String> {
    user_args.windows(2).filter(|w| w[0] == "-Xcuda-ptxas").map(|w| w[1].clone()).collect()
}

/// `ptxas -v` on `ptx` into `cubin`, stopped at `deadline`; returns ptxas's
/// report (stdout and stderr). A PTX this process assembled already with the
/// same ptxas and arguments is not assembled again ([`ASSEMBLED`]).
pub(crate) fn assemble(
    cuda: &Cuda,
    arch: &Arch,
    ptx: &Path,
    cubin: &Path,
    user_args: &[String],
    deadline: Option<Instant>,
) -> Result<String, PtxasError> {
    let mut args: Vec<OsString> = vec!["-m64".into(), opt_level(user_args).into(), "--gpu-name".into(), arch.processor().into()];
    args.extend(user_ptxas_args(user_args).into_iter().map(OsString::from));
    args.push("-v".into());
    assemble_with((&cuda.ptxas(), &cuda.ptxas_version), args, arch, ptx, cubin, deadline)
}

/// `tool args --output-file cubin ptx` (`args` ending in `-v`), through the
/// cache: the ptxas (its path and version) and its arguments as another
/// compiler driver runs them (nvcc's own ptxas line).
pub(crate) fn assemble_with(
    (tool, version): (&Path, &str),
    args: Vec<OsString>,
    arch: &Arch,
    ptx: &Path,
    cubin: &Path,
    deadline: Option<Instant>,
) -> Result<String, PtxasError> {
    let Ok(text) = std::fs::read(ptx) else { return run(tool, args, arch, ptx, cubin, deadline) };
    let key = hash::of_parts(
        [tool.as_os_str().as_encoded_bytes(), version.as_bytes(), &text].into_iter().chain(args.iter().map(|a| a.as_encoded_bytes())),
    );
    let slot = ASSEMBLED.lock().expect("ptxas cache lock").slots.entry(key).or_default().clone();
    // Held while ptxas runs: a variant with the same PTX waits for it.
    let mut slot = slot.lock().expect("ptxas slot lock");
    if let Some(done) = slot.as_ref() {
        std::fs::write(cubin, &done.cubin).map_err(|source| PtxasError::Write { file: cubin.into(), source })?;
        return Ok(done.report.clone());
    }
    // A failure leaves the slot empty: the next caller tries for itself.
    let report = run(tool, args, arch, ptx, cubin, deadline)?;
    if let Ok(bytes) = std::fs::read(cubin) {
        let mut cache = ASSEMBLED.lock().expect("ptxas cache lock");
        if cache.bytes + bytes.len() <= CACHE_BYTES {
            cache.bytes += bytes.len();
            *slot = Some(Assembled { cubin: bytes, report: report.clone() });
        }
    }
    Ok(report)
}

/// ptxas is a pure function of its input and arguments, and variants whose
/// transforms leave a kernel's PTX as it was (a sink with nothing to move,
/// an unroll cap above every loop's count) are common: tuning
/// bf16TensorCoreGemm ran ptxas 29 times, 10 of them on a PTX it had
/// assembled before, at 20-33 s each. Keyed by the ptxas, its arguments
/// and the PTX; the cubins kept are bounded by [`CACHE_BYTES`].
static ASSEMBLED: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

/// The most cubin bytes the cache keeps (a batch over a whole codebase
/// assembles thousands of variants); past it, ptxas runs again.
const CACHE_BYTES: usize = 256 << 20;

#[derive(Default)]
struct Cache {
    slots: HashMap<String, Arc<Mutex<Option<Assembled>>>>,
    bytes: usize,
}

struct Assembled {
    cubin: Vec<u8>,
    report: String,
}

/// Run `tool args --output-file cubin ptx`.
fn run(
    tool: &Path,
    mut args: Vec<OsString>,
    arch: &Arch,
    ptx: &Path,
    cubin: &Path,
    deadline: Option<Instant>,
) -> Result<String, PtxasError> {
    args.push("--output-file".into());
    args.push(cubin.into());
    args.push(ptx.into());
    let mut cmd = Command::new(tool);
    cmd.args(&args);
    let out = job::run(cmd, deadline).map_err(|e| match e {
        JobError::Spawn(source) => PtxasError::Spawn { tool: tool.to_path_buf(), source },
        JobError::TimedOut(after) => PtxasError::TimedOut { file: ptx.into(), arch: arch.to_string(), seconds: after.as_secs_f64() },
    })?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(PtxasError::Failed { file: ptx.into(), arch: arch.to_string(), status: out.status.to_string(), diagnostics: text });
    }
    Ok(text)
}

/// Every function `ptxas -v` reported, in its order.
///
/// ```text
/// ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
/// ptxas info    : Function properties for _Z1kPf
///     384 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
/// ptxas info    : Used 128 registers, used 1 barriers, 384 bytes cumulative stack size, 2400 bytes smem
/// ```
///
/// Device functions get a "Function properties" block without a "Used"
/// line. (clang prints the same lines for `-Xcuda-ptxas -v`.)
pub(crate) fn parse(report: &str) -> Vec<FunctionInfo> {
    let mut out: Vec<FunctionInfo> = Vec::new();
    // Which function the next numbers belong to.
    let mut current: Option<usize> = None;
    let index = |out: &mut Vec<FunctionInfo>, name: &str| -> usize {
        match out.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                out.push(FunctionInfo { name: name.to_string(), ..Default::default() });
                out.len() - 1
            }
        }
    };
    for line in report.lines() {
        let body = line.split_once("info    :").map_or(line, |(_, b)| b).trim();
        if let Some(rest) = body.strip_prefix("Compiling entry function '") {
            let name = rest.split('\'').next().unwrap_or_default();
            let i = index(&mut out, name);
            out[i].entry = true;
            current = Some(i);
        } else if let Some(name) = body.strip_prefix("Function properties for ") {
            current = Some(index(&mut out, name.trim()));
        } else if let Some(i) = current {
            let f = &mut out[i];
            for part in body.split(',').map(str::trim) {
                let mut words = part.split_whitespace();
                let (first, rest) = (words.next().unwrap_or_default(), words.collect::<Vec<_>>().join(" "));
                if let Some(n) = part.strip_prefix("Used ").and_then(|p| p.strip_suffix(" registers")) {
                    f.registers = n.trim().parse().unwrap_or(0);
                    continue;
                }
                if let Some(n) = part.strip_prefix("used ").and_then(|p| p.strip_suffix(" barriers")) {
                    f.barriers = n.trim().parse().unwrap_or(0);
                    continue;
                }
                // With `enable_smem_spilling` ptxas reports the spills it moved to
                // shared memory as negative local ones ("-48 bytes spill stores"):
                // none left in local memory.
                let Ok(n) = first.parse::<i64>().map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX)) else { continue };
                match rest.as_str() {
                    "bytes stack frame" => f.stack_frame_bytes = n,
                    "bytes spill stores" => f.spill_store_bytes = n,
                    "bytes spill loads" => f.spill_load_bytes = n,
                    "bytes smem" => f.shared_bytes = n,
                    _ => {}
                }
            }
            if body.starts_with("Compile time") {
                current = None;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in ptxas that counts its runs and writes its input as the cubin.
    fn counting_cuda(dir: &Path) -> Cuda {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let script = format!(
            "#!/bin/sh\necho run >> {}\nwhile [ $# -gt 1 ]; do [ \"$1\" = --output-file ] && out=$2; shift; done\ncp \"$1\" \"$out\"\necho \"ptxas info    : Used 8 registers\"\n",
            dir.join("runs").display()
        );
        std::fs::write(bin.join("ptxas"), script).unwrap();
        let mut perms = std::fs::metadata(bin.join("ptxas")).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(bin.join("ptxas"), perms).unwrap();
        Cuda { root: dir.to_path_buf(), version: "test".into(), ptxas_version: "test".into() }
    }

    #[test]
    fn a_ptx_assembled_before_is_not_assembled_again() {
        let dir = tempfile::tempdir().unwrap();
        let cuda = counting_cuda(dir.path());
        let arch = Arch::parse("sm_90").unwrap();
        let (ptx, other) = (dir.path().join("a.ptx"), dir.path().join("b.ptx"));
        std::fs::write(&ptx, "// the same PTX\n").unwrap();
        std::fs::write(&other, "// another PTX\n").unwrap();
        let runs = || std::fs::read_to_string(dir.path().join("runs")).unwrap_or_default().lines().count();
        let cubin = |n: &str| dir.path().join(n);
        let first = assemble(&cuda, &arch, &ptx, &cubin("1.cubin"), &[], None).unwrap();
        let again = assemble(&cuda, &arch, &ptx, &cubin("2.cubin"), &[], None).unwrap();
        assert_eq!((runs(), &first), (1, &again));
        assert_eq!(std::fs::read(cubin("2.cubin")).unwrap(), b"// the same PTX\n");
        // Another PTX, or other arguments (-O2), run ptxas.
        assemble(&cuda, &arch, &other, &cubin("3.cubin"), &[], None).unwrap();
        assemble(&cuda, &arch, &ptx, &cubin("4.cubin"), &["-O2".to_string()], None).unwrap();
        assert_eq!(runs(), 3);
    }

    #[test]
    fn spills_moved_to_shared_memory_leave_no_local_spills() {
        // ptxas 12.9 and 13.0 with `.pragma "enable_smem_spilling";` and `.maxnreg 64`.
        let report = "ptxas info    : Compiling entry function '_Z3lapPKdPdi' for 'sm_90'\n\
ptxas info    : Function properties for _Z3lapPKdPdi\n\
    0 bytes stack frame, -84 bytes spill stores, -100 bytes spill loads\n\
ptxas info    : Used 64 registers, used 0 barriers, 16384 bytes smem\n";
        let f = &parse(report)[0];
        assert_eq!((f.registers, f.spill_store_bytes, f.spill_load_bytes, f.shared_bytes), (64, 0, 0, 16384));
    }

    const REPORT: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5plainPf' for 'sm_90'
ptxas info    : Function properties for _Z5plainPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 2.437 ms
ptxas info    : Compiling entry function '_Z5spillPdPKdi' for 'sm_90'
ptxas info    : Function properties for _Z5spillPdPKdi
    384 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 384 bytes cumulative stack size, 2400 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 470.664 ms
ptxas info    : Function properties for __internal_accurate_pow
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";

    #[test]
    fn entry_functions_and_their_numbers() {
        let fs = parse(REPORT);
        assert_eq!(fs.len(), 3);
        assert_eq!(
            fs[1],
            FunctionInfo {
                name: "_Z5spillPdPKdi".into(),
                entry: true,
                registers: 128,
                barriers: 1,
                stack_frame_bytes: 384,
                spill_store_bytes: 16,
                spill_load_bytes: 24,
                shared_bytes: 2400,
            }
        );
        assert_eq!((fs[0].registers, fs[0].shared_bytes), (8, 0));
        assert!(!fs[2].entry);
        assert_eq!(fs[2].stack_frame_bytes, 8);
    }

    #[test]
    fn optimization_levels_follow_clangs_mapping() {
        let a = |v: &[&str]| opt_level(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&[]), "-O3");
        assert_eq!(a(&["-O0"]), "-O0");
        assert_eq!(a(&["-O0", "-O2"]), "-O2");
        assert_eq!(a(&["-Os"]), "-O2");
        assert_eq!(a(&["-Ofast"]), "-O3");
        assert_eq!(a(&["-I", "x", "-O1"]), "-O1");
    }

    #[test]
    fn ptxas_arguments_pass_through() {
        let v: Vec<String> = ["-Xcuda-ptxas", "-maxrregcount=64", "-DX"].iter().map(|s| s.to_string()).collect();
        assert_eq!(user_ptxas_args(&v), ["-maxrregcount=64"]);
    }
}
