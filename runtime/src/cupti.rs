//! CUDA's official tool-injection path: the driver loads this library
//! when `CUDA_INJECTION64_PATH` names it and calls `InitializeInjection`,
//! which subscribes to CUPTI's callbacks on the driver's launch calls.
//! The runtime API (static or shared cudart) launches through them, so
//! every `<<<...>>>`, `cudaLaunchKernel` and `cuLaunchKernel` is seen.
//!
//! CUPTI (libcupti.so.12, NVIDIA's `nvidia-cuda-cupti-cu12` wheel) is
//! opened at run time from `$REGTUNE_CUPTI`, else by soname. Structures and
//! callback ids are cupti_callbacks.h's, cupti_driver_cbid.h's and
//! generated_cuda_meta.h's; `tests/runtime.rs` checks them against the headers.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use crate::capture;
use crate::cuda::{
    self, Cuda, Handle, ProgramContext, CUDA_SUCCESS, CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END,
};
use crate::dl::{api, Library};
use crate::interpose::{Interposer, Launch, Pending};
use crate::plan::{Event, EventLog, LaunchConfig};

pub const CUPTI_ENV: &str = "REGTUNE_CUPTI";
pub const CUPTI_CB_DOMAIN_DRIVER_API: c_int = 1;
pub const CUPTI_CB_DOMAIN_RESOURCE: c_int = 3;
pub const CBID_RESOURCE_MODULE_LOADED: u32 = 6;
pub const CUPTI_API_ENTER: c_int = 0;
pub const CUPTI_API_EXIT: c_int = 1;
pub const CBID_CU_LAUNCH_KERNEL: u32 = 307;
pub const CBID_CU_LAUNCH_KERNEL_PTSZ: u32 = 442;
pub const CBID_CU_LAUNCH_KERNEL_EX: u32 = 652;
pub const CBID_CU_LAUNCH_KERNEL_EX_PTSZ: u32 = 653;

/// `CUpti_CallbackData`.
#[repr(C)]
pub struct CallbackData {
    pub callback_site: c_int,
    pub function_name: *const c_char,
    pub function_params: *const c_void,
    pub function_return_value: *mut c_void,
    pub symbol_name: *const c_char,
    pub context: Handle,
    pub context_uid: u32,
    pub correlation_data: *mut u64,
    pub correlation_id: u32,
}

/// `CUpti_ResourceData`.
#[repr(C)]
pub struct ResourceData {
    pub context: Handle,
    pub resource_handle: Handle,
    pub resource_descriptor: *const c_void,
}

/// `CUpti_ModuleResourceData`.
#[repr(C)]
pub struct ModuleResourceData {
    pub module_id: u32,
    pub cubin_size: usize,
    pub cubin: *const c_char,
}

/// `cuLaunchKernel_params` (and `_ptsz`).
#[repr(C)]
pub struct LaunchKernelParams {
    pub f: Handle,
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub h_stream: Handle,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfigEx {
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub h_stream: Handle,
    pub attrs: *mut c_void,
    pub num_attrs: c_uint,
}

/// `cuLaunchKernelEx_params` (and `_ptsz`).
#[repr(C)]
pub struct LaunchKernelExParams {
    pub config: *const LaunchConfigEx,
    pub f: Handle,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

type Callback = unsafe extern "C" fn(*mut c_void, c_int, u32, *const c_void);

api!(Cupti {
    subscribe = "cuptiSubscribe": fn(*mut Handle, Callback, *mut c_void) -> c_int;
    enable_callback = "cuptiEnableCallback": fn(u32, Handle, c_int, u32) -> c_int;
});

struct State {
    interposer: Interposer,
    cuda: &'static Cuda,
}

fn state() -> &'static Mutex<Option<State>> {
    static STATE: OnceLock<Mutex<Option<State>>> = OnceLock::new();
    STATE.get_or_init(|| Mutex::new(None))
}

thread_local! {
    /// A launch replayed at API entry, finished at API exit (same thread).
    static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
}

/// Called by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH`
/// names this library. Returns 1 (success) even when measuring is off, so
/// the program always runs.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    let _ = std::panic::catch_unwind(initialize);
    1
}

