//! NVPTX through CUDA: PTX, ptxas and cubins, warps per SM.

pub mod cubin;
pub(crate) mod flags;
mod listing;
pub(crate) mod nvcc;
pub mod nvidia;
pub(crate) mod ptxas;
pub(crate) mod sass;
pub(crate) mod splice;
pub(crate) mod usage;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Arch, Compile, Identity, Limiter, OccupancyModel, ReadUsage, SourceCompiler, SourceSpelling, Spelling, Steps, Target};
use crate::gpu::compile::{self, CompileError, Compiled, Location, Temps, Unit, Variant};
use crate::gpu::listing::{Listing, Machine};
use crate::gpu::resources::{self, MeasureError, Measured, NvidiaUsage, Object};
use crate::toolchain::{Toolchain, ToolchainError};
use regtune_decisions::{Occupancy, Usage};

/// The register cap a source patch for nvcc writes: `REGTUNE_MAXNREG(R)`.
pub(crate) const MAXNREG_MACRO: &str = "REGTUNE_MAXNREG";

/// Its definition, once at the top of a file that uses it. `__NVCC__`, not
/// `__CUDACC__`: clang's CUDA headers define `__CUDACC__` and the
/// `__CUDACC_VER_*__` numbers too, and nvcc may preprocess with clang
/// (`-ccbin clang`, where `__clang__` is defined); only nvcc defines
/// `__NVCC__`. nvcc refuses `__maxnreg__` beside `__launch_bounds__` on one
/// kernel ("cannot be applied to the same kernel"): a kernel that states
/// its block size takes the cap as `__launch_bounds__`'s second argument.
pub(crate) const MAXNREG_DEFINITION: &str =
    "// regtune fix: a kernel's register cap, for nvcc 12.4 on (__maxnreg__); nothing for other compilers.\n\
#ifndef REGTUNE_MAXNREG\n\
#if defined(__NVCC__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))\n\
#define REGTUNE_MAXNREG(n) __maxnreg__(n)\n\
#else\n\
#define REGTUNE_MAXNREG(n)\n\
#endif\n\
#endif\n\n";

#[derive(Debug)]
pub(crate) struct Nvptx {
    pub(crate) arch: Arch,
}

impl Identity for Nvptx {
    fn family(&self) -> &'static str {
        "nvptx"
    }

    fn arch(&self) -> &Arch {
        &self.arch
    }
}

impl Compile for Nvptx {
    /// A CUDA installation.
    fn prepare(&self, toolchain: &Toolchain) -> Result<(), ToolchainError> {
        toolchain.cuda().map(drop)
    }

    fn device_args(&self, toolchain: &Toolchain, _user_args: &[String]) -> Result<Vec<OsString>, ToolchainError> {
        let arch = &self.arch;
        Ok(flags::device_args(toolchain.cuda()?, arch))
    }

    /// ptxas decides the registers: its version is part of every key.
    fn hash_inputs(&self, toolchain: &Toolchain) -> Vec<String> {
        toolchain.cuda().ok().map(|c| c.ptxas_version.clone()).into_iter().collect()
    }

    fn needs_hip(&self) -> bool {
        false
    }

    fn cap_is_an_assembly_directive(&self) -> bool {
        true
    }

    /// clang to PTX, then ptxas to a cubin with its `-v` report appended.
    fn code_object(&self, unit: &Unit<'_>, mut cmd: Command, out: &Path) -> Result<Compiled, CompileError> {
        let ptx = out.with_extension("ptx");
        cmd.arg("-S").arg("-o").arg(&ptx).arg(unit.source);
        let compiled = compile::run(cmd, unit)?;
        assemble(unit.toolchain, unit.arch, &ptx, out, unit.user_args, compiled, None)
    }

