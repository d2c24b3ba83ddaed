//! The HIP runtime (libamdhip64), behind the same core as CUDA: the
//! interposer wraps `hipLaunchKernel` and `hipModuleLaunchKernel` when the
//! program runs with this library in `LD_PRELOAD`, and the replayer drives
//! its own context with [`HipGpu`]. Prototypes are hip_runtime_api.h's
//! (`tests/runtime.rs` checks them against ROCm's headers).
//!
//! Untested on AMD hardware: there is none where regtune is developed.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use crate::capture::{self, Range};
use crate::dl::{api, Library};
use crate::interpose::{Device, Host, Interposer, Launch};
use crate::plan::{LaunchConfig, Param};
use crate::replay::{Gpu, GpuError, Kernel};

pub type HipError = c_int;
pub type Handle = *mut c_void;
pub const HIP_SUCCESS: HipError = 0;
pub const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub const HIP_MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
pub const HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
pub const HIP_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const HIP_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;
pub const HIP_LAUNCH_PARAM_END: usize = 3;
/// `offsetof(hipDeviceProp_t, gcnArchName)` in HIP 5.2's layout.
pub const GCN_ARCH_NAME_OFFSET: usize = 396;
pub const HIP_MEM_ALLOCATION_TYPE_PINNED: c_int = 1;
pub const HIP_MEM_LOCATION_TYPE_DEVICE: c_int = 1;
pub const HIP_MEM_ACCESS_FLAGS_PROT_READ_WRITE: c_int = 3;
pub const HIP_MEM_ALLOCATION_GRANULARITY_MINIMUM: c_int = 0;

/// `hipMemLocation`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemLocation {
    pub kind: c_int,
    pub id: c_int,
}

/// `hipMemAllocationProp` as HIP 5.2's headers lay it out (the ones
/// checked here: the replayer maps only under a HIP 5 runtime).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemAllocationProp {
    pub compression_type: u8,
    pub location: MemLocation,
    pub requested_handle_type: c_int,
    pub kind: c_int,
    pub usage: u16,
    pub win32_handle_meta_data: *mut c_void,
}

/// `hipMemAccessDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemAccessDesc {
    pub location: MemLocation,
    pub flags: c_int,
}

/// HIP's `dim3`, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Dim3 {
    pub x: c_uint,
    pub y: c_uint,
    pub z: c_uint,
}

api!(Runtime {
    init = "hipInit": fn(c_uint) -> HipError;
    get_error_name = "hipGetErrorName": fn(HipError) -> *const c_char;
    get_device_count = "hipGetDeviceCount": fn(*mut c_int) -> HipError;
    get_device = "hipGetDevice": fn(*mut c_int) -> HipError;
    set_device = "hipSetDevice": fn(c_int) -> HipError;
    get_device_properties = "hipGetDeviceProperties": fn(*mut c_void, c_int) -> HipError;
    device_get_pci_bus_id = "hipDeviceGetPCIBusId": fn(*mut c_char, c_int, c_int) -> HipError;
    device_get_by_pci_bus_id = "hipDeviceGetByPCIBusId": fn(*mut c_int, *const c_char) -> HipError;
    device_synchronize = "hipDeviceSynchronize": fn() -> HipError;
    stream_is_capturing = "hipStreamIsCapturing": fn(Handle, *mut c_int) -> HipError;
    mem_get_info = "hipMemGetInfo": fn(*mut usize, *mut usize) -> HipError;
    malloc = "hipMalloc": fn(*mut Handle, usize) -> HipError;
    free = "hipFree": fn(Handle) -> HipError;
    memcpy = "hipMemcpy": fn(Handle, *const c_void, usize, c_int) -> HipError;
    mem_get_address_range = "hipMemGetAddressRange": fn(*mut Handle, *mut usize, Handle) -> HipError;
    module_load_data = "hipModuleLoadData": fn(*mut Handle, *const c_void) -> HipError;
    module_unload = "hipModuleUnload": fn(Handle) -> HipError;
    module_get_function = "hipModuleGetFunction": fn(*mut Handle, Handle, *const c_char) -> HipError;
    func_get_attribute = "hipFuncGetAttribute": fn(*mut c_int, c_int, Handle) -> HipError;
    module_launch_kernel = "hipModuleLaunchKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> HipError;
    event_create = "hipEventCreate": fn(*mut Handle) -> HipError;
    event_record = "hipEventRecord": fn(Handle, Handle) -> HipError;
    event_synchronize = "hipEventSynchronize": fn(Handle) -> HipError;
    event_elapsed_time = "hipEventElapsedTime": fn(*mut f32, Handle, Handle) -> HipError;
});