fn initialize() {
    let Some(interposer) = Interposer::from_env("cuda") else { return };
    let fail = |interposer: Interposer, message: String| {
        let dir = std::env::var_os(crate::plan::DIR_ENV).map(std::path::PathBuf::from);
        if let Some(mut log) = dir.and_then(|d| EventLog::open(&d.join(crate::plan::EVENTS_FILE)).ok()) {
            log.write(&Event::Failed { symbol: String::new(), key: String::new(), message });
        }
        drop(interposer);
    };
    let cuda = match cuda::driver() {
        Ok(c) => c,
        Err(e) => return fail(interposer, e),
    };
    let names: Vec<String> = std::env::var(CUPTI_ENV).ok().into_iter().chain(["libcupti.so.12".into(), "libcupti.so".into()]).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let cupti = match Library::open(&names).and_then(|lib| Cupti::load(&lib).map(|api| (api, lib))) {
        Ok(c) => c,
        Err(e) => return fail(interposer, format!("cannot load CUPTI (set {CUPTI_ENV}): {e}")),
    };
    // CUPTI stays loaded for the life of the process (a Library never closes).
    let (api, _lib) = cupti;
    let mut subscriber: Handle = std::ptr::null_mut();
    // SAFETY: `on_driver_call` has CUpti_CallbackFunc's prototype; out-pointer valid.
    let code = unsafe { (api.subscribe)(&mut subscriber, on_driver_call, std::ptr::null_mut()) };
    if code != 0 {
        return fail(interposer, format!("cuptiSubscribe failed ({code}): another CUPTI tool may be attached"));
    }
    for cbid in [CBID_CU_LAUNCH_KERNEL, CBID_CU_LAUNCH_KERNEL_PTSZ, CBID_CU_LAUNCH_KERNEL_EX, CBID_CU_LAUNCH_KERNEL_EX_PTSZ] {
        // SAFETY: a live subscriber and documented ids.
        unsafe { (api.enable_callback)(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) };
    }
    // The modules the program loads: is a planned kernel the code regtune tuned?
    // SAFETY: as above.
    unsafe { (api.enable_callback)(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CBID_RESOURCE_MODULE_LOADED) };
    let _ = PLAIN_CODES.set(interposer.plain_codes());
    if let Ok(mut s) = state().lock() {
        *s = Some(State { interposer, cuda });
    }
}

/// Each planned kernel's code in the plain build (symbol, key, code), set
/// once at start: a module-loaded callback reads it without the state's
/// lock, which a launch callback may hold while the driver loads a module.
static PLAIN_CODES: OnceLock<Vec<(String, String, Vec<u8>)>> = OnceLock::new();
/// Keys of entries whose kernel a loaded module holds as other code; the
/// next launch callback stops measuring them.
static NOT_THE_PROGRAMS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A driver launch, as the callback sees it.
struct Call {
    f: Handle,
    config: LaunchConfig,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// # Safety
/// `params` must be the `functionParams` CUPTI passes for callback `cbid`.
unsafe fn decode(cbid: u32, params: *const c_void) -> Option<Call> {
    if params.is_null() {
        return None;
    }
    match cbid {
        CBID_CU_LAUNCH_KERNEL | CBID_CU_LAUNCH_KERNEL_PTSZ => {
            // SAFETY: for these ids CUPTI passes a cuLaunchKernel_params.
            let p = unsafe { &*(params as *const LaunchKernelParams) };
            let config = LaunchConfig {
                grid: [p.grid_dim_x, p.grid_dim_y, p.grid_dim_z],
                block: [p.block_dim_x, p.block_dim_y, p.block_dim_z],
                shared_bytes: p.shared_mem_bytes,
            };
            Some(Call { f: p.f, config, kernel_params: p.kernel_params, extra: p.extra })
        }
        CBID_CU_LAUNCH_KERNEL_EX | CBID_CU_LAUNCH_KERNEL_EX_PTSZ => {
            // SAFETY: for these ids CUPTI passes a cuLaunchKernelEx_params.
            let p = unsafe { &*(params as *const LaunchKernelExParams) };
            if p.config.is_null() {
                return None;
            }
            // SAFETY: the caller's launch config, valid for the call.
            let c = unsafe { &*p.config };
            let config = LaunchConfig {
                grid: [c.grid_dim_x, c.grid_dim_y, c.grid_dim_z],
                block: [c.block_dim_x, c.block_dim_y, c.block_dim_z],
                shared_bytes: c.shared_mem_bytes,
            };
            Some(Call { f: p.f, config, kernel_params: p.kernel_params, extra: p.extra })
        }
        _ => None,
    }
}

/// The argument buffer of a launch, from `kernelParams` or `extra`.
///
/// # Safety
/// The pointers must be the ones the program passed to the launch call.
unsafe fn arguments(call: &Call, params: &[crate::plan::Param]) -> Option<Vec<u8>> {
    if !call.kernel_params.is_null() {
        // SAFETY: the driver's contract: one value pointer per parameter.
        let values: Vec<*const u8> = (0..params.len()).map(|i| unsafe { *call.kernel_params.add(i) } as *const u8).collect();
        // SAFETY: each points to its parameter's bytes.
        return Some(unsafe { capture::pack(params, &values) });
    }
    let (mut buffer, mut size): (*const u8, usize) = (std::ptr::null(), 0);
    let mut i = 0;
    // SAFETY: `extra` is a key/value list ending in CU_LAUNCH_PARAM_END.
    unsafe {
        while !call.extra.is_null() && *call.extra.add(i) as usize != CU_LAUNCH_PARAM_END {
            let (key, value) = (*call.extra.add(i) as usize, *call.extra.add(i + 1));
            if key == CU_LAUNCH_PARAM_BUFFER_POINTER {
                buffer = value as *const u8;
            } else if key == CU_LAUNCH_PARAM_BUFFER_SIZE && !value.is_null() {
                size = *(value as *const usize);
            }
            i += 2;
        }
    }
    // SAFETY: the program's argument buffer of `size` bytes.
    (!buffer.is_null()).then(|| unsafe { std::slice::from_raw_parts(buffer, size) }.to_vec())
}

unsafe extern "C" fn on_driver_call(_user: *mut c_void, domain: c_int, cbid: u32, data: *const c_void) {
    if domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CBID_RESOURCE_MODULE_LOADED && !data.is_null() {
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: for this resource callback CUPTI passes a CUpti_ResourceData
            // whose descriptor is the module's CUpti_ModuleResourceData.
            unsafe { on_module_loaded(&*(data as *const ResourceData)) }
        });
        return;
    }
    if domain != CUPTI_CB_DOMAIN_DRIVER_API || data.is_null() {
        return;
    }
    // SAFETY: for the driver domain CUPTI passes a CUpti_CallbackData.
    let data = unsafe { &*(data as *const CallbackData) };
    // Never unwind into the driver.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the callback's own data, valid for this call.
        unsafe { on_launch(cbid, data) }
    }));
}