    /// `-save-temps` would split the compile into jobs whose last one reads
    /// IR and so codegens differently (see [`flags::ir_args`]).
    /// Instead: preprocess, run the frontend alone (device library linked,
    /// no optimization), and build the object from that IR the way every
    /// variant is built; that equals the one-step compile.
    fn build_keeping_temps(&self, unit: &Unit<'_>, mut frontend: Command, dir: &Path, object: PathBuf) -> Result<Temps, CompileError> {
        let stem = unit.source.file_stem().map_or_else(|| "unit".into(), |s| s.to_string_lossy().into_owned());
        let preprocessed = dir.join(format!("{stem}-{}.cui", unit.arch.processor()));
        let pre_opt_ir = dir.join(format!("{stem}-{}.bc", unit.arch.processor()));
        let mut preprocess = unit.device_command()?;
        preprocess.arg("-E").arg("-o").arg(&preprocessed).arg(unit.source);
        compile::run(preprocess, unit)?;
        frontend
            .args(["-emit-llvm", "-c", "-Xclang", "-disable-llvm-passes", "-fno-discard-value-names", "-o"])
            .arg(&pre_opt_ir)
            .arg(unit.source);
        let front = compile::run(frontend, unit)?;
        let built = self.ir_to_object(unit.toolchain, &pre_opt_ir, &object, &Variant::default(), unit.user_args)?;
        Ok(Temps { object, pre_opt_ir, preprocessed, stderr: front.stderr + &built.stderr })
    }

    /// IR linked into an empty CUDA file's compile (the way clang's own
    /// one-step compile codegens it), to PTX, then ptxas; with `-S` among
    /// the variant's arguments, the PTX is the output and ptxas does not run.
    fn ir_to_object(
        &self,
        toolchain: &Toolchain,
        ir: &Path,
        out: &Path,
        variant: &Variant,
        user_args: &[String],
    ) -> Result<Compiled, CompileError> {
        let arch = &self.arch;
        let listing = variant.args.iter().any(|a| a == "-S");
        let ptx = out.with_extension("ptx");
        let empty = out.with_extension("empty.cu");
        std::fs::write(&empty, "").map_err(|source| CompileError::Input { file: empty.clone(), source })?;
        let mut cmd = Command::new(&toolchain.clang);
        cmd.args(flags::ir_args(toolchain.cuda()?, arch, ir))
            .arg(compile::DEFAULT_OPT)
            .args(compile::backend_args(user_args))
            .args(&variant.args);
        if listing {
            cmd.arg("-o").arg(out).arg(&empty);
        } else {
            cmd.arg("-S").arg("-o").arg(&ptx).arg(&empty);
        }
        let compiled = compile::run_variant(cmd, toolchain, arch, ir, variant);
        let _ = std::fs::remove_file(&empty);
        if listing {
            return compiled;
        }
        let compiled = compiled.and_then(|c| assemble(toolchain, arch, &ptx, out, user_args, c, variant.deadline));
        let _ = std::fs::remove_file(&ptx);
        compiled
    }
}

impl ReadUsage for Nvptx {
    /// NVPTX has no resource-usage remarks: read the `__global__`
    /// definitions from the source.
    fn locations(&self, source: &Path, _compiler_output: &str, symbols: &[String]) -> Vec<Location> {
        compile::source_locations(source, symbols)
    }

    /// Registers and stack frame from the cubin, spills, shared memory and
    /// barriers from ptxas's report, occupancy from NVIDIA's calculator.
    fn read_usage(&self, objects: &[Object<'_>], options: &resources::Options) -> Vec<Result<Vec<Measured>, MeasureError>> {
        usage::read_many(objects, &self.arch, options)
    }

    /// A cubin keeps no spill counts: those come from ptxas at compile time.
    fn reads_built_objects(&self) -> Result<(), &'static str> {
        Err("NVPTX usage comes from regtune's own compile (ptxas -v); report the source file instead")
    }

    /// A cubin records launch bounds, not a block size every launch keeps to.
    fn max_block_sizes(&self, _object: &Path) -> Result<Vec<(String, u32)>, String> {
        Ok(vec![])
    }

    fn pressure_timeline(&self) -> Result<(), &'static str> {
        Err("ptxas allocates the registers in SASS, which regtune does not read (PTX registers are virtual)")
    }

    /// The `.entry symbol(` ... `}` block.
    fn kernel_listing(&self, listing: &str, symbol: &str) -> String {
        let start = format!(".entry {symbol}(");
        crate::gpu::listing::cut(listing, |l| l.contains(&start), |l| l == "}", true)
    }

    fn machine(&self) -> Machine {
        listing::machine()
    }

    fn read_listing(&self, kernel_listing: &str) -> Listing {
        listing::read(kernel_listing)
    }

    fn listing_shows_spills(&self) -> bool {
        false
    }
}

