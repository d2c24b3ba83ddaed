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

use regtune_runtime::{cuda, cupti, hip};

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
    body.push_str(&declared(cuda::Driver::SYMBOLS));
    body.push_str(&declared(cupti::Cupti::SYMBOLS));
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
    body.push_str(&declared(hip::Runtime::SYMBOLS));
    // What the interposer wraps, besides __hipRegisterFunction (clang's ABI, in no header).
    body.push_str(&declared(&["hipLaunchKernel", "hipModuleGetFunction", "hipModuleLaunchKernel"]));
    let got = probe("#include <hip/hip_runtime_api.h>", &["-D__HIP_PLATFORM_AMD__"], &body);
    assert_eq!(got, want);
}
