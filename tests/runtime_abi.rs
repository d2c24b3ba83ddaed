//! The interposer and the replayer declare the CUDA driver, CUPTI and HIP
//! interfaces by hand (they are opened at run time, so regtune builds with
//! no GPU software). These tests compile a program against the real
//! headers (CUDA 12.9 and CUPTI from ci/bootstrap.sh, Debian's HIP 5.2)
//! that prints every constant and structure offset the Rust side relies
//! on, and declares every function it looks up, and compare.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use regtune_runtime::cupti::track;
use regtune_runtime::{confirm, cuda, cupti, hip};

fn cuda_include() -> PathBuf {
    let roots = [
        std::env::var("CUDA_PATH").ok(),
        Some("/usr/local/cuda".into()),
        std::env::var("REGTUNE_CUDA_PATH").ok(),
        Some("/opt/regtune-cuda".into()),
    ];
    for root in roots.into_iter().flatten() {
        for inc in ["include", "extras/CUPTI/include"] {
            if Path::new(&root).join(inc).join("cupti.h").is_file() {
                return Path::new(&root).join("include");
            }
        }
    }
    panic!("no CUDA headers with CUPTI: run ci/bootstrap.sh");
}

/// Compile `body` (C printing "name value" lines) with the headers and run it.
fn probe(includes: &str, flags: &[&str], body: &str) -> BTreeMap<String, u64> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("probe.c");
    let exe = dir.path().join("probe");
    std::fs::write(&src, format!("#include <stddef.h>\n#include <stdio.h>\n{includes}\nint main(void) {{\n{body}\nreturn 0;\n}}\n"))
        .unwrap();
    let out = Command::new("clang-22").arg("-Werror").args(flags).arg(&src).arg("-o").arg(&exe).output().expect("clang++-22 runs");
    assert!(out.status.success(), "the probe does not compile against the headers:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().unwrap();
    String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn print(name: &str, expr: &str) -> String {
    format!("printf(\"{name} %llu\\n\", (unsigned long long)({expr}));\n")
}

/// Every looked-up function must be declared by the headers.
fn declared(symbols: &[&str]) -> String {
    symbols.iter().map(|s| format!("{{ __typeof__(&{s}) p = 0; (void)p; }}\n")).collect()
}

#[test]
fn cuda_and_cupti_declarations_match_the_headers() {
    let include = cuda_include();
    let mut body = String::new();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut check = |name: &str, expr: &str, value: u64| {
        body.push_str(&print(name, expr));
        want.insert(name.to_string(), value);
    };
    check("cbid_launch", "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel", cupti::CBID_CU_LAUNCH_KERNEL as u64);
    check("cbid_launch_ptsz", "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz", cupti::CBID_CU_LAUNCH_KERNEL_PTSZ as u64);
    check("cbid_launch_ex", "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx", cupti::CBID_CU_LAUNCH_KERNEL_EX as u64);
    check("cbid_launch_ex_ptsz", "CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz", cupti::CBID_CU_LAUNCH_KERNEL_EX_PTSZ as u64);
    check("domain_driver", "CUPTI_CB_DOMAIN_DRIVER_API", cupti::CUPTI_CB_DOMAIN_DRIVER_API as u64);
    check("site_enter", "CUPTI_API_ENTER", cupti::CUPTI_API_ENTER as u64);
    check("site_exit", "CUPTI_API_EXIT", cupti::CUPTI_API_EXIT as u64);
    type Cb = cupti::CallbackData;
    check("cb_size", "sizeof(CUpti_CallbackData)", size_of::<Cb>() as u64);
    check("cb_site", "offsetof(CUpti_CallbackData, callbackSite)", offset_of!(Cb, callback_site) as u64);
    check("cb_params", "offsetof(CUpti_CallbackData, functionParams)", offset_of!(Cb, function_params) as u64);
    check("cb_return", "offsetof(CUpti_CallbackData, functionReturnValue)", offset_of!(Cb, function_return_value) as u64);
    check("cb_symbol", "offsetof(CUpti_CallbackData, symbolName)", offset_of!(Cb, symbol_name) as u64);
    type Lk = cupti::LaunchKernelParams;
    check("lk_size", "sizeof(cuLaunchKernel_params)", size_of::<Lk>() as u64);
    check("lk_ptsz_size", "sizeof(cuLaunchKernel_ptsz_params)", size_of::<Lk>() as u64);
    check("lk_shared", "offsetof(cuLaunchKernel_params, sharedMemBytes)", offset_of!(Lk, shared_mem_bytes) as u64);
    check("lk_kernel_params", "offsetof(cuLaunchKernel_params, kernelParams)", offset_of!(Lk, kernel_params) as u64);
    check("lk_extra", "offsetof(cuLaunchKernel_params, extra)", offset_of!(Lk, extra) as u64);
    type Lx = cupti::LaunchKernelExParams;
    check("lx_size", "sizeof(cuLaunchKernelEx_params)", size_of::<Lx>() as u64);
    check("lx_f", "offsetof(cuLaunchKernelEx_params, f)", offset_of!(Lx, f) as u64);
    check("lx_extra", "offsetof(cuLaunchKernelEx_params, extra)", offset_of!(Lx, extra) as u64);
    type Lc = cupti::LaunchConfigEx;
    check("lc_size", "sizeof(CUlaunchConfig)", size_of::<Lc>() as u64);
    check("lc_shared", "offsetof(CUlaunchConfig, sharedMemBytes)", offset_of!(Lc, shared_mem_bytes) as u64);
    check("lc_stream", "offsetof(CUlaunchConfig, hStream)", offset_of!(Lc, h_stream) as u64);
    check("cc_major", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as u64);
    check("cc_minor", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as u64);
    check("max_threads", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK", cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as u64);
    check(
        "max_dyn_shared",
        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
        cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as u64,
    );
    check("param_end", "CU_LAUNCH_PARAM_END_AS_INT", cuda::CU_LAUNCH_PARAM_END as u64);
    check("param_buffer", "CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT", cuda::CU_LAUNCH_PARAM_BUFFER_POINTER as u64);
    check("param_size", "CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT", cuda::CU_LAUNCH_PARAM_BUFFER_SIZE as u64);
    // Replaying at the program's addresses, and its module's variables.
    check("alloc_pinned", "CU_MEM_ALLOCATION_TYPE_PINNED", cuda::CU_MEM_ALLOCATION_TYPE_PINNED as u64);
    check("location_device", "CU_MEM_LOCATION_TYPE_DEVICE", cuda::CU_MEM_LOCATION_TYPE_DEVICE as u64);
    check("access_rw", "CU_MEM_ACCESS_FLAGS_PROT_READWRITE", cuda::CU_MEM_ACCESS_FLAGS_PROT_READWRITE as u64);
    check("granularity_min", "CU_MEM_ALLOC_GRANULARITY_MINIMUM", cuda::CU_MEM_ALLOC_GRANULARITY_MINIMUM as u64);
    check("range_start", "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", cuda::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR as u64);
    check("range_size", "CU_POINTER_ATTRIBUTE_RANGE_SIZE", cuda::CU_POINTER_ATTRIBUTE_RANGE_SIZE as u64);
    type Ml = cuda::MemLocation;
    check("ml_size", "sizeof(CUmemLocation)", size_of::<Ml>() as u64);
    check("ml_id", "offsetof(CUmemLocation, id)", offset_of!(Ml, id) as u64);
    type Mp = cuda::MemAllocationProp;
    check("mp_size", "sizeof(CUmemAllocationProp)", size_of::<Mp>() as u64);
    check("mp_handles", "offsetof(CUmemAllocationProp, requestedHandleTypes)", offset_of!(Mp, requested_handle_types) as u64);
    check("mp_location", "offsetof(CUmemAllocationProp, location)", offset_of!(Mp, location) as u64);
    check("mp_win32", "offsetof(CUmemAllocationProp, win32HandleMetaData)", offset_of!(Mp, win32_handle_meta_data) as u64);
    check("mp_flags", "offsetof(CUmemAllocationProp, allocFlags)", offset_of!(Mp, alloc_flags) as u64);
    check("mp_flags_size", "sizeof(((CUmemAllocationProp *)0)->allocFlags)", 8);
    type Ma = cuda::MemAccessDesc;
    check("ma_size", "sizeof(CUmemAccessDesc)", size_of::<Ma>() as u64);
    check("ma_flags", "offsetof(CUmemAccessDesc, flags)", offset_of!(Ma, flags) as u64);
    // The program's allocations, as CUPTI reports them.
    for (name, cbid) in [
        ("cuMemAlloc_v2", track::CBID_MEM_ALLOC_V2),
        ("cuMemAllocPitch_v2", track::CBID_MEM_ALLOC_PITCH_V2),
        ("cuMemFree_v2", track::CBID_MEM_FREE_V2),
        ("cuMemAllocManaged", track::CBID_MEM_ALLOC_MANAGED),
        ("cuMemAllocAsync", track::CBID_MEM_ALLOC_ASYNC),
        ("cuMemAllocAsync_ptsz", track::CBID_MEM_ALLOC_ASYNC_PTSZ),
        ("cuMemFreeAsync", track::CBID_MEM_FREE_ASYNC),
        ("cuMemFreeAsync_ptsz", track::CBID_MEM_FREE_ASYNC_PTSZ),
        ("cuMemAllocFromPoolAsync", track::CBID_MEM_ALLOC_FROM_POOL_ASYNC),
        ("cuMemAllocFromPoolAsync_ptsz", track::CBID_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ),
    ] {
        check(&format!("cbid_{name}"), &format!("CUPTI_DRIVER_TRACE_CBID_{name}"), cbid as u64);
    }
    type Ap = track::MemAllocParams;
    for params in [
        "cuMemAlloc_v2_params",
        "cuMemAllocManaged_params",
        "cuMemAllocAsync_params",
        "cuMemAllocAsync_ptsz_params",
        "cuMemAllocFromPoolAsync_params",
        "cuMemAllocFromPoolAsync_ptsz_params",
    ] {
        check(&format!("{params}_dptr"), &format!("offsetof({params}, dptr)"), offset_of!(Ap, dptr) as u64);
        check(&format!("{params}_bytesize"), &format!("offsetof({params}, bytesize)"), offset_of!(Ap, bytesize) as u64);
    }
    type Pp = track::MemAllocPitchParams;
    check("pitch_size", "sizeof(cuMemAllocPitch_v2_params)", size_of::<Pp>() as u64);
    check("pitch_pitch", "offsetof(cuMemAllocPitch_v2_params, pPitch)", offset_of!(Pp, p_pitch) as u64);
    check("pitch_height", "offsetof(cuMemAllocPitch_v2_params, Height)", offset_of!(Pp, height) as u64);
    check("pitch_element", "offsetof(cuMemAllocPitch_v2_params, ElementSizeBytes)", offset_of!(Pp, element_size_bytes) as u64);
    for params in ["cuMemFree_v2_params", "cuMemFreeAsync_params", "cuMemFreeAsync_ptsz_params"] {
        check(&format!("{params}_dptr"), &format!("offsetof({params}, dptr)"), offset_of!(track::MemFreeParams, dptr) as u64);
    }
    // The program's own launches of a replay's choice: CUPTI's kernel records.
    check("kind_kernel", "CUPTI_ACTIVITY_KIND_KERNEL", confirm::CUPTI_ACTIVITY_KIND_KERNEL as u64);
    check("kind_concurrent_kernel", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", confirm::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u64);
    for record in ["CUpti_ActivityKernel4", "CUpti_ActivityKernel9"] {
        check(&format!("{record}_regs"), &format!("offsetof({record}, registersPerThread)"), confirm::OFFSET_REGISTERS as u64);
        check(&format!("{record}_start"), &format!("offsetof({record}, start)"), confirm::OFFSET_START as u64);
        check(&format!("{record}_end"), &format!("offsetof({record}, end)"), confirm::OFFSET_END as u64);
        check(&format!("{record}_corr"), &format!("offsetof({record}, correlationId)"), confirm::OFFSET_CORRELATION as u64);
    }
    check("cu_func_attribute_num_regs", "CU_FUNC_ATTRIBUTE_NUM_REGS", cupti::CU_FUNC_ATTRIBUTE_NUM_REGS as u64);
    body.push_str(&declared(cuda::Driver::SYMBOLS));
    body.push_str(&declared(cuda::Vmm::SYMBOLS));
    body.push_str(&declared(cuda::Modules::SYMBOLS));
    body.push_str(&declared(cupti::Cupti::SYMBOLS));
    body.push_str(&declared(confirm::Activity::SYMBOLS));
    body.push_str(&declared(&["cuFuncGetParamInfo", "cuKernelGetParamInfo"]));
    let include_flag = format!("-I{}", include.display());
    let got = probe("#include <cuda.h>\n#include <cupti.h>", &[&include_flag], &body);
    assert_eq!(got, want);
}

#[test]
fn hip_declarations_match_the_headers() {
    let mut body = String::new();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut check = |name: &str, expr: &str, value: u64| {
        body.push_str(&print(name, expr));
        want.insert(name.to_string(), value);
    };
    check("h2d", "hipMemcpyHostToDevice", hip::HIP_MEMCPY_HOST_TO_DEVICE as u64);
    check("d2h", "hipMemcpyDeviceToHost", hip::HIP_MEMCPY_DEVICE_TO_HOST as u64);
    check("d2d", "hipMemcpyDeviceToDevice", hip::HIP_MEMCPY_DEVICE_TO_DEVICE as u64);
    check("max_threads", "HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK", hip::HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as u64);
    check("param_buffer", "(size_t)HIP_LAUNCH_PARAM_BUFFER_POINTER", hip::HIP_LAUNCH_PARAM_BUFFER_POINTER as u64);
    check("param_size", "(size_t)HIP_LAUNCH_PARAM_BUFFER_SIZE", hip::HIP_LAUNCH_PARAM_BUFFER_SIZE as u64);
    check("param_end", "(size_t)HIP_LAUNCH_PARAM_END", hip::HIP_LAUNCH_PARAM_END as u64);
    check("gcn_arch_name", "offsetof(hipDeviceProp_t, gcnArchName)", hip::GCN_ARCH_NAME_OFFSET as u64);
    check("name", "offsetof(hipDeviceProp_t, name)", 0);
    check("dim3", "sizeof(dim3)", size_of::<hip::Dim3>() as u64);
    check("illegal_address", "hipErrorIllegalAddress", 700);
    check("alloc_pinned", "hipMemAllocationTypePinned", hip::HIP_MEM_ALLOCATION_TYPE_PINNED as u64);
    check("location_device", "hipMemLocationTypeDevice", hip::HIP_MEM_LOCATION_TYPE_DEVICE as u64);
    check("access_rw", "hipMemAccessFlagsProtReadWrite", hip::HIP_MEM_ACCESS_FLAGS_PROT_READ_WRITE as u64);
    check("granularity_min", "hipMemAllocationGranularityMinimum", hip::HIP_MEM_ALLOCATION_GRANULARITY_MINIMUM as u64);
    type Ml = hip::MemLocation;
    check("ml_size", "sizeof(hipMemLocation)", size_of::<Ml>() as u64);
    check("ml_id", "offsetof(hipMemLocation, id)", offset_of!(Ml, id) as u64);
    type Mp = hip::MemAllocationProp;
    check("mp_size", "sizeof(hipMemAllocationProp)", size_of::<Mp>() as u64);
    check("mp_location", "offsetof(hipMemAllocationProp, location)", offset_of!(Mp, location) as u64);
    check("mp_handle", "offsetof(hipMemAllocationProp, requestedHandleType)", offset_of!(Mp, requested_handle_type) as u64);
    check("mp_type", "offsetof(hipMemAllocationProp, type)", offset_of!(Mp, kind) as u64);
    check("mp_usage", "offsetof(hipMemAllocationProp, usage)", offset_of!(Mp, usage) as u64);
    check("mp_win32", "offsetof(hipMemAllocationProp, win32HandleMetaData)", offset_of!(Mp, win32_handle_meta_data) as u64);
    type Ma = hip::MemAccessDesc;
    check("ma_size", "sizeof(hipMemAccessDesc)", size_of::<Ma>() as u64);
    check("ma_flags", "offsetof(hipMemAccessDesc, flags)", offset_of!(Ma, flags) as u64);
    body.push_str(&declared(hip::Runtime::SYMBOLS));
    body.push_str(&declared(hip::Vmm::SYMBOLS));
    // What the interposer wraps, besides __hipRegisterFunction (clang's ABI, in no header).
    body.push_str(&declared(&["hipLaunchKernel", "hipModuleGetFunction", "hipModuleLaunchKernel"]));
    let got = probe("#include <hip/hip_runtime_api.h>", &["-D__HIP_PLATFORM_AMD__"], &body);
    assert_eq!(got, want);
}

/// What measure follows beyond plain launches (cooperative launches, stream
/// capture, graphs), and the replayer's cooperative launch: callback ids,
/// the callbacks' parameter structures, the graph queries' structures, and
/// the queries' prototypes (assigned to typed pointers: a mismatch does not compile).
#[test]
fn graph_capture_and_cooperative_declarations_match_the_headers() {
    use regtune_runtime::graph;
    let include = cuda_include();
    let mut body = String::new();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut check = |name: &str, expr: &str, value: u64| {
        body.push_str(&print(name, expr));
        want.insert(name.to_string(), value);
    };
    for (name, cbid) in [
        ("cuLaunchCooperativeKernel", cupti::CBID_CU_LAUNCH_COOPERATIVE_KERNEL),
        ("cuLaunchCooperativeKernel_ptsz", cupti::CBID_CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ),
        ("cuStreamBeginCapture", cupti::CBID_CU_STREAM_BEGIN_CAPTURE),
        ("cuStreamBeginCapture_ptsz", cupti::CBID_CU_STREAM_BEGIN_CAPTURE_PTSZ),
        ("cuStreamEndCapture", cupti::CBID_CU_STREAM_END_CAPTURE),
        ("cuStreamEndCapture_ptsz", cupti::CBID_CU_STREAM_END_CAPTURE_PTSZ),
        ("cuStreamBeginCapture_v2", cupti::CBID_CU_STREAM_BEGIN_CAPTURE_V2),
        ("cuStreamBeginCapture_v2_ptsz", cupti::CBID_CU_STREAM_BEGIN_CAPTURE_V2_PTSZ),
        ("cuStreamBeginCaptureToGraph", cupti::CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH),
        ("cuStreamBeginCaptureToGraph_ptsz", cupti::CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ),
        ("cuGraphInstantiate", cupti::CBID_CU_GRAPH_INSTANTIATE),
        ("cuGraphInstantiate_v2", cupti::CBID_CU_GRAPH_INSTANTIATE_V2),
        ("cuGraphInstantiateWithFlags", cupti::CBID_CU_GRAPH_INSTANTIATE_WITH_FLAGS),
        ("cuGraphInstantiateWithParams", cupti::CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS),
        ("cuGraphInstantiateWithParams_ptsz", cupti::CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ),
        ("cuGraphLaunch", cupti::CBID_CU_GRAPH_LAUNCH),
        ("cuGraphLaunch_ptsz", cupti::CBID_CU_GRAPH_LAUNCH_PTSZ),
        ("cuGraphExecDestroy", cupti::CBID_CU_GRAPH_EXEC_DESTROY),
        ("cuGraphDestroy", cupti::CBID_CU_GRAPH_DESTROY),
        ("cuGraphExecKernelNodeSetParams", cupti::CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS),
        ("cuGraphExecKernelNodeSetParams_v2", cupti::CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_V2),
        ("cuGraphExecMemsetNodeSetParams", cupti::CBID_CU_GRAPH_EXEC_MEMSET_NODE_SET_PARAMS),
        ("cuGraphExecNodeSetParams", cupti::CBID_CU_GRAPH_EXEC_NODE_SET_PARAMS),
        ("cuGraphNodeSetEnabled", cupti::CBID_CU_GRAPH_NODE_SET_ENABLED),
        ("cuGraphExecUpdate", cupti::CBID_CU_GRAPH_EXEC_UPDATE),
        ("cuGraphExecUpdate_v2", cupti::CBID_CU_GRAPH_EXEC_UPDATE_V2),
        ("cuGetProcAddress", cupti::CBID_CU_GET_PROC_ADDRESS),
        ("cuGetProcAddress_v2", cupti::CBID_CU_GET_PROC_ADDRESS_V2),
    ] {
        check(&format!("cbid_{name}"), &format!("CUPTI_DRIVER_TRACE_CBID_{name}"), cbid as u64);
    }
    // The callbacks' parameters.
    type Lc = cupti::LaunchCooperativeKernelParams;
    for p in ["cuLaunchCooperativeKernel_params", "cuLaunchCooperativeKernel_ptsz_params"] {
        check(&format!("{p}_size"), &format!("sizeof({p})"), size_of::<Lc>() as u64);
        check(&format!("{p}_shared"), &format!("offsetof({p}, sharedMemBytes)"), offset_of!(Lc, shared_mem_bytes) as u64);
        check(&format!("{p}_stream"), &format!("offsetof({p}, hStream)"), offset_of!(Lc, h_stream) as u64);
        check(&format!("{p}_params"), &format!("offsetof({p}, kernelParams)"), offset_of!(Lc, kernel_params) as u64);
    }
    check("lx_attrs", "offsetof(CUlaunchConfig, attrs)", offset_of!(cupti::LaunchConfigEx, attrs) as u64);
    check("lx_num_attrs", "offsetof(CUlaunchConfig, numAttrs)", offset_of!(cupti::LaunchConfigEx, num_attrs) as u64);
    type Gl = cupti::GraphLaunchParams;
    check("graph_launch_size", "sizeof(cuGraphLaunch_params)", size_of::<Gl>() as u64);
    check("graph_launch_exec", "offsetof(cuGraphLaunch_params, hGraph)", offset_of!(Gl, h_graph_exec) as u64);
    check("graph_launch_stream", "offsetof(cuGraphLaunch_params, hStream)", offset_of!(Gl, h_stream) as u64);
    check("graph_launch_ptsz_exec", "offsetof(cuGraphLaunch_ptsz_params, hGraphExec)", offset_of!(Gl, h_graph_exec) as u64);
    check("graph_launch_ptsz_stream", "offsetof(cuGraphLaunch_ptsz_params, hStream)", offset_of!(Gl, h_stream) as u64);
    type Gi = cupti::GraphInstantiateParams;
    for p in [
        "cuGraphInstantiate_params",
        "cuGraphInstantiate_v2_params",
        "cuGraphInstantiateWithFlags_params",
        "cuGraphInstantiateWithParams_params",
        "cuGraphInstantiateWithParams_ptsz_params",
    ] {
        check(&format!("{p}_exec"), &format!("offsetof({p}, phGraphExec)"), offset_of!(Gi, ph_graph_exec) as u64);
        check(&format!("{p}_graph"), &format!("offsetof({p}, hGraph)"), offset_of!(Gi, h_graph) as u64);
    }
    type Gn = cupti::GraphExecNodeParams;
    for (p, field) in [
        ("cuGraphExecKernelNodeSetParams_params", "nodeParams"),
        ("cuGraphExecKernelNodeSetParams_v2_params", "nodeParams"),
        ("cuGraphExecNodeSetParams_params", "nodeParams"),
        ("cuGraphExecMemsetNodeSetParams_params", "memsetParams"),
    ] {
        check(&format!("{p}_exec"), &format!("offsetof({p}, hGraphExec)"), offset_of!(Gn, h_graph_exec) as u64);
        check(&format!("{p}_node"), &format!("offsetof({p}, hNode)"), offset_of!(Gn, h_node) as u64);
        check(&format!("{p}_params"), &format!("offsetof({p}, {field})"), offset_of!(Gn, params) as u64);
    }
    type Ge = cupti::GraphNodeSetEnabledParams;
    check("enabled_node", "offsetof(cuGraphNodeSetEnabled_params, hNode)", offset_of!(Ge, h_node) as u64);
    check("enabled_is", "offsetof(cuGraphNodeSetEnabled_params, isEnabled)", offset_of!(Ge, is_enabled) as u64);
    type Gu = cupti::GraphExecUpdateParams;
    for p in ["cuGraphExecUpdate_params", "cuGraphExecUpdate_v2_params"] {
        check(&format!("{p}_exec"), &format!("offsetof({p}, hGraphExec)"), offset_of!(Gu, h_graph_exec) as u64);
        check(&format!("{p}_graph"), &format!("offsetof({p}, hGraph)"), offset_of!(Gu, h_graph) as u64);
    }
    check("destroy_exec", "offsetof(cuGraphExecDestroy_params, hGraphExec)", offset_of!(Gu, h_graph_exec) as u64);
    check("destroy_graph_size", "sizeof(cuGraphDestroy_params)", size_of::<cupti::GraphDestroyParams>() as u64);
    check("destroy_graph", "offsetof(cuGraphDestroy_params, hGraph)", offset_of!(cupti::GraphDestroyParams, h_graph) as u64);
    type Gp = cupti::GetProcAddressParams;
    for p in ["cuGetProcAddress_params", "cuGetProcAddress_v2_params"] {
        check(&format!("{p}_symbol"), &format!("offsetof({p}, symbol)"), offset_of!(Gp, symbol) as u64);
        check(&format!("{p}_pfn"), &format!("offsetof({p}, pfn)"), offset_of!(Gp, pfn) as u64);
    }
    for p in [
        "cuStreamBeginCapture_params",
        "cuStreamBeginCapture_ptsz_params",
        "cuStreamBeginCapture_v2_params",
        "cuStreamBeginCapture_v2_ptsz_params",
        "cuStreamBeginCaptureToGraph_params",
        "cuStreamBeginCaptureToGraph_ptsz_params",
        "cuStreamEndCapture_params",
        "cuStreamEndCapture_ptsz_params",
    ] {
        check(&format!("{p}_stream"), &format!("offsetof({p}, hStream)"), offset_of!(cupti::StreamCaptureParams, h_stream) as u64);
    }
    // The graph queries' structures and constants.
    type Kn = graph::KernelNodeParams;
    for s in ["CUDA_KERNEL_NODE_PARAMS", "CUDA_KERNEL_NODE_PARAMS_v3"] {
        check(&format!("{s}_size"), &format!("sizeof({s})"), size_of::<Kn>() as u64);
        check(&format!("{s}_shared"), &format!("offsetof({s}, sharedMemBytes)"), offset_of!(Kn, shared_mem_bytes) as u64);
        check(&format!("{s}_params"), &format!("offsetof({s}, kernelParams)"), offset_of!(Kn, kernel_params) as u64);
        check(&format!("{s}_extra"), &format!("offsetof({s}, extra)"), offset_of!(Kn, extra) as u64);
        check(&format!("{s}_kern"), &format!("offsetof({s}, kern)"), offset_of!(Kn, kern) as u64);
    }
    check("kn_v1_extra", "offsetof(CUDA_KERNEL_NODE_PARAMS_v1, extra)", offset_of!(Kn, extra) as u64);
    type Ms = graph::MemsetParams;
    check("memset_size", "sizeof(CUDA_MEMSET_NODE_PARAMS)", size_of::<Ms>() as u64);
    for s in ["CUDA_MEMSET_NODE_PARAMS", "CUDA_MEMSET_NODE_PARAMS_v2"] {
        check(&format!("{s}_value"), &format!("offsetof({s}, value)"), offset_of!(Ms, value) as u64);
        check(&format!("{s}_element"), &format!("offsetof({s}, elementSize)"), offset_of!(Ms, element_size) as u64);
        check(&format!("{s}_width"), &format!("offsetof({s}, width)"), offset_of!(Ms, width) as u64);
        check(&format!("{s}_height"), &format!("offsetof({s}, height)"), offset_of!(Ms, height) as u64);
    }
    type Np = graph::NodeParams;
    check("np_size", "sizeof(CUgraphNodeParams)", size_of::<Np>() as u64);
    check("np_kernel", "offsetof(CUgraphNodeParams, kernel)", offset_of!(Np, union) as u64);
    check("np_memset", "offsetof(CUgraphNodeParams, memset)", offset_of!(Np, union) as u64);
    check("la_size", "sizeof(CUlaunchAttribute)", size_of::<graph::LaunchAttribute>() as u64);
    check("la_value", "offsetof(CUlaunchAttribute, value)", offset_of!(graph::LaunchAttribute, value) as u64);
    check("lav_size", "sizeof(CUlaunchAttributeValue)", size_of::<graph::LaunchAttributeValue>() as u64);
    check("lav_cooperative", "offsetof(CUlaunchAttributeValue, cooperative)", 0);
    check("attr_cooperative", "CU_LAUNCH_ATTRIBUTE_COOPERATIVE", graph::LAUNCH_ATTRIBUTE_COOPERATIVE as u64);
    check("node_attr_cooperative", "CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE", graph::LAUNCH_ATTRIBUTE_COOPERATIVE as u64);
    for (name, value) in [
        ("CU_GRAPH_NODE_TYPE_KERNEL", graph::NODE_KERNEL),
        ("CU_GRAPH_NODE_TYPE_MEMCPY", graph::NODE_MEMCPY),
        ("CU_GRAPH_NODE_TYPE_MEMSET", graph::NODE_MEMSET),
        ("CU_GRAPH_NODE_TYPE_HOST", graph::NODE_HOST),
        ("CU_GRAPH_NODE_TYPE_GRAPH", graph::NODE_GRAPH),
        ("CU_GRAPH_NODE_TYPE_EMPTY", graph::NODE_EMPTY),
        ("CU_GRAPH_NODE_TYPE_WAIT_EVENT", graph::NODE_WAIT_EVENT),
        ("CU_GRAPH_NODE_TYPE_EVENT_RECORD", graph::NODE_EVENT_RECORD),
        ("CU_STREAM_CAPTURE_STATUS_NONE", graph::CAPTURE_STATUS_NONE),
        ("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        ("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", cuda::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
    ] {
        check(name, name, value as u64);
    }
    check("per_thread", "(size_t)CU_STREAM_PER_THREAD", graph::STREAM_PER_THREAD as u64);
    body.push_str(&declared(graph::GraphApi::SYMBOLS));
    body.push_str(&declared(graph::CaptureApi::SYMBOLS));
    body.push_str(&declared(regtune_runtime::graph_parts::PartsApi::SYMBOLS));
    for (name, proto) in [
        ("cuGraphGetNodes", "CUresult (*)(CUgraph, CUgraphNode *, size_t *)"),
        ("cuGraphGetEdges", "CUresult (*)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *)"),
        ("cuGraphNodeGetType", "CUresult (*)(CUgraphNode, CUgraphNodeType *)"),
        ("cuGraphKernelNodeGetParams_v2", "CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *)"),
        ("cuGraphKernelNodeGetAttribute", "CUresult (*)(CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue *)"),
        ("cuGraphMemsetNodeGetParams", "CUresult (*)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *)"),
        ("cuFuncGetName", "CUresult (*)(const char **, CUfunction)"),
        ("cuKernelGetName", "CUresult (*)(const char **, CUkernel)"),
        ("cuStreamIsCapturing", "CUresult (*)(CUstream, CUstreamCaptureStatus *)"),
        ("cuGraphNodeSetEnabled", "CUresult (*)(CUgraphExec, CUgraphNode, unsigned int)"),
        ("cuGraphNodeGetEnabled", "CUresult (*)(CUgraphExec, CUgraphNode, unsigned int *)"),
        ("cuGraphLaunch", "CUresult (*)(CUgraphExec, CUstream)"),
        (
            "cuLaunchCooperativeKernel",
            "CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **)",
        ),
        ("cuOccupancyMaxActiveBlocksPerMultiprocessor", "CUresult (*)(int *, CUfunction, int, size_t)"),
    ] {
        body.push_str(&format!("{{ {} = (__typeof__(&{name}))0; (void)p; }}\n", proto.replacen("(*)", "(*p)", 1)));
    }
    let include_flag = format!("-I{}", include.display());
    let got = probe("#include <cuda.h>\n#include <cupti.h>", &[&include_flag], &body);
    assert_eq!(got, want);
}
