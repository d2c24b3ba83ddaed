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
//! A loop is a backward branch (`BRA` to a label at or before it); each
//! loop an instruction sits in multiplies its weight by
//! [`crate::gpu::listing::UNKNOWN_TRIPS`], the cost model's guess for a trip count
//! it cannot see.

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

/// Weighted local accesses per kernel symbol of the cubin at `path`
/// (`bytes`). nvdisasm spends about 0.4 s starting, more than clang and
/// ptxas take for a variant, so a cubin already read (a variant that
/// changed no byte) is not read again; `-ndf` skips a dataflow analysis
/// whose notes the count does not read (the same code lines, a third less
/// time).
pub(crate) fn local_accesses(nvdisasm: &Path, path: &Path, bytes: &[u8]) -> Result<HashMap<String, u32>, String> {
    static READ: OnceLock<Mutex<HashMap<String, HashMap<String, u32>>>> = OnceLock::new();
    let key = crate::hash::of_parts([bytes]);
    let read = READ.get_or_init(Default::default);
    if let Some(counts) = read.lock().expect("sass cache lock").get(&key) {
        return Ok(counts.clone());
    }
    let out =
        Command::new(nvdisasm).args(["-c", "-ndf"]).arg(path).output().map_err(|e| format!("cannot run {}: {e}", nvdisasm.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed on {}: {}", nvdisasm.display(), path.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    let counts = parse(&String::from_utf8_lossy(&out.stdout));
    read.lock().expect("sass cache lock").insert(key, counts.clone());
    Ok(counts)
}

/// One instruction: its address, whether it touches local memory, and the
/// label it branches to.
struct Instruction {
    address: u64,
    local: bool,
    branch_to: Option<String>,
}

/// [`local_accesses`] from `nvdisasm -c` output.
pub(crate) fn parse(sass: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    let mut function: Option<String> = None;
    let mut labels: HashMap<String, u64> = HashMap::new();
    let mut pending: Vec<String> = Vec::new();
    let mut code: Vec<Instruction> = Vec::new();
    let mut finish = |name: Option<String>, code: &mut Vec<Instruction>, labels: &mut HashMap<String, u64>| {
        if let Some(name) = name {
            out.insert(name, weigh(code, labels));
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
        } else if let Some(i) = instruction(t) {
            for l in pending.drain(..) {
                labels.insert(l, i.address);
            }
            code.push(i);
        }
    }
    finish(function, &mut code, &mut labels);
    out
}

/// `/*03a0*/ @P0 BRA `(.L_x_0) ;` and the like.
fn instruction(line: &str) -> Option<Instruction> {
    let rest = line.strip_prefix("/*")?;
    let (address, text) = rest.split_once("*/")?;
    let address = u64::from_str_radix(address, 16).ok()?;
    let mut words = text.split_whitespace().skip_while(|w| w.starts_with('@') || w.starts_with('{'));
    let opcode = words.next()?;
    let local = opcode.starts_with("LDL") || opcode.starts_with("STL");
    let branch_to = (opcode.starts_with("BRA") && !opcode.starts_with("BRA."))
        .then(|| text.split_once("`(").and_then(|(_, l)| l.split(')').next()).map(str::to_string));
    Some(Instruction { address, local, branch_to: branch_to.flatten() })
}

/// Sum of the local accesses, each weighted by the loops containing it.
fn weigh(code: &[Instruction], labels: &HashMap<String, u64>) -> u32 {
    let loops: Vec<(u64, u64)> = code
        .iter()
        .filter_map(|i| {
            let target = *labels.get(i.branch_to.as_ref()?)?;
            (target <= i.address).then_some((target, i.address))
        })
        .collect();
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
    fn a_cubin_already_read_is_not_disassembled_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let listing = dir.path().join("listing.sass");
        std::fs::write(&listing, SASS).unwrap();
        let tool = dir.path().join("nvdisasm");
        std::fs::write(&tool, format!("#!/bin/sh\ncat {}\n", listing.display())).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cubin = dir.path().join("k.cubin");
        let bytes = b"a cubin only this test builds".as_slice();
        let first = local_accesses(&tool, &cubin, bytes).unwrap();
        assert_eq!(first["_Z6kalmanPKfPfi"], 81);
        let gone = dir.path().join("no-nvdisasm");
        assert_eq!(local_accesses(&gone, &cubin, bytes).unwrap(), first, "the same bytes come from the cache");
        let other = local_accesses(&gone, &cubin, b"other bytes");
        assert!(other.unwrap_err().starts_with("cannot run"), "other bytes need the tool");
    }
}