impl OccupancyModel for Nvptx {
    fn occupancy_unit(&self) -> &'static str {
        "warps/SM"
    }

    /// Not diagnosed: ptxas's cap depends on the blocks per SM asked for.
    fn register_cap_for_block(&self, _threads: u32) -> Option<u32> {
        None
    }

    /// Spills cost memory traffic on NVIDIA GPUs (no register lanes).
    fn lane_spills(&self) -> bool {
        false
    }

    fn registers_word(&self) -> &'static str {
        "registers"
    }

    fn limiter_name(&self, limiter: Limiter) -> String {
        match limiter {
            Limiter::Vgpr => "registers",
            Limiter::Lds => "shared memory",
            Limiter::WorkgroupSize => "block size",
            Limiter::Sgpr | Limiter::WavesPerEu => "-",
            Limiter::None => "-",
        }
        .to_string()
    }

    /// Warps per SM (the db's `warps_per_sm`).
    fn occupancy_field(&self) -> Occupancy {
        Occupancy::WarpsPerSm
    }

    /// The warps per SM that the kernel's block size, shared memory and
    /// barriers allow.
    fn occupancy_ceiling(&self, base: &Measured) -> u32 {
        let arch = &self.arch;
        let sm = sm(arch);
        match &base.nvidia {
            Some(n) => sm.max_warps(&resources(n), n.block_size),
            None => sm.max_warps_per_sm,
        }
    }

    /// Whole blocks of warps whose register budget is within a third of
    /// what the kernel uses now; the plugin turns a step into a register
    /// cap (`nvvm.maxnreg`).
    fn occupancy_targets(&self, base: &Measured) -> Vec<u32> {
        let arch = &self.arch;
        let Some(n) = &base.nvidia else { return vec![] };
        let (sm, k) = (sm(arch), resources(n));
        let step = n.block_size.div_ceil(nvidia::WARP_SIZE).max(1);
        let first = (base.usage.occupancy / step + 1) * step;
        (first..=sm.max_warps(&k, n.block_size))
            .step_by(step as usize)
            .filter(|&w| sm.max_regs_for_warps(&k, n.block_size, w).is_some_and(|budget| 3 * budget >= 2 * base.usage.vgpr))
            .collect()
    }

    /// ptxas's `enable_smem_spilling` (it sizes its area by the block).
    fn backend_spills_to_shared(&self) -> bool {
        true
    }

    /// Where the cap's spills of every resident thread outgrow a quarter of
    /// the SM's largest shared-memory carveout (57 KiB on sm_90). Local
    /// memory is cached in the L1 that shared memory is carved from: small
    /// spills hit there, and moving them takes L1 away. In five H100 runs of
    /// the corpus, ptxas's spilling to shared memory beat the cap's spills
    /// on 4 of 33 pairs under this line and lost on 10 (`likelihood_kernel`
    /// 0.92× of the cap, `bisectKernelLarge` 0.95×); at or over it, beat
    /// them on 27 of 37 and lost on 2 (lavaMD 1.33×, RSBench 1.24×, XSBench
    /// 2.47×). bench/search/report.py counts them.
    fn shared_spill_pays(&self, cap: &Usage) -> bool {
        let footprint = u64::from(cap.vgpr_spills) * u64::from(cap.occupancy) * u64::from(nvidia::WARP_SIZE);
        4 * footprint >= u64::from(sm(&self.arch).smem_per_sm)
    }

    /// Launch bounds (`.maxntid`) or `--block-size`.
    fn promised_block(&self, base: &Measured) -> Option<u32> {
        base.nvidia.as_ref().filter(|n| n.block_size_from != resources::BlockSizeFrom::Default).map(|n| n.block_size)
    }

    /// One step per register cap a warps target gives (the caps a hand
    /// sweep of `-maxrregcount` tries: 255, 168, 128, ... 32 on sm_90), as
    /// the most warps that get it, whatever occupancy each reaches: on an
    /// H100, caps that reach the same occupancy ran a kernel 0.97× and
    /// 1.03× (compute_gemm at 16 warps/SM, 256 threads). Where the block
    /// size is known (`--block-size`, the launches measured, the launch
    /// bounds), caps at which no block fits are left out. The kernel's own
    /// step is the lowest cap that keeps every register it uses: its
    /// occupancy at any block size (a 50-register kernel launched with 64
    /// threads ran 1.9 % faster at cap 56).
    fn occupancy_steps(&self, base: &Measured, launched: Option<u32>) -> Steps {
        let Some(n) = &base.nvidia else { return Steps::default() };
        let (sm, k) = (sm(&self.arch), resources(n));
        // (most warps, cap), caps falling as warps rise.
        let mut caps: Vec<(u32, u32)> = Vec::new();
        for w in 1..=sm.max_warps_per_sm {
            let cap = nvidia::register_cap_for_warps(w);
            match caps.last_mut() {
                Some(last) if last.1 == cap => last.0 = w,
                _ => caps.push((w, cap)),
            }
        }
        // What the user states, else what the launches did, else the launch bounds.
        let stated = (n.block_size_from == resources::BlockSizeFrom::Option).then_some(n.block_size);
        let block = stated.or(launched).or(self.promised_block(base));
        caps.retain(|&(_, cap)| {
            cap >= MIN_REGISTER_CAP && block.is_none_or(|b| sm.occupancy(&nvidia::KernelResources { regs: cap, ..k }, b).warps > 0)
        });
        let own = caps.iter().rev().find(|&&(_, cap)| cap >= n.registers).map(|&(w, _)| w);
        Steps { all: caps.into_iter().map(|(w, _)| w).collect(), own }
    }

    /// Warps per SM sub-partition (four per SM).
    fn waves(&self, occupancy: u32) -> f64 {
        f64::from(occupancy) / 4.0
    }
}

