//! The allocations a CUDA program has live, from CUPTI's callbacks on the
//! driver's allocation calls (cudart's `cudaMalloc`, `cudaMallocManaged`,
//! `cudaMallocAsync`, `cudaMallocPitch` and their frees come through them
//! too): where a pointer stored in device memory leads, when a launch's
//! copy follows it ([`crate::capture::reach`]). Structures and callback
//! ids are generated_cuda_meta.h's and cupti_driver_cbid.h's;
//! `tests/runtime_abi.rs` checks them against the headers.

use std::ffi::{c_int, c_uint};

use super::{CallbackData, CUPTI_API_EXIT};
use crate::capture::{Live, LIVE};

pub const CBID_MEM_ALLOC_V2: u32 = 243;
pub const CBID_MEM_ALLOC_PITCH_V2: u32 = 244;
pub const CBID_MEM_FREE_V2: u32 = 245;
pub const CBID_MEM_ALLOC_MANAGED: u32 = 371;
pub const CBID_MEM_ALLOC_ASYNC: u32 = 598;
pub const CBID_MEM_ALLOC_ASYNC_PTSZ: u32 = 599;
pub const CBID_MEM_FREE_ASYNC: u32 = 600;
pub const CBID_MEM_FREE_ASYNC_PTSZ: u32 = 601;
pub const CBID_MEM_ALLOC_FROM_POOL_ASYNC: u32 = 611;
pub const CBID_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ: u32 = 612;

/// The driver calls tracked.
pub const CBIDS: [u32; 10] = [
    CBID_MEM_ALLOC_V2,
    CBID_MEM_ALLOC_PITCH_V2,
    CBID_MEM_FREE_V2,
    CBID_MEM_ALLOC_MANAGED,
    CBID_MEM_ALLOC_ASYNC,
    CBID_MEM_ALLOC_ASYNC_PTSZ,
    CBID_MEM_FREE_ASYNC,
    CBID_MEM_FREE_ASYNC_PTSZ,
    CBID_MEM_ALLOC_FROM_POOL_ASYNC,
    CBID_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ,
];

/// `cuMemAlloc_v2_params`; also how `cuMemAllocManaged_params`,
/// `cuMemAllocAsync_params` and `cuMemAllocFromPoolAsync_params` begin.
#[repr(C)]
pub struct MemAllocParams {
    pub dptr: *mut u64,
    pub bytesize: usize,
}

/// `cuMemAllocPitch_v2_params`.
#[repr(C)]
pub struct MemAllocPitchParams {
    pub dptr: *mut u64,
    pub p_pitch: *mut usize,
    pub width_in_bytes: usize,
    pub height: usize,
    pub element_size_bytes: c_uint,
}

/// `cuMemFree_v2_params`; also how `cuMemFreeAsync_params` begins.
#[repr(C)]
pub struct MemFreeParams {
    pub dptr: u64,
}

/// Start tracking (before the program allocates anything: at injection).
pub fn start() {
    if let Ok(mut live) = LIVE.lock() {
        live.get_or_insert_with(Live::default);
    }
}

/// One allocation call's exit: record what it made or freed.
///
/// # Safety
/// `data` must be CUPTI's callback data for `cbid`, one of [`CBIDS`].
pub unsafe fn on_call(cbid: u32, data: &CallbackData) {
    if data.callback_site != CUPTI_API_EXIT || data.function_params.is_null() || data.function_return_value.is_null() {
        return;
    }
    // SAFETY: for driver calls the return value is a CUresult.
    if unsafe { *(data.function_return_value as *const c_int) } != 0 {
        return;
    }
    let params = data.function_params;
    let Ok(mut guard) = LIVE.lock() else { return };
    let Some(live) = guard.as_mut() else { return };
    match cbid {
        CBID_MEM_FREE_V2 | CBID_MEM_FREE_ASYNC | CBID_MEM_FREE_ASYNC_PTSZ => {
            // SAFETY: these calls' parameters begin with the freed CUdeviceptr.
            live.remove(unsafe { (*(params as *const MemFreeParams)).dptr });
        }
        CBID_MEM_ALLOC_PITCH_V2 => {
            // SAFETY: cuMemAllocPitch_v2's parameters; the call succeeded, so both out-pointers were written.
            let p = unsafe { &*(params as *const MemAllocPitchParams) };
            if !p.dptr.is_null() && !p.p_pitch.is_null() {
                // SAFETY: as above.
                let (addr, pitch) = unsafe { (*p.dptr, *p.p_pitch) };
                live.insert(addr, (pitch * p.height) as u64);
            }
        }
        _ => {
            // SAFETY: the other tracked calls' parameters begin with (CUdeviceptr*, size_t).
            let p = unsafe { &*(params as *const MemAllocParams) };
            if !p.dptr.is_null() {
                // SAFETY: the call succeeded: the driver wrote the address.
                live.insert(unsafe { *p.dptr }, p.bytesize as u64);
            }
        }
    }
}