// Virtual memory management and module variables, for the replayer (HIP
// 5.2's declarations): its copies at the program's addresses.
api!(Vmm {
    runtime_get_version = "hipRuntimeGetVersion": fn(*mut c_int) -> HipError;
    mem_get_allocation_granularity = "hipMemGetAllocationGranularity": fn(*mut usize, *const MemAllocationProp, c_int) -> HipError;
    mem_address_reserve = "hipMemAddressReserve": fn(*mut Handle, usize, usize, Handle, u64) -> HipError;
    mem_address_free = "hipMemAddressFree": fn(Handle, usize) -> HipError;
    mem_create = "hipMemCreate": fn(*mut Handle, usize, *const MemAllocationProp, u64) -> HipError;
    mem_release = "hipMemRelease": fn(Handle) -> HipError;
    mem_map = "hipMemMap": fn(Handle, usize, usize, Handle, u64) -> HipError;
    mem_unmap = "hipMemUnmap": fn(Handle, usize) -> HipError;
    mem_set_access = "hipMemSetAccess": fn(Handle, usize, *const MemAccessDesc, usize) -> HipError;
    module_get_global = "hipModuleGetGlobal": fn(*mut Handle, *mut usize, Handle, *const c_char) -> HipError;
});

// HIP's entry points as the program would reach them without us.
api!(Wrapped {
    register_function = "__hipRegisterFunction": fn(*mut *mut c_void, *const c_void, *mut c_char, *const c_char, c_uint, *mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> ();
    launch_kernel = "hipLaunchKernel": fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, Handle) -> HipError;
    module_get_function = "hipModuleGetFunction": fn(*mut Handle, Handle, *const c_char) -> HipError;
    module_launch_kernel = "hipModuleLaunchKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> HipError;
});

pub struct Hip {
    pub api: Runtime,
    pub vmm: Option<Vmm>,
    _lib: Library,
}