impl SourceSpelling for Nvptx {
    /// W warps per SM become a register cap (`.maxnreg`): no `__maxnreg__`
    /// in source (clang 22 ignores it), `CU_JIT_MAX_REGISTERS` when a
    /// module is loaded from PTX.
    fn occupancy_spelling(&self, warps: u32) -> Spelling {
        let registers = nvidia::register_cap_for_warps(warps);
        Spelling {
            ir: vec![("nvvm.maxnreg", registers.to_string())],
            source: None,
            runtime: Some(format!("CU_JIT_MAX_REGISTERS={registers}")),
        }
    }

    fn launch_bounds_spelling(&self, threads: u32) -> Spelling {
        Spelling { ir: vec![("nvvm.maxntid", threads.to_string())], source: Some(format!("__launch_bounds__({threads})")), runtime: None }
    }

    /// An occupancy target is spelled through the block size:
    /// `__launch_bounds__(threads, blocks per SM)`, the blocks that give
    /// ptxas the same register cap as the tuner's `.maxnreg`. Without a
    /// block size, for nvcc 12.4 on: `__maxnreg__(R)` through
    /// [`MAXNREG_MACRO`] (cicc writes it as the entry's `.maxnreg R`, so
    /// the cubin is the tuned candidate's); clang 22 has none.
    fn source_attributes(&self, launch_bounds: Option<u32>, warps: Option<u32>, compiler: SourceCompiler) -> Result<Vec<String>, String> {
        let arch = &self.arch;
        match (launch_bounds, warps, compiler) {
            (Some(n), Some(w), _) => Ok(vec![format!("__launch_bounds__({n}, {})", min_blocks(arch, w, n)?)]),
            (None, Some(w), SourceCompiler::Nvcc { maxnreg: true }) => {
                Ok(vec![format!("{MAXNREG_MACRO}({})", nvidia::register_cap_for_warps(w))])
            }
            (None, Some(w), SourceCompiler::Nvcc { maxnreg: false }) => Err(format!(
                "warps-per-sm={w} on {arch}: this nvcc has no `__maxnreg__` (CUDA 12.4 on has: `__maxnreg__({})`), and `__launch_bounds__` would state a block size; not patched",
                nvidia::register_cap_for_warps(w)
            )),
            (None, Some(w), SourceCompiler::Clang) => Err(format!(
                "warps-per-sm={w} on {arch}: clang 22 has no `__maxnreg__` (nvcc 12.4 does: `__maxnreg__({})`), and `__launch_bounds__` would state a block size; not patched",
                nvidia::register_cap_for_warps(w)
            )),
            (lb, None, _) => Ok(lb.map(|n| format!("__launch_bounds__({n})")).into_iter().collect()),
        }
    }

