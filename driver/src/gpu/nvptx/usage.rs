//! NVPTX usage from a built cubin and the `ptxas -v` report of the compile
//! that made it (see [`crate::gpu::resources`] for what each [`Usage`] field holds
//! here), occupancy from NVIDIA's calculator ([`super::nvidia`]).

use regtune_decisions::Usage;

use super::nvidia::KernelResources as NvResources;
use super::{cubin, ptxas, sass};
use crate::gpu::resources::{BlockSizeFrom, MeasureError, Measured, NvidiaUsage, Object, Options, DEFAULT_BLOCK_SIZE};
use crate::gpu::{Arch, Limiter};

/// Every kernel of each cubin (its path, bytes and the `ptxas -v` report
/// of the compile that made it): its spills, shared memory and barriers
/// from the report. The final code's local-memory accesses are counted
/// for the whole batch in one nvdisasm run, where nvdisasm is at hand
/// (ci/bootstrap.sh installs it); else zero, and spill bytes decide. No
/// stack frame, no local memory: that kernel's code is not read.
pub(crate) fn read_many(objects: &[Object<'_>], arch: &Arch, options: &Options) -> Vec<Result<Vec<Measured>, MeasureError>> {
    let parsed: Vec<Result<Vec<cubin::CubinKernel>, MeasureError>> =
        objects.iter().map(|o| cubin::read(o.bytes).map_err(|source| MeasureError::Cubin { path: o.path.into(), source })).collect();
    let framed: Vec<(usize, String, Vec<u8>)> = parsed
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.as_ref().ok().map(|ks| (i, ks)))
        .flat_map(|(i, ks)| ks.iter().filter(|k| k.stack_frame_bytes > 0).map(move |k| (i, k.name.clone())))
        .filter_map(|(i, name)| {
            let text = cubin::kernel_text(objects[i].bytes, &name)?;
            Some((i, name, text))
        })
        .collect();
    let codes: Vec<sass::Code<'_>> =
        framed.iter().map(|(i, kernel, text)| sass::Code { cubin: objects[*i].path, kernel: kernel.as_str(), text }).collect();
    let counts = match codes.is_empty() {
        true => vec![],
        false => sass::nvdisasm().and_then(|n| sass::local_accesses(&n, arch.processor(), &codes).ok()).unwrap_or_default(),
    };
    let local =
        |i: usize, name: &str| framed.iter().zip(&counts).find(|((j, kernel, _), _)| *j == i && *kernel == name).map_or(0, |(_, n)| *n);
    parsed
        .into_iter()
        .zip(objects)
        .enumerate()
        .map(|(i, (kernels, o))| {
            let report = ptxas::parse(o.compiler_output);
            kernels?
                .iter()
                .map(|k| {
                    let info = report
                        .iter()
                        .find(|f| f.name == k.name && f.entry)
                        .ok_or_else(|| MeasureError::NoPtxasReport { path: o.path.into(), kernel: k.name.clone() })?;
                    let mut m = kernel(k, info, arch, options);
                    m.usage.local_accesses = local(i, &k.name);
                    Ok(m)
                })
                .collect()
        })
        .collect()
}

/// The block size an NVPTX kernel's occupancy is computed for: the one the
/// user states, else its launch bounds, else [`DEFAULT_BLOCK_SIZE`].
pub(crate) fn block_size(options: &Options, max_threads: Option<u32>) -> (u32, BlockSizeFrom) {
    match (options.block_size, max_threads) {
        (Some(n), _) => (n, BlockSizeFrom::Option),
        (None, Some(n)) => (n, BlockSizeFrom::LaunchBounds),
        (None, None) => (DEFAULT_BLOCK_SIZE, BlockSizeFrom::Default),
    }
}

/// One NVPTX kernel: registers and stack frame from the cubin, spills,
/// shared memory and barriers from ptxas, occupancy from NVIDIA's calculator.
pub(crate) fn kernel(k: &cubin::CubinKernel, info: &ptxas::FunctionInfo, arch: &Arch, options: &Options) -> Measured {
    let sm = super::sm(arch);
    let (block, from) = block_size(options, k.max_threads);
    let resources = NvResources { regs: k.registers, static_smem: info.shared_bytes, dynamic_smem: 0, barriers: info.barriers };
    // A block larger than the launch bounds cannot launch at all.
    let launchable = k.max_threads.is_none_or(|m| block <= m);
    let mut occ = sm.occupancy(&resources, block);
    if !launchable {
        occ.blocks = 0;
        occ.warps = 0;
        occ.limiter = Limiter::WorkgroupSize;
    }
    Measured {
        symbol: k.name.clone(),
        usage: Usage {
            vgpr: k.registers,
            agpr: 0,
            sgpr: 0,
            scratch_bytes: k.stack_frame_bytes,
            vgpr_spills: info.spill_store_bytes,
            sgpr_spills: info.spill_load_bytes,
            lds_bytes: info.shared_bytes,
            occupancy: occ.warps,
            code_bytes: k.code_bytes,
            local_accesses: 0,
        },
        limiter: occ.limiter,
        vgprs_to_next_step: if launchable { sm.regs_to_next_step(&resources, block) } else { None },
        nvidia: Some(NvidiaUsage {
            registers: k.registers,
            spill_store_bytes: info.spill_store_bytes,
            spill_load_bytes: info.spill_load_bytes,
            stack_frame_bytes: k.stack_frame_bytes,
            shared_bytes: info.shared_bytes,
            barriers: info.barriers,
            block_size: block,
            block_size_from: from,
            max_threads: k.max_threads,
            active_blocks: occ.blocks,
            active_warps: occ.warps,
            max_warps_per_sm: sm.max_warps_per_sm,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure(regs: u32, max_threads: Option<u32>, options: Options) -> Measured {
        let k =
            cubin::CubinKernel { name: "k".into(), registers: regs, stack_frame_bytes: 8, max_threads, code_bytes: 512, params: vec![] };
        let info = ptxas::FunctionInfo {
            name: "k".into(),
            entry: true,
            registers: regs,
            spill_store_bytes: 4,
            spill_load_bytes: 8,
            shared_bytes: 1024,
            ..Default::default()
        };
        kernel(&k, &info, &Arch::parse("sm_90").unwrap(), &options)
    }

    #[test]
    fn nvptx_usage_maps_ptxas_numbers_onto_the_report_keys() {
        let m = measure(72, None, Options::default());
        let u = m.usage;
        assert_eq!((u.vgpr, u.sgpr, u.scratch_bytes, u.vgpr_spills, u.sgpr_spills, u.lds_bytes), (72, 0, 8, 4, 8, 1024));
        assert_eq!((u.occupancy, m.limiter, m.vgprs_to_next_step), (24, Limiter::Vgpr, Some(8)));
        let n = m.nvidia.unwrap();
        assert_eq!((n.block_size, n.block_size_from, n.active_blocks), (256, BlockSizeFrom::Default, 3));
    }

    #[test]
    fn block_size_comes_from_the_option_then_the_launch_bounds() {
        assert_eq!(measure(32, Some(128), Options::default()).nvidia.unwrap().block_size_from, BlockSizeFrom::LaunchBounds);
        let given = measure(32, Some(128), Options { block_size: Some(64) }).nvidia.unwrap();
        assert_eq!((given.block_size, given.block_size_from), (64, BlockSizeFrom::Option));
        // More threads than the launch bounds allow: the kernel cannot launch.
        let over = measure(32, Some(128), Options { block_size: Some(256) });
        assert_eq!((over.usage.occupancy, over.limiter), (0, Limiter::WorkgroupSize));
    }
}