/// The runtime, opened once per process.
pub fn runtime() -> Result<&'static Hip, String> {
    static HIP: OnceLock<Result<Hip, String>> = OnceLock::new();
    HIP.get_or_init(|| {
        let lib =
            Library::open(&["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"]).map_err(|e| format!("no HIP runtime ({e})"))?;
        let api = Runtime::load(&lib).map_err(|e| format!("the HIP runtime lacks {e}"))?;
        let vmm = Vmm::load(&lib).ok();
        Ok(Hip { api, vmm, _lib: lib })
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn wrapped() -> Option<&'static Wrapped> {
    static NEXT: OnceLock<Option<Wrapped>> = OnceLock::new();
    NEXT.get_or_init(|| Wrapped::load(&Library::next()).ok()).as_ref()
}

/// Errors after which the context is unusable.
fn is_sticky(code: HipError) -> bool {
    // IllegalAddress, LaunchTimeOut, Assert, LaunchFailure and kin, Unknown.
    matches!(code, 700 | 702 | 710 | 714..=719 | 999)
}

impl Hip {
    pub fn error_name(&self, code: HipError) -> String {
        // SAFETY: hipGetErrorName returns a static string for any code.
        let name = unsafe { (self.api.get_error_name)(code) };
        if name.is_null() {
            return format!("HIP error {code}");
        }
        // SAFETY: non-null, static, NUL-terminated.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }

    pub fn check(&self, code: HipError, what: &str) -> Result<(), GpuError> {
        if code == HIP_SUCCESS {
            return Ok(());
        }
        let message = format!("{what}: {}", self.error_name(code));
        Err(if is_sticky(code) { GpuError::Fault(message) } else { GpuError::Refused(message) })
    }

    fn describe(&self, device: c_int) -> Result<Device, String> {
        // hipDeviceProp_t grew across releases; a generous buffer holds any of them.
        let mut props = vec![0u8; 16 * 1024];
        let mut bus = [0 as c_char; 64];
        // SAFETY: buffers larger than the runtime writes.
        unsafe {
            self.check((self.api.get_device_properties)(props.as_mut_ptr().cast(), device), "hipGetDeviceProperties")
                .map_err(|e| e.to_string())?;
            self.check((self.api.device_get_pci_bus_id)(bus.as_mut_ptr(), bus.len() as c_int, device), "hipDeviceGetPCIBusId")
                .map_err(|e| e.to_string())?;
        }
        let c = |b: &[u8]| CStr::from_bytes_until_nul(b).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let name = c(&props[..256]);
        let gcn = c(&props[GCN_ARCH_NAME_OFFSET..GCN_ARCH_NAME_OFFSET + 256]);
        let arch = gcn.split(':').next().unwrap_or_default().to_string();
        // SAFETY: the runtime NUL-terminated `bus`.
        let id = unsafe { CStr::from_ptr(bus.as_ptr()) }.to_string_lossy().into_owned();
        Ok(Device { id, description: format!("{name} ({gcn})"), arch })
    }
}

/// Is there an AMD GPU this process can use?
pub fn probe() -> Result<Vec<String>, String> {
    let hip = runtime()?;
    let mut n = 0;
    // SAFETY: flags 0; an out-pointer.
    let code = unsafe {
        (hip.api.init)(0);
        (hip.api.get_device_count)(&mut n)
    };
    if code != HIP_SUCCESS || n == 0 {
        return Err(format!("no usable AMD GPU (hipGetDeviceCount: {})", hip.error_name(code)));
    }
    (0..n).map(|d| hip.describe(d).map(|d| d.description)).collect()
}

/// The program's HIP context, from inside one of its launches.
struct ProgramContext(&'static Hip);

impl Host for ProgramContext {
    fn synchronize(&self) -> Result<(), String> {
        // SAFETY: no arguments.
        self.0.check(unsafe { (self.0.api.device_synchronize)() }, "hipDeviceSynchronize").map_err(|e| e.to_string())
    }

    fn address_range(&self, ptr: u64) -> Option<Range> {
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: out-pointers; any value may be asked about.
        let code = unsafe { (self.0.api.mem_get_address_range)(&mut base, &mut size, ptr as Handle) };
        (code == HIP_SUCCESS).then_some(Range { addr: base as u64, bytes: size as u64 })
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), String> {
        // SAFETY: `dst` is writable for its length; the range came from the runtime.
        let code = unsafe { (self.0.api.memcpy)(dst.as_mut_ptr().cast(), addr as *const c_void, dst.len(), HIP_MEMCPY_DEVICE_TO_HOST) };
        self.0.check(code, "hipMemcpy").map_err(|e| e.to_string())
    }

    fn device(&self) -> Result<Device, String> {
        let mut d = 0;
        // SAFETY: an out-pointer.
        self.0.check(unsafe { (self.0.api.get_device)(&mut d) }, "hipGetDevice").map_err(|e| e.to_string())?;
        self.0.describe(d)
    }
}

/// Kernel names by host stub (`hipLaunchKernel`) or function handle
/// (`hipModuleLaunchKernel`).
fn names() -> &'static Mutex<HashMap<usize, String>> {
    static NAMES: OnceLock<Mutex<HashMap<usize, String>>> = OnceLock::new();
    NAMES.get_or_init(Default::default)
}

fn interposer() -> &'static Mutex<Option<Interposer>> {
    static STATE: OnceLock<Mutex<Option<Interposer>>> = OnceLock::new();
    STATE.get_or_init(|| Mutex::new(Interposer::from_env("hip")))
}

/// Whether `stream` is capturing a graph (or cannot tell): a launch into
/// it only adds a node, and synchronizing would break the capture.
fn capturing(hip: &Hip, stream: Handle) -> bool {
    // hipStreamCaptureStatusNone.
    let mut status: c_int = 0;
    // SAFETY: the program's stream; an out-pointer.
    let code = unsafe { (hip.api.stream_is_capturing)(stream, &mut status) };
    code != HIP_SUCCESS || status != 0
}

/// Measure around one launch; `run` is the program's own launch.
///
/// # Safety
/// `args` must hold a pointer per parameter of the kernel, each to its value.
unsafe fn around(key: usize, config: LaunchConfig, args: *mut *mut c_void, stream: Handle, run: impl FnOnce() -> HipError) -> HipError {
    let measured = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let symbol = names().lock().ok()?.get(&key)?.clone();
        let hip = runtime().ok()?;
        let mut state = interposer().lock().ok()?;
        let interposer = state.as_mut()?;
        let Some(kernel) = interposer.wants(&symbol) else {
            interposer.unplanned(&symbol);
            return None;
        };
        if args.is_null() || capturing(hip, stream) {
            return None;
        }
        let params: Vec<Param> = kernel.params.clone();
        // SAFETY: the caller passes a value pointer per parameter (the code object's metadata lists them).
        let values: Vec<*const u8> = (0..params.len()).map(|i| unsafe { *args.add(i) } as *const u8).collect();
        // SAFETY: each value pointer points to its parameter's bytes.
        let buffer = unsafe { capture::pack(&params, &values) };
        let launch = Launch { symbol, config, args: buffer, params };
        interposer.before(&ProgramContext(hip), &launch).map(|p| (p, hip))
    }))
    .ok()
    .flatten();
    let code = run();
    if let Some((pending, hip)) = measured {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(i) = interposer().lock().ok().as_mut().and_then(|s| s.as_mut()) {
                i.after(&ProgramContext(hip), pending, code == HIP_SUCCESS);
            }
        }));
    }
    code
}