/// # Safety
/// `data` is CUPTI's data for a module-loaded callback, valid for this call.
unsafe fn on_module_loaded(data: &ResourceData) {
    let module = data.resource_descriptor as *const ModuleResourceData;
    if module.is_null() {
        return;
    }
    // SAFETY: the module's data, valid within the callback.
    let module = unsafe { &*module };
    if module.cubin.is_null() || module.cubin_size == 0 {
        return;
    }
    // SAFETY: CUPTI's pointer to `cubin_size` bytes, valid within the callback.
    let cubin = unsafe { std::slice::from_raw_parts(module.cubin as *const u8, module.cubin_size) };
    let Some(planned) = PLAIN_CODES.get() else { return };
    let differing = planned.iter().filter(|(symbol, _, plain)| crate::code::kernel_code(cubin, symbol).is_some_and(|c| &c != plain));
    if let Ok(mut keys) = NOT_THE_PROGRAMS.lock() {
        keys.extend(differing.map(|(_, key, _)| key.clone()));
    }
}

/// # Safety
/// `data` is CUPTI's callback data for a launch callback.
unsafe fn on_launch(cbid: u32, data: &CallbackData) {
    if data.callback_site == CUPTI_API_EXIT {
        let Some(pending) = PENDING.with(|p| p.borrow_mut().take()) else { return };
        // SAFETY: for driver calls the return value is a CUresult.
        let ran = !data.function_return_value.is_null() && unsafe { *(data.function_return_value as *const c_int) } == CUDA_SUCCESS;
        if let Ok(mut s) = state().lock() {
            if let Some(s) = s.as_mut() {
                s.interposer.after(&ProgramContext(s.cuda), pending, ran);
            }
        }
        return;
    }
    if data.callback_site != CUPTI_API_ENTER || data.symbol_name.is_null() {
        return;
    }
    // SAFETY: CUPTI's kernel name for launch callbacks, valid for this call.
    let symbol = unsafe { CStr::from_ptr(data.symbol_name) }.to_string_lossy().into_owned();
    let Ok(mut guard) = state().lock() else { return };
    let Some(s) = guard.as_mut() else { return };
    if s.interposer.wants(&symbol).is_none() {
        s.interposer.unplanned(&symbol);
        return;
    }
    // SAFETY: functionParams for this callback id.
    let Some(call) = (unsafe { decode(cbid, data.function_params) }) else { return };
    // Its module loaded now (callback included), then checked against regtune's plain build.
    // SAFETY: the handle the program launches.
    unsafe { s.cuda.load(call.f) };
    let differing: Vec<String> = NOT_THE_PROGRAMS.lock().map(|mut keys| keys.drain(..).collect()).unwrap_or_default();
    for key in differing {
        s.interposer.not_the_programs_code(&key);
    }
    if s.interposer.wants(&symbol).is_none() {
        return;
    }
    let kernel = s.interposer.wants(&symbol).cloned().expect("wanted above");
    // SAFETY: the handle the program launches.
    let params = match (unsafe { s.cuda.params(call.f) }, kernel.params.is_empty()) {
        (Some(driver), true) => driver,
        (Some(driver), false) if driver == kernel.params => driver,
        (Some(driver), false) => {
            let why = format!(
                "the program's kernel takes other parameters than regtune's build ({driver:?} vs {:?}): the db does not match this program",
                kernel.params
            );
            return s.interposer.fail(&kernel, why);
        }
        (None, false) => kernel.params.clone(),
        (None, true) => return s.interposer.fail(&kernel, "cannot tell the kernel's parameters (CUDA 12.4+ driver needed)".into()),
    };
    // SAFETY: the program's own launch arguments.
    let Some(args) = (unsafe { arguments(&call, &params) }) else { return };
    let launch = Launch { symbol, config: call.config, args, params };
    let pending = s.interposer.before(&ProgramContext(s.cuda), &launch);
    PENDING.with(|p| *p.borrow_mut() = pending);
}