    /// nvcc's register cap, guarded: `__maxnreg__` where nvcc 12.4 on
    /// compiles, nothing elsewhere (clang, older nvcc, a host compiler).
    fn source_macro(&self, compiler: SourceCompiler) -> Option<(&'static str, &'static str)> {
        (compiler == SourceCompiler::Nvcc { maxnreg: true }).then_some((MAXNREG_MACRO, MAXNREG_DEFINITION))
    }

    /// A kernel that already promises its block size in source
    /// (`__launch_bounds__(threads)`) takes the occupancy target as the
    /// second argument: a number for a literal block size, else an
    /// expression of it that holds for every instantiation of a template
    /// (the most warps per SM that keep the cap, over the block's warps).
    fn min_blocks_argument(&self, warps: u32, threads: &str) -> Option<Result<String, String>> {
        let arch = &self.arch;
        if let Ok(n) = threads.parse::<u32>() {
            return Some(min_blocks(arch, warps, n).map(|m| m.to_string()));
        }
        let most = nvidia::most_warps_for_cap(nvidia::register_cap_for_warps(warps));
        Some(Ok(format!("{most} / ((({threads}) + 31) / 32)")))
    }

    /// `__CUDA_ARCH__` is the compute capability times ten (sm_90a: 900).
    fn device_macro(&self) -> String {
        let arch = &self.arch;
        let sm = arch.processor().trim_start_matches("sm_");
        format!("defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {}0", sm.trim_end_matches(char::is_alphabetic))
    }

    fn pow_library(&self) -> (&'static str, &'static str) {
        ("libdevice's `pow`", "libdevice's")
    }
}

impl Target for Nvptx {}

/// The smallest register cap the measured search asks ptxas for: below
/// it ptxas ignores the cap or cannot allocate.
const MIN_REGISTER_CAP: u32 = 16;

fn sm(arch: &Arch) -> &nvidia::Sm {
    arch.nvidia().expect("an NVPTX arch has an NVIDIA model")
}

fn resources(n: &NvidiaUsage) -> nvidia::KernelResources {
    nvidia::KernelResources { regs: n.registers, static_smem: n.shared_bytes, dynamic_smem: 0, barriers: n.barriers }
}

/// ptxas `ptx` into the cubin `out`, its report after clang's stderr.
fn assemble(
    toolchain: &Toolchain,
    arch: &Arch,
    ptx: &Path,
    out: &Path,
    user_args: &[String],
    clang: Compiled,
    deadline: Option<std::time::Instant>,
) -> Result<Compiled, CompileError> {
    let report = ptxas::assemble(toolchain.cuda()?, arch, ptx, out, user_args, deadline)?;
    Ok(Compiled { stderr: clang.stderr + &report })
}