/// Wraps HIP's registration of a kernel's host stub, to learn its name.
///
/// # Safety
/// HIP's own contract for `__hipRegisterFunction`.
#[no_mangle]
pub unsafe extern "C" fn __hipRegisterFunction(
    modules: *mut *mut c_void,
    host_function: *const c_void,
    device_function: *mut c_char,
    device_name: *const c_char,
    thread_limit: c_uint,
    tid: *mut c_void,
    bid: *mut c_void,
    block_dim: *mut c_void,
    grid_dim: *mut c_void,
    w_size: *mut c_int,
) {
    if !device_name.is_null() {
        // SAFETY: HIP passes the kernel's NUL-terminated mangled name.
        let name = unsafe { CStr::from_ptr(device_name) }.to_string_lossy().into_owned();
        if let Ok(mut n) = names().lock() {
            n.insert(host_function as usize, name);
        }
    }
    if let Some(next) = wrapped() {
        // SAFETY: forwarding the caller's arguments unchanged.
        unsafe {
            (next.register_function)(
                modules,
                host_function,
                device_function,
                device_name,
                thread_limit,
                tid,
                bid,
                block_dim,
                grid_dim,
                w_size,
            )
        }
    }
}

/// Wraps `hipLaunchKernel` (what `<<<...>>>` and `hipLaunchKernelGGL` call).
///
/// # Safety
/// HIP's own contract for `hipLaunchKernel`.
#[no_mangle]
pub unsafe extern "C" fn hipLaunchKernel(
    function_address: *const c_void,
    num_blocks: Dim3,
    dim_blocks: Dim3,
    args: *mut *mut c_void,
    shared_mem_bytes: usize,
    stream: Handle,
) -> HipError {
    let Some(next) = wrapped() else {
        return 98; /* hipErrorInvalidDeviceFunction */
    };
    let config = LaunchConfig {
        grid: [num_blocks.x, num_blocks.y, num_blocks.z],
        block: [dim_blocks.x, dim_blocks.y, dim_blocks.z],
        shared_bytes: shared_mem_bytes as u32,
        cooperative: false,
    };
    // SAFETY: forwarding the caller's arguments; `args` is HIP's per-parameter array.
    unsafe {
        around(function_address as usize, config, args, stream, || {
            (next.launch_kernel)(function_address, num_blocks, dim_blocks, args, shared_mem_bytes, stream)
        })
    }
}

