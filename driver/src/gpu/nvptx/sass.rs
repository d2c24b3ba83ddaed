//! Local-memory accesses of a cubin's kernels, read from their SASS (the
//! final code, by `nvdisasm`): every `LDL`/`STL`, spills and private arrays
//! alike, each weighted by the loops around it.
//!
//! ptxas's report counts spill *bytes* once each; a private array indexed
//! at run time is no spill at all, yet every access to it goes to local
//! memory. So an unroll cap that "removes 3000 bytes of spills" can put the
//! matrices it no longer unrolls into local memory, inside the loops: far
//! more traffic (bench/gpu's Kalman filter shows it). Counting the accesses
//! in the final code, weighted by loop depth, shows that.
//!
//! A loop is a backward branch (`BRA` to an address at or before it);
//! each loop an instruction sits in multiplies its weight by
//! [`crate::gpu::listing::UNKNOWN_TRIPS`], the cost model's guess for a
//! trip count it cannot see.
//!
//! nvdisasm spends about 0.2 s starting, more than clang and ptxas take
//! for a variant, whatever it reads. So the kernels' code of a whole batch
//! of builds is read in one run, as one raw instruction stream
//! (`--binary`), each kernel's range counted on its own; and a kernel's
//! code read before (a cap that changed no instruction) is not read again.
//! Volta, which `--binary` does not take, is read a cubin at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::gpu::listing::UNKNOWN_TRIPS;

/// `nvdisasm` of the CUDA installation regtune uses (ci/bootstrap.sh adds
/// it to the one it assembles); None where there is none.
pub(crate) fn nvdisasm() -> Option<PathBuf> {
    crate::toolchain::cuda::Cuda::candidates().into_iter().map(|root| root.join("bin").join("nvdisasm")).find(|p| p.is_file())
}

/// One kernel's code to count: its `.text` section, and the cubin it is
/// in (read whole where `--binary` does not take the target).
pub(crate) struct Code<'a> {
    pub cubin: &'a Path,
    pub kernel: &'a str,
    pub text: &'a [u8],
}