/// Blocks per SM for `__launch_bounds__(threads, M)` that give ptxas the
/// register cap of `warps` warps per SM.
fn min_blocks(arch: &Arch, warps: u32, threads: u32) -> Result<u32, String> {
    let cap = nvidia::register_cap_for_warps(warps);
    nvidia::min_blocks_for_cap(cap, threads).ok_or_else(|| format!("warps-per-sm={warps} on {arch}: no blocks-per-SM count makes ptxas cap {threads}-thread blocks at {cap} registers; not patched"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel of `regs` registers, no shared memory, as ptxas reports it.
    fn kernel(regs: u32, max_threads: Option<u32>, block_size: Option<u32>) -> Measured {
        let k =
            cubin::CubinKernel { name: "k".into(), registers: regs, stack_frame_bytes: 0, max_threads, code_bytes: 512, params: vec![] };
        let info = ptxas::FunctionInfo { name: "k".into(), entry: true, registers: regs, ..Default::default() };
        usage::kernel(&k, &info, &Arch::parse("sm_90").unwrap(), &resources::Options { block_size })
    }

    fn steps(m: &Measured, launched: Option<u32>) -> (Vec<u32>, Option<u32>) {
        let s = Nvptx { arch: Arch::parse("sm_90").unwrap() }.occupancy_steps(m, launched);
        (s.all, s.own)
    }

    #[test]
    fn a_cap_without_a_block_size_is_nvccs_guarded_maxnreg_and_nothing_for_clang() {
        let t = Nvptx { arch: Arch::parse("sm_90").unwrap() };
        let nvcc = SourceCompiler::Nvcc { maxnreg: true };
        assert_eq!(t.source_attributes(None, Some(32), nvcc).unwrap(), ["REGTUNE_MAXNREG(64)"]);
        assert!(t.source_attributes(None, Some(32), SourceCompiler::Clang).unwrap_err().contains("clang 22 has no `__maxnreg__`"));
        let old = t.source_attributes(None, Some(32), SourceCompiler::Nvcc { maxnreg: false }).unwrap_err();
        assert!(old.contains("this nvcc has no `__maxnreg__`"), "{old}");
        // With a block size, `__launch_bounds__` for both: nvcc takes no `__maxnreg__` beside it.
        let bounded = |c| t.source_attributes(Some(256), Some(32), c).unwrap();
        assert_eq!(bounded(nvcc), ["__launch_bounds__(256, 4)"]);
        assert_eq!(bounded(nvcc), bounded(SourceCompiler::Clang));
        assert_eq!(t.source_macro(SourceCompiler::Clang), None);
        let (name, definition) = t.source_macro(nvcc).unwrap();
        assert!(definition.contains(&format!("#define {name}(n) __maxnreg__(n)\n#else\n#define {name}(n)\n")), "{definition}");
        assert!(definition.contains("#if defined(__NVCC__)"), "only nvcc: clang defines __CUDACC__ too");
    }

    /// The caps of a hand sweep, 255 168 128 96 80 72 64 56 48 40 32, as
    /// the most warps that get each.
    const EVERY_CAP: [u32; 11] = [8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 64];

    /// The H100 corpus's pairs: `likelihood_kernel`'s cap spills 16 bytes
    /// at 64 warps (32 KiB an SM; shared memory lost), lavaMD's 60 (120
    /// KiB; it gained). On sm_75 a quarter of the carveout is 16 KiB.
    #[test]
    fn shared_spills_pay_where_the_caps_spills_outgrow_a_quarter_of_the_carveout() {
        let pays = |arch: &str, vgpr_spills: u32, occupancy: u32| {
            let cap = Usage { vgpr_spills, occupancy, ..Default::default() };
            Nvptx { arch: Arch::parse(arch).unwrap() }.shared_spill_pays(&cap)
        };
        assert!(!pays("sm_90", 16, 64) && pays("sm_90", 60, 64));
        // 57 KiB: 29 bytes at 64 warps is 58 KiB, 28 is 56.
        assert!(pays("sm_90", 29, 64) && !pays("sm_90", 28, 64));
        assert!(pays("sm_75", 16, 32) && !pays("sm_75", 15, 32));
        assert!(!pays("sm_90", 0, 64));
    }

    #[test]
    fn every_cap_is_a_step_and_plains_own_keeps_its_registers() {
        let caps: Vec<u32> = EVERY_CAP.iter().map(|&w| nvidia::register_cap_for_warps(w)).collect();
        assert_eq!(caps, [255, 168, 128, 96, 80, 72, 64, 56, 48, 40, 32]);
        // miniBUDE's fasten_main: 50 registers; cap 56 keeps them all.
        assert_eq!(steps(&kernel(50, None, None), None), (EVERY_CAP.to_vec(), Some(36)));
        assert_eq!(steps(&kernel(134, None, None), None).1, Some(12));
        assert_eq!(steps(&kernel(32, None, None), None).1, Some(64));
        // A known block of 256 threads changes none of it: caps of one occupancy there differ in speed.
        assert_eq!(steps(&kernel(50, Some(256), None), Some(64)), (EVERY_CAP.to_vec(), Some(36)));
    }

    #[test]
    fn caps_at_which_no_block_fits_are_left_out() {
        // 1024 threads: 255 and 168 registers leave no room for one block, 128 and 96 neither.
        let fitting = vec![32, 36, 40, 48, 64];
        assert_eq!(steps(&kernel(50, None, Some(1024)), None), (fitting.clone(), Some(36)));
        assert_eq!(steps(&kernel(50, Some(1024), None), None).0, fitting);
        assert_eq!(steps(&kernel(50, None, None), Some(1024)).0, fitting);
        // The user's word outranks the launches, which outrank the launch bounds.
        assert_eq!(steps(&kernel(50, Some(1024), Some(256)), Some(1024)).0, EVERY_CAP);
        assert_eq!(steps(&kernel(50, Some(1024), None), Some(256)).0, EVERY_CAP);
    }
}