/// Wraps `hipModuleGetFunction`, to learn the handle's name.
///
/// # Safety
/// HIP's own contract for `hipModuleGetFunction`.
#[no_mangle]
pub unsafe extern "C" fn hipModuleGetFunction(function: *mut Handle, module: Handle, kname: *const c_char) -> HipError {
    let Some(next) = wrapped() else { return 98 };
    // SAFETY: forwarding the caller's arguments unchanged.
    let code = unsafe { (next.module_get_function)(function, module, kname) };
    if code == HIP_SUCCESS && !function.is_null() && !kname.is_null() {
        // SAFETY: HIP filled `*function`; `kname` is the caller's C string.
        let (f, name) = unsafe { (*function as usize, CStr::from_ptr(kname).to_string_lossy().into_owned()) };
        if let Ok(mut n) = names().lock() {
            n.insert(f, name);
        }
    }
    code
}

/// Wraps `hipModuleLaunchKernel` (launches of `kernelParams`; `extra`
/// launches pass through unmeasured).
///
/// # Safety
/// HIP's own contract for `hipModuleLaunchKernel`.
#[no_mangle]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    f: Handle,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: Handle,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> HipError {
    let Some(next) = wrapped() else { return 98 };
    let config = LaunchConfig { grid: [gx, gy, gz], block: [bx, by, bz], shared_bytes: shared, cooperative: false };
    // SAFETY: forwarding the caller's arguments; `kernel_params` is HIP's per-parameter array (or null).
    unsafe {
        around(f as usize, config, kernel_params, stream, || {
            (next.module_launch_kernel)(f, gx, gy, gz, bx, by, bz, shared, stream, kernel_params, extra)
        })
    }
}

/// The replayer's own context on the program's GPU.
pub struct HipGpu {
    hip: &'static Hip,
    start: Handle,
    stop: Handle,
    device: c_int,
    /// Memory mapped at the program's addresses: each region and its physical allocation.
    mapped: Vec<(Range, Handle)>,
}

impl HipGpu {
    pub fn open(pci_bus_id: &str) -> Result<HipGpu, String> {
        let hip = runtime()?;
        let id = std::ffi::CString::new(pci_bus_id).map_err(|e| e.to_string())?;
        let fail = |e: GpuError| e.to_string();
        let (mut device, mut start, mut stop) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: out-pointers and a C string, each checked before use.
        unsafe {
            hip.check((hip.api.init)(0), "hipInit").map_err(fail)?;
            hip.check((hip.api.device_get_by_pci_bus_id)(&mut device, id.as_ptr()), "hipDeviceGetByPCIBusId").map_err(fail)?;
            hip.check((hip.api.set_device)(device), "hipSetDevice").map_err(fail)?;
            hip.check((hip.api.event_create)(&mut start), "hipEventCreate").map_err(fail)?;
            hip.check((hip.api.event_create)(&mut stop), "hipEventCreate").map_err(fail)?;
        }
        Ok(HipGpu { hip, start, stop, device, mapped: vec![] })
    }

    fn allocation_prop(&self) -> MemAllocationProp {
        MemAllocationProp {
            compression_type: 0,
            location: MemLocation { kind: HIP_MEM_LOCATION_TYPE_DEVICE, id: self.device },
            requested_handle_type: 0,
            kind: HIP_MEM_ALLOCATION_TYPE_PINNED,
            usage: 0,
            win32_handle_meta_data: std::ptr::null_mut(),
        }
    }

    /// Map device memory at exactly `region` (aligned to the granularity).
    fn map_one(&mut self, vmm: &Vmm, region: Range) -> Result<(), String> {
        let e = |what: &str, code| format!("{what} at {:#x} ({} bytes): {}", region.addr, region.bytes, self.hip.error_name(code));
        let (addr, size) = (region.addr as Handle, region.bytes as usize);
        let prop = self.allocation_prop();
        let mut got: Handle = std::ptr::null_mut();
        // SAFETY: an out-pointer; size and hint are multiples of the granularity.
        let code = unsafe { (vmm.mem_address_reserve)(&mut got, size, 0, addr, 0) };
        if code != HIP_SUCCESS {
            return Err(e("hipMemAddressReserve", code));
        }
        if got != addr {
            // SAFETY: the range just reserved.
            unsafe { (vmm.mem_address_free)(got, size) };
            return Err(format!(
                "hipMemAddressReserve at {addr:?} ({size} bytes) gave {got:?}: the program's address is taken in the replayer"
            ));
        }
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: an out-pointer and a filled-in property struct; each step undone in reverse on failure.
        unsafe {
            let code = (vmm.mem_create)(&mut handle, size, &prop, 0);
            if code != HIP_SUCCESS {
                (vmm.mem_address_free)(addr, size);
                return Err(e("hipMemCreate", code));
            }
            let code = (vmm.mem_map)(addr, size, 0, handle, 0);
            if code != HIP_SUCCESS {
                (vmm.mem_release)(handle);
                (vmm.mem_address_free)(addr, size);
                return Err(e("hipMemMap", code));
            }
            let access = MemAccessDesc { location: prop.location, flags: HIP_MEM_ACCESS_FLAGS_PROT_READ_WRITE };
            let code = (vmm.mem_set_access)(addr, size, &access, 1);
            if code != HIP_SUCCESS {
                (vmm.mem_unmap)(addr, size);
                (vmm.mem_release)(handle);
                (vmm.mem_address_free)(addr, size);
                return Err(e("hipMemSetAccess", code));
            }
        }
        self.mapped.push((region, handle));
        Ok(())
    }
}