/// Weighted local accesses of each of `codes` (built for `processor`,
/// `sm_90`), in order: one nvdisasm run for all of them that were not
/// read before.
pub(crate) fn local_accesses(nvdisasm: &Path, processor: &str, codes: &[Code<'_>]) -> Result<Vec<u32>, String> {
    static READ: OnceLock<Mutex<HashMap<String, u32>>> = OnceLock::new();
    let read = READ.get_or_init(Default::default);
    let key = |c: &Code<'_>| crate::hash::of_parts([processor.as_bytes(), c.text]);
    let keys: Vec<String> = codes.iter().map(key).collect();
    let mut missing: Vec<usize> = Vec::new();
    {
        let known = read.lock().expect("sass cache lock");
        for (i, k) in keys.iter().enumerate() {
            if !known.contains_key(k) && !missing.iter().any(|&j| keys[j] == *k) {
                missing.push(i);
            }
        }
    }
    if !missing.is_empty() {
        let todo: Vec<&Code<'_>> = missing.iter().map(|&i| &codes[i]).collect();
        let counts = match raw_name(processor) {
            Some(name) => count_raw(nvdisasm, &name, &todo)?,
            None => count_cubins(nvdisasm, &todo)?,
        };
        let mut known = read.lock().expect("sass cache lock");
        for (&i, n) in missing.iter().zip(counts) {
            known.insert(keys[i].clone(), n);
        }
    }
    let known = read.lock().expect("sass cache lock");
    Ok(keys.iter().map(|k| known[k]).collect())
}

/// The name `nvdisasm --binary` takes for a processor (`sm_90a` →
/// `SM90a`); None for Volta (sm_70, sm_72), the oldest it does not take.
fn raw_name(processor: &str) -> Option<String> {
    let version = processor.strip_prefix("sm_")?;
    let digits: String = version.chars().take_while(char::is_ascii_digit).collect();
    (digits.parse::<u32>().ok()? >= 75).then(|| format!("SM{version}"))
}

fn run(nvdisasm: &Path, args: &[&str], file: &Path) -> Result<String, String> {
    let out = Command::new(nvdisasm).args(args).arg(file).output().map_err(|e| format!("cannot run {}: {e}", nvdisasm.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed on {}: {}", nvdisasm.display(), file.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The codes back to back as one raw instruction stream, one run; each
/// kernel's count from the instructions in its range.
fn count_raw(nvdisasm: &Path, name: &str, codes: &[&Code<'_>]) -> Result<Vec<u32>, String> {
    let mut stream = Vec::new();
    let mut ranges = Vec::new();
    for c in codes {
        let start = stream.len() as u64;
        stream.extend_from_slice(c.text);
        ranges.push(start..stream.len() as u64);
    }
    let file = tempfile::NamedTempFile::new().map_err(|e| format!("cannot create a file for nvdisasm: {e}"))?;
    std::fs::write(file.path(), &stream).map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
    let code = parse_raw(&run(nvdisasm, &["--binary", name, "-ndf"], file.path())?);
    Ok(ranges
        .iter()
        .map(|r| {
            let own: Vec<Instruction> = code.iter().filter(|i| r.contains(&i.address)).cloned().collect();
            weigh(&own)
        })
        .collect())
}

/// Each cubin whole (`nvdisasm -c`), once, for the targets `--binary`
/// does not take.
fn count_cubins(nvdisasm: &Path, codes: &[&Code<'_>]) -> Result<Vec<u32>, String> {
    let mut listings: HashMap<&Path, HashMap<String, u32>> = HashMap::new();
    let mut out = Vec::new();
    for c in codes {
        if !listings.contains_key(c.cubin) {
            listings.insert(c.cubin, parse(&run(nvdisasm, &["-c", "-ndf"], c.cubin)?));
        }
        out.push(listings[c.cubin].get(c.kernel).copied().unwrap_or(0));
    }
    Ok(out)
}

/// One instruction: its address, whether it touches local memory, and the
/// address it branches to.
#[derive(Clone)]
struct Instruction {
    address: u64,
    local: bool,
    branch_to: Option<u64>,
}

/// Weighted local accesses per kernel symbol from `nvdisasm -c` output
/// (a cubin: a section per function, branches to labels).
pub(crate) fn parse(sass: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    let mut function: Option<String> = None;
    let mut labels: HashMap<String, u64> = HashMap::new();
    let mut pending: Vec<String> = Vec::new();
    let mut code: Vec<(Instruction, Option<String>)> = Vec::new();
    let mut finish = |name: Option<String>, code: &mut Vec<(Instruction, Option<String>)>, labels: &mut HashMap<String, u64>| {
        if let Some(name) = name {
            let resolved: Vec<Instruction> =
                code.drain(..).map(|(i, label)| Instruction { branch_to: label.and_then(|l| labels.get(&l).copied()), ..i }).collect();
            out.insert(name, weigh(&resolved));
        }
        code.clear();
        labels.clear();
    };
    for line in sass.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("//---------------------") {
            let section = rest.trim_matches(|c: char| c == '-' || c.is_whitespace());
            let name = section.strip_prefix(".text.").map(str::to_string);
            finish(function.take(), &mut code, &mut labels);
            pending.clear();
            function = name;
        } else if let Some(label) = t.strip_suffix(':').filter(|l| l.starts_with(".L")) {
            pending.push(label.to_string());
        } else if let Some((i, text)) = instruction(t) {
            for l in pending.drain(..) {
                labels.insert(l, i.address);
            }
            let label = is_branch(text).then(|| text.split_once("`(").and_then(|(_, l)| l.split(')').next()).map(str::to_string));
            code.push((i, label.flatten()));
        }
    }
    finish(function, &mut code, &mut labels);
    out
}

/// Instructions of `nvdisasm --binary` output (branches to addresses).
fn parse_raw(sass: &str) -> Vec<Instruction> {
    sass.lines()
        .filter_map(|line| {
            let (i, text) = instruction(line.trim())?;
            let target = || text.trim_end().trim_end_matches(';').split([' ', ',']).rev().find_map(|w| w.strip_prefix("0x"));
            let branch_to = if is_branch(text) { target().and_then(|h| u64::from_str_radix(h, 16).ok()) } else { None };
            Some(Instruction { branch_to, ..i })
        })
        .collect()
}

/// `/*03a0*/ @P0 BRA `(.L_x_0) ;` and the like: the instruction (its
/// branch target not yet known) and its text after the address.
fn instruction(line: &str) -> Option<(Instruction, &str)> {
    let rest = line.strip_prefix("/*")?;
    let (address, text) = rest.split_once("*/")?;
    let address = u64::from_str_radix(address, 16).ok()?;
    let opcode = opcode(text)?;
    let local = opcode.starts_with("LDL") || opcode.starts_with("STL");
    Some((Instruction { address, local, branch_to: None }, text))
}

fn opcode(text: &str) -> Option<&str> {
    text.split_whitespace().find(|w| !w.starts_with('@') && !w.starts_with('{'))
}

/// A plain `BRA` (not `BRA.DIV` and the like, whose target is no loop).
fn is_branch(text: &str) -> bool {
    opcode(text).is_some_and(|o| o.starts_with("BRA") && !o.starts_with("BRA."))
}

/// Sum of the local accesses, each weighted by the loops containing it.
fn weigh(code: &[Instruction]) -> u32 {
    let loops: Vec<(u64, u64)> =
        code.iter().filter_map(|i| i.branch_to.filter(|&target| target <= i.address).map(|target| (target, i.address))).collect();
    let total: f64 = code
        .iter()
        .filter(|i| i.local)
        .map(|i| {
            let depth = loops.iter().filter(|(from, to)| (*from..=*to).contains(&i.address)).count();
            UNKNOWN_TRIPS.powi(depth as i32)
        })
        .sum();
    total.min(f64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as `nvdisasm -c` prints a cubin (CUDA 13.2, sm_90).
    const SASS: &str = "\
\t.headerflags\t@\"EF_CUDA_SM90\"

//--------------------- .text._Z6kalmanPKfPfi     --------------------------
\t.section\t.text._Z6kalmanPKfPfi,\"ax\",@progbits
_Z6kalmanPKfPfi:
.text._Z6kalmanPKfPfi:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1], R6 ;
.L_x_1:
        /*0020*/                   LDL R2, [R1+0x4] ;
.L_x_0:
        /*0030*/                   LDL.64 R4, [R1+0x8] ;
        /*0040*/               @P0 BRA `(.L_x_0) ;
        /*0050*/                   STL.128 [R1+0x10], R8 ;
        /*0060*/              @!P1 BRA `(.L_x_1) ;
        /*0070*/                   BRA `(.L_x_2) ;
.L_x_2:
        /*0080*/                   EXIT ;

//--------------------- .text._Z5otherv     --------------------------
_Z5otherv:
        /*0000*/                   STL [R1], R0 ;
        /*0010*/                   EXIT ;

//--------------------- SYMBOLS --------------------------
";

    /// The same two kernels as `nvdisasm --binary SM90` prints them back
    /// to back: addresses run on, branches name addresses.
    const RAW: &str = "\
\t.headerflags\t@\"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1], R6 ;
        /*0020*/                   LDL R2, [R1+0x4] ;
        /*0030*/                   LDL.64 R4, [R1+0x8] ;
        /*0040*/               @P0 BRA 0x30 ;
        /*0050*/                   STL.128 [R1+0x10], R8 ;
        /*0060*/              @!P1 BRA P2, 0x20 ;
        /*0070*/                   BRA 0x80 ;
        /*0080*/                   EXIT ;
        /*0090*/                   STL [R1], R0 ;
        /*00a0*/                   BRA.DIV UR4, 0x90 ;
        /*00b0*/                   EXIT ;
";

    #[test]
    fn local_accesses_are_weighted_by_the_loops_around_them() {
        let counts = parse(SASS);
        // STL once (1), LDL in the outer loop (8), LDL.64 in both (64), STL.128 in the outer (8);
        // the forward branch to .L_x_2 is no loop.
        assert_eq!(counts["_Z6kalmanPKfPfi"], 1 + 8 + 64 + 8);
        assert_eq!(counts["_Z5otherv"], 1);
        assert_eq!(counts.len(), 2, "{counts:?}");
    }

    #[test]
    fn a_raw_stream_is_counted_per_kernel_range_as_its_cubin_is() {
        let code = parse_raw(RAW);
        let own = |r: std::ops::Range<u64>| weigh(&code.iter().filter(|i| r.contains(&i.address)).cloned().collect::<Vec<_>>());
        assert_eq!(own(0..0x90), 1 + 8 + 64 + 8);
        // BRA.DIV's target is no loop.
        assert_eq!(own(0x90..0xc0), 1);
    }

    #[test]
    fn the_binary_mode_names_each_target_from_turing_on() {
        assert_eq!(raw_name("sm_90a").as_deref(), Some("SM90a"));
        assert_eq!(raw_name("sm_100").as_deref(), Some("SM100"));
        assert_eq!(raw_name("sm_75").as_deref(), Some("SM75"));
        assert_eq!(raw_name("sm_70"), None);
        assert_eq!(raw_name("gfx90a"), None);
    }

    /// A stand-in nvdisasm that prints `listing` and logs each run.
    fn tool(dir: &Path, listing: &str) -> (PathBuf, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.join("listing.sass");
        std::fs::write(&file, listing).unwrap();
        let runs = dir.join("runs");
        let tool = dir.join("nvdisasm");
        std::fs::write(&tool, format!("#!/bin/sh\necho \"$@\" >> {}\ncat {}\n", runs.display(), file.display())).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        (tool, runs)
    }

    #[test]
    fn a_batch_is_one_run_and_code_read_before_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let (tool, runs) = tool(dir.path(), RAW);
        let cubin = dir.path().join("k.cubin");
        // Two kernels' code, 0x90 and 0x30 bytes, unlike any other test's.
        let (a, b) = (vec![7u8; 0x90], vec![9u8; 0x30]);
        let codes = [Code { cubin: &cubin, kernel: "a", text: &a }, Code { cubin: &cubin, kernel: "b", text: &b }];
        assert_eq!(local_accesses(&tool, "sm_90", &codes).unwrap(), [81, 1]);
        let logged = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(logged.lines().count(), 1, "{logged}");
        assert!(logged.starts_with("--binary SM90 -ndf "), "{logged}");
        let gone = dir.path().join("no-nvdisasm");
        assert_eq!(local_accesses(&gone, "sm_90", &codes[1..]).unwrap(), [1], "code read before comes from the cache");
        let other = [Code { cubin: &cubin, kernel: "b", text: b"other code" }];
        assert!(local_accesses(&gone, "sm_90", &other).unwrap_err().starts_with("cannot run"), "other code needs the tool");
    }

    #[test]
    fn volta_is_read_a_cubin_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (tool, runs) = tool(dir.path(), SASS);
        let cubin = dir.path().join("k.cubin");
        let (a, b) = (vec![5u8; 0x90], vec![6u8; 0x20]);
        let codes = [Code { cubin: &cubin, kernel: "_Z6kalmanPKfPfi", text: &a }, Code { cubin: &cubin, kernel: "_Z5otherv", text: &b }];
        assert_eq!(local_accesses(&tool, "sm_70", &codes).unwrap(), [81, 1]);
        let logged = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(logged.lines().collect::<Vec<_>>(), [format!("-c -ndf {}", cubin.display())]);
    }
}