impl Gpu for HipGpu {
    fn alloc(&mut self, bytes: u64) -> Result<u64, GpuError> {
        let mut p = std::ptr::null_mut();
        // SAFETY: an out-pointer.
        self.hip.check(unsafe { (self.hip.api.malloc)(&mut p, bytes.max(1) as usize) }, "hipMalloc")?;
        Ok(p as u64)
    }

    fn free(&mut self, addr: u64) {
        // SAFETY: `addr` came from hipMalloc.
        unsafe { (self.hip.api.free)(addr as Handle) };
    }

    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<(), GpuError> {
        // SAFETY: `src` readable for its length; `dst` an allocation at least as large.
        let code = unsafe { (self.hip.api.memcpy)(dst as Handle, src.as_ptr().cast(), src.len(), HIP_MEMCPY_HOST_TO_DEVICE) };
        self.hip.check(code, "hipMemcpy")
    }

    fn download(&mut self, src: u64, dst: &mut [u8]) -> Result<(), GpuError> {
        // SAFETY: `dst` writable for its length; `src` an allocation at least as large.
        let code = unsafe { (self.hip.api.memcpy)(dst.as_mut_ptr().cast(), src as *const c_void, dst.len(), HIP_MEMCPY_DEVICE_TO_HOST) };
        self.hip.check(code, "hipMemcpy")
    }

    fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), GpuError> {
        // SAFETY: both are allocations of at least `bytes`.
        let code = unsafe { (self.hip.api.memcpy)(dst as Handle, src as *const c_void, bytes as usize, HIP_MEMCPY_DEVICE_TO_DEVICE) };
        self.hip.check(code, "hipMemcpy")
    }

    fn free_memory(&mut self) -> u64 {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers.
        unsafe { (self.hip.api.mem_get_info)(&mut free, &mut total) };
        free as u64
    }

    fn load(&mut self, image: &[u8], symbol: &str, _config: &LaunchConfig) -> Result<Kernel, GpuError> {
        let api = &self.hip.api;
        let name = std::ffi::CString::new(symbol).map_err(|e| GpuError::Refused(e.to_string()))?;
        let (mut module, mut f) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `image` is a whole code object; out-pointers are valid.
        self.hip.check(unsafe { (api.module_load_data)(&mut module, image.as_ptr().cast()) }, "hipModuleLoadData")?;
        let kernel = Kernel { handle: 0, module: module as usize, params: None, max_threads_per_block: 0 };
        // SAFETY: a loaded module and a C string.
        if let Err(e) = self.hip.check(unsafe { (api.module_get_function)(&mut f, module, name.as_ptr()) }, "hipModuleGetFunction") {
            self.unload(&kernel);
            return Err(e);
        }
        let mut max_threads = 0;
        // SAFETY: a live function; an out-pointer.
        unsafe { (api.func_get_attribute)(&mut max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) };
        Ok(Kernel { handle: f as usize, max_threads_per_block: max_threads.max(0) as u32, ..kernel })
    }

    fn unload(&mut self, kernel: &Kernel) {
        // SAFETY: loaded by `load`, unloaded once.
        unsafe { (self.hip.api.module_unload)(kernel.module as Handle) };
    }

    fn map_at(&mut self, ranges: &[Range]) -> Result<Vec<Range>, String> {
        let hip = self.hip;
        let vmm = hip.vmm.as_ref().ok_or("the HIP runtime has no virtual memory management (hipMemAddressReserve)")?;
        let mut version = 0;
        // SAFETY: an out-pointer.
        unsafe { (vmm.runtime_get_version)(&mut version) };
        if version / 10_000_000 != 5 {
            return Err(format!("HIP runtime {version}: the hipMemAllocationProp declared here is HIP 5.2's"));
        }
        let prop = self.allocation_prop();
        let mut granularity = 0usize;
        // SAFETY: an out-pointer and a filled-in property struct.
        let code = unsafe { (vmm.mem_get_allocation_granularity)(&mut granularity, &prop, HIP_MEM_ALLOCATION_GRANULARITY_MINIMUM) };
        if code != HIP_SUCCESS || granularity == 0 || !granularity.is_power_of_two() {
            return Err(format!("hipMemGetAllocationGranularity: {} ({granularity})", hip.error_name(code)));
        }
        let regions = capture::align_regions(ranges, granularity as u64);
        for &r in &regions {
            if let Err(why) = self.map_one(vmm, r) {
                let done: Vec<Range> = self.mapped.iter().map(|(r, _)| *r).collect();
                self.unmap(&done);
                return Err(why);
            }
        }
        Ok(regions)
    }

    fn unmap(&mut self, regions: &[Range]) {
        let Some(vmm) = self.hip.vmm.as_ref() else { return };
        // SAFETY: no arguments: nothing may still run on the memory.
        unsafe { (self.hip.api.device_synchronize)() };
        self.mapped.retain(|&(r, handle)| {
            if !regions.contains(&r) {
                return true;
            }
            // SAFETY: mapped by map_one, undone once, in reverse.
            unsafe {
                (vmm.mem_unmap)(r.addr as Handle, r.bytes as usize);
                (vmm.mem_release)(handle);
                (vmm.mem_address_free)(r.addr as Handle, r.bytes as usize);
            }
            false
        });
    }

    fn global(&mut self, kernel: &Kernel, name: &str) -> Option<Range> {
        let vmm = self.hip.vmm.as_ref()?;
        let name = std::ffi::CString::new(name).ok()?;
        let (mut addr, mut bytes): (Handle, usize) = (std::ptr::null_mut(), 0);
        // SAFETY: a module `load` loaded; out-pointers and a C string.
        let code = unsafe { (vmm.module_get_global)(&mut addr, &mut bytes, kernel.module as Handle, name.as_ptr()) };
        (code == HIP_SUCCESS).then_some(Range { addr: addr as u64, bytes: bytes as u64 })
    }

    fn launch(&mut self, kernel: &Kernel, config: &LaunchConfig, args: &[u8]) -> Result<f64, GpuError> {
        let api = &self.hip.api;
        let mut words = vec![0u64; args.len().div_ceil(8)];
        // SAFETY: `words` holds at least `args.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), words.as_mut_ptr().cast::<u8>(), args.len()) };
        let mut size = args.len();
        let mut extra: [*mut c_void; 5] = [
            HIP_LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            words.as_mut_ptr().cast(),
            HIP_LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
            (&mut size as *mut usize).cast(),
            HIP_LAUNCH_PARAM_END as *mut c_void,
        ];
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        let stream = std::ptr::null_mut();
        // SAFETY: a live function, events from `open`, `extra` in HIP's documented form.
        unsafe {
            self.hip.check((api.event_record)(self.start, stream), "hipEventRecord")?;
            let code = (api.module_launch_kernel)(
                kernel.handle as Handle,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                config.shared_bytes,
                stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            );
            self.hip.check(code, "hipModuleLaunchKernel")?;
            self.hip.check((api.event_record)(self.stop, stream), "hipEventRecord")?;
            self.hip.check((api.event_synchronize)(self.stop), "the kernel")?;
        }
        let mut ms = 0f32;
        // SAFETY: both events completed.
        self.hip.check(unsafe { (api.event_elapsed_time)(&mut ms, self.start, self.stop) }, "hipEventElapsedTime")?;
        Ok(ms as f64)
    }
}
