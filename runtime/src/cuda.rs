//! The CUDA driver API, opened at run time (libcuda.so.1): the interposer's
//! view of the program's context ([`ProgramContext`]) and the replayer's
//! own ([`CudaGpu`]). Prototypes are cuda.h's; `tests/runtime.rs` checks
//! them, and the constants, against the headers.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use crate::capture::Range;
use crate::dl::{api, Library};
use crate::interpose::{Device, Host};
use crate::plan::{LaunchConfig, Param};
use crate::replay::{Gpu, GpuError, Kernel};

pub type CuResult = c_int;
pub type Handle = *mut c_void;
pub const CUDA_SUCCESS: CuResult = 0;
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
pub const CU_LAUNCH_PARAM_END: usize = 0;
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;
pub const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
pub const CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: CuResult = 720;
/// Dynamic shared memory a kernel gets without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;
pub const CU_MEM_ALLOCATION_TYPE_PINNED: c_int = 1;
pub const CU_MEM_LOCATION_TYPE_DEVICE: c_int = 1;
pub const CU_MEM_ACCESS_FLAGS_PROT_READWRITE: c_int = 3;
pub const CU_MEM_ALLOC_GRANULARITY_MINIMUM: c_int = 0;
pub const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
pub const CU_POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;

/// `CUmemLocation`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemLocation {
    pub kind: c_int,
    pub id: c_int,
}

/// `CUmemAllocationProp`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemAllocationProp {
    pub kind: c_int,
    pub requested_handle_types: c_int,
    pub location: MemLocation,
    pub win32_handle_meta_data: *mut c_void,
    /// compressionType, gpuDirectRDMACapable, usage (u16), reserved[4].
    pub alloc_flags: [u8; 8],
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemAccessDesc {
    pub location: MemLocation,
    pub flags: c_int,
}

api!(Driver {
    init = "cuInit": fn(c_uint) -> CuResult;
    driver_get_version = "cuDriverGetVersion": fn(*mut c_int) -> CuResult;
    get_error_name = "cuGetErrorName": fn(CuResult, *mut *const c_char) -> CuResult;
    device_get_count = "cuDeviceGetCount": fn(*mut c_int) -> CuResult;
    device_get_name = "cuDeviceGetName": fn(*mut c_char, c_int, c_int) -> CuResult;
    device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, c_int) -> CuResult;
    device_get_pci_bus_id = "cuDeviceGetPCIBusId": fn(*mut c_char, c_int, c_int) -> CuResult;
    device_get_by_pci_bus_id = "cuDeviceGetByPCIBusId": fn(*mut c_int, *const c_char) -> CuResult;
    primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut Handle, c_int) -> CuResult;
    ctx_set_current = "cuCtxSetCurrent": fn(Handle) -> CuResult;
    ctx_get_device = "cuCtxGetDevice": fn(*mut c_int) -> CuResult;
    ctx_synchronize = "cuCtxSynchronize": fn() -> CuResult;
    mem_get_info = "cuMemGetInfo_v2": fn(*mut usize, *mut usize) -> CuResult;
    mem_alloc = "cuMemAlloc_v2": fn(*mut u64, usize) -> CuResult;
    mem_free = "cuMemFree_v2": fn(u64) -> CuResult;
    memcpy_htod = "cuMemcpyHtoD_v2": fn(u64, *const c_void, usize) -> CuResult;
    memcpy_dtoh = "cuMemcpyDtoH_v2": fn(*mut c_void, u64, usize) -> CuResult;
    memcpy_dtod = "cuMemcpyDtoD_v2": fn(u64, u64, usize) -> CuResult;
    memcpy_dtod_async = "cuMemcpyDtoDAsync_v2": fn(u64, u64, usize, Handle) -> CuResult;
    mem_get_address_range = "cuMemGetAddressRange_v2": fn(*mut u64, *mut usize, u64) -> CuResult;
    pointer_get_attribute = "cuPointerGetAttribute": fn(*mut c_void, c_int, u64) -> CuResult;
    module_get_global = "cuModuleGetGlobal_v2": fn(*mut u64, *mut usize, Handle, *const c_char) -> CuResult;
    module_load_data = "cuModuleLoadData": fn(*mut Handle, *const c_void) -> CuResult;
    module_unload = "cuModuleUnload": fn(Handle) -> CuResult;
    module_get_function = "cuModuleGetFunction": fn(*mut Handle, Handle, *const c_char) -> CuResult;
    func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, Handle) -> CuResult;
    func_set_attribute = "cuFuncSetAttribute": fn(Handle, c_int, c_int) -> CuResult;
    launch_kernel = "cuLaunchKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> CuResult;
    launch_cooperative_kernel = "cuLaunchCooperativeKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void) -> CuResult;
    occupancy_max_active_blocks_per_multiprocessor = "cuOccupancyMaxActiveBlocksPerMultiprocessor": fn(*mut c_int, Handle, c_int, usize) -> CuResult;
    event_create = "cuEventCreate": fn(*mut Handle, c_uint) -> CuResult;
    event_record = "cuEventRecord": fn(Handle, Handle) -> CuResult;
    event_synchronize = "cuEventSynchronize": fn(Handle) -> CuResult;
    event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, Handle, Handle) -> CuResult;
});

// Virtual memory management (CUDA 10.2+): the replayer maps its copies at
// the program's own addresses.
api!(Vmm {
    mem_get_allocation_granularity = "cuMemGetAllocationGranularity": fn(*mut usize, *const MemAllocationProp, c_int) -> CuResult;
    mem_address_reserve = "cuMemAddressReserve": fn(*mut u64, usize, usize, u64, u64) -> CuResult;
    mem_address_free = "cuMemAddressFree": fn(u64, usize) -> CuResult;
    mem_create = "cuMemCreate": fn(*mut u64, usize, *const MemAllocationProp, u64) -> CuResult;
    mem_release = "cuMemRelease": fn(u64) -> CuResult;
    mem_map = "cuMemMap": fn(u64, usize, usize, u64, u64) -> CuResult;
    mem_unmap = "cuMemUnmap": fn(u64, usize) -> CuResult;
    mem_set_access = "cuMemSetAccess": fn(u64, usize, *const MemAccessDesc, usize) -> CuResult;
});

// A launched kernel's module, for its variables: a CUfunction's (CUDA
// 11.0+), or a CUkernel's library (12.0+: what cudart launches).
api!(Modules {
    func_get_module = "cuFuncGetModule": fn(*mut Handle, Handle) -> CuResult;
    kernel_get_library = "cuKernelGetLibrary": fn(*mut Handle, Handle) -> CuResult;
    library_get_global = "cuLibraryGetGlobal": fn(*mut u64, *mut usize, Handle, *const c_char) -> CuResult;
});

/// `cuFuncGetParamInfo` and `cuKernelGetParamInfo` (CUDA 12.4+): a
/// kernel's parameter offsets and sizes.
type ParamInfo = unsafe extern "C" fn(Handle, usize, *mut usize, *mut usize) -> CuResult;
const CUDA_ERROR_INVALID_VALUE: CuResult = 1;

/// `cuKernelGetFunction` (CUDA 12.0+) and `cuFuncLoad` (12.4+).
type KernelGetFunction = unsafe extern "C" fn(*mut Handle, Handle) -> CuResult;
type FuncLoad = unsafe extern "C" fn(Handle) -> CuResult;

pub struct Cuda {
    pub api: Driver,
    /// For a CUfunction, then for a CUkernel (what cudart launches under lazy loading).
    param_info: [Option<ParamInfo>; 2],
    kernel_get_function: Option<KernelGetFunction>,
    func_load: Option<FuncLoad>,
    pub vmm: Option<Vmm>,
    pub modules: Option<Modules>,
    _lib: Library,
}

/// The driver, opened once per process.
pub fn driver() -> Result<&'static Cuda, String> {
    static CUDA: OnceLock<Result<Cuda, String>> = OnceLock::new();
    CUDA.get_or_init(|| {
        let lib = Library::open(&["libcuda.so.1", "libcuda.so"]).map_err(|e| format!("no CUDA driver ({e})"))?;
        let api = Driver::load(&lib).map_err(|e| format!("the CUDA driver lacks {e}"))?;
        // SAFETY: both have ParamInfo's prototype (a CUkernel is a handle like a CUfunction).
        let param_info = unsafe { [lib.get::<ParamInfo>("cuFuncGetParamInfo").ok(), lib.get::<ParamInfo>("cuKernelGetParamInfo").ok()] };
        // SAFETY: the driver's documented prototypes.
        let (kernel_get_function, func_load) =
            unsafe { (lib.get::<KernelGetFunction>("cuKernelGetFunction").ok(), lib.get::<FuncLoad>("cuFuncLoad").ok()) };
        let (vmm, modules) = (Vmm::load(&lib).ok(), Modules::load(&lib).ok());
        Ok(Cuda { api, param_info, kernel_get_function, func_load, vmm, modules, _lib: lib })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Errors after which the context is unusable (CUDA calls them sticky).
fn is_sticky(code: CuResult) -> bool {
    // ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR, ILLEGAL_INSTRUCTION,
    // MISALIGNED_ADDRESS, INVALID_ADDRESS_SPACE, INVALID_PC, LAUNCH_FAILED, ECC_UNCORRECTABLE, UNKNOWN.
    matches!(code, 700 | 702 | 710 | 714..=719 | 214 | 999)
}

impl Cuda {
    pub fn error_name(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or fails.
        if unsafe { (self.api.get_error_name)(code, &mut name) } == CUDA_SUCCESS && !name.is_null() {
            // SAFETY: a static NUL-terminated string owned by the driver.
            return unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        }
        format!("CUDA error {code}")
    }

    pub fn check(&self, code: CuResult, what: &str) -> Result<(), GpuError> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        let message = format!("{what}: {}", self.error_name(code));
        Err(if is_sticky(code) { GpuError::Fault(message) } else { GpuError::Refused(message) })
    }

    /// The function a launched handle runs in the current context: a
    /// CUkernel's, or the CUfunction itself.
    ///
    /// # Safety
    /// `f` must be a CUfunction or CUkernel the driver handed out.
    pub unsafe fn function(&self, f: Handle) -> Handle {
        if let Some(get) = self.kernel_get_function {
            let mut out: Handle = std::ptr::null_mut();
            // SAFETY: a CUkernel gives its function in this context; a CUfunction is refused.
            if unsafe { get(&mut out, f) } == CUDA_SUCCESS && !out.is_null() {
                return out;
            }
        }
        f
    }

    /// Load the module of a launched function or kernel handle into the
    /// current context now, not inside the launch (lazy loading defers it
    /// to there): its module-loaded callback then comes before the launch.
    ///
    /// # Safety
    /// `f` must be a CUfunction or CUkernel the driver handed out.
    pub unsafe fn load(&self, f: Handle) {
        let mut function = f;
        if let Some(get) = self.kernel_get_function {
            let mut out: Handle = std::ptr::null_mut();
            // SAFETY: a CUkernel gives its function in this context; a CUfunction is refused.
            if unsafe { get(&mut out, f) } == CUDA_SUCCESS && !out.is_null() {
                function = out;
            }
        }
        if let Some(load) = self.func_load {
            // SAFETY: a CUfunction handle (a no-op once loaded).
            unsafe { load(function) };
        }
    }

    /// The parameters of a launched function or kernel handle (None: the
    /// driver cannot tell: older than CUDA 12.4, or a handle it refuses).
    ///
    /// # Safety
    /// `f` must be a CUfunction or CUkernel the driver handed out.
    pub unsafe fn params(&self, f: Handle) -> Option<Vec<Param>> {
        for info in self.param_info.into_iter().flatten() {
            let mut out = Vec::new();
            let last = loop {
                let (mut offset, mut size) = (0usize, 0usize);
                // SAFETY: `f` is the launch's handle; the out-pointers are valid.
                let code = unsafe { info(f, out.len(), &mut offset, &mut size) };
                if code != CUDA_SUCCESS {
                    break code;
                }
                out.push(Param { offset: offset as u64, size: size as u64 });
            };
            // Past the last parameter the driver says "invalid value"; anything else refuses the handle.
            if last == CUDA_ERROR_INVALID_VALUE {
                return Some(out);
            }
        }
        None
    }

    /// Where the module of a launched function or kernel handle holds the
    /// variable `name` (the program's context current).
    ///
    /// # Safety
    /// `f` must be a CUfunction or CUkernel the driver handed out.
    pub unsafe fn global_of(&self, f: Handle, name: &CStr) -> Option<Range> {
        let m = self.modules.as_ref()?;
        let mut function = f;
        if let Some(get) = self.kernel_get_function {
            let mut out: Handle = std::ptr::null_mut();
            // SAFETY: a CUkernel gives its function in this context; a CUfunction is refused.
            if unsafe { get(&mut out, f) } == CUDA_SUCCESS && !out.is_null() {
                function = out;
            }
        }
        let (mut addr, mut bytes, mut module, mut library) = (0u64, 0usize, std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: out-pointers, a live function handle and a C string.
        unsafe {
            if (m.func_get_module)(&mut module, function) == CUDA_SUCCESS
                && !module.is_null()
                && (self.api.module_get_global)(&mut addr, &mut bytes, module, name.as_ptr()) == CUDA_SUCCESS
            {
                return Some(Range { addr, bytes: bytes as u64 });
            }
            if (m.kernel_get_library)(&mut library, f) == CUDA_SUCCESS
                && !library.is_null()
                && (m.library_get_global)(&mut addr, &mut bytes, library, name.as_ptr()) == CUDA_SUCCESS
            {
                return Some(Range { addr, bytes: bytes as u64 });
            }
        }
        None
    }

    /// "NVIDIA H100 80GB HBM3", "sm_90", the PCI bus id.
    pub fn describe(&self, device: c_int) -> Result<Device, String> {
        let e = |what: &str, code| format!("{what}: {}", self.error_name(code));
        let mut name = [0 as c_char; 256];
        let mut bus = [0 as c_char; 64];
        let (mut major, mut minor) = (0, 0);
        // SAFETY: buffers sized as passed; `device` is an ordinal the driver gave.
        unsafe {
            let code = (self.api.device_get_name)(name.as_mut_ptr(), name.len() as c_int, device);
            if code != CUDA_SUCCESS {
                return Err(e("cuDeviceGetName", code));
            }
            (self.api.device_get_attribute)(&mut major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
            (self.api.device_get_attribute)(&mut minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
            let code = (self.api.device_get_pci_bus_id)(bus.as_mut_ptr(), bus.len() as c_int, device);
            if code != CUDA_SUCCESS {
                return Err(e("cuDeviceGetPCIBusId", code));
            }
        }
        let text = |b: &[c_char]| {
            // SAFETY: the driver NUL-terminated both buffers.
            unsafe { CStr::from_ptr(b.as_ptr()) }.to_string_lossy().into_owned()
        };
        let arch = format!("sm_{major}{minor}");
        let description = format!("{} ({arch}, driver {})", text(&name), self.driver_version());
        Ok(Device { id: text(&bus), description, arch })
    }

    /// The kernel module's version ("580.159.04"), else the CUDA version the driver supports.
    fn driver_version(&self) -> String {
        if let Ok(text) = std::fs::read_to_string("/proc/driver/nvidia/version") {
            let version = text.split_whitespace().find(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.') && w.contains('.'));
            if let Some(v) = version {
                return v.to_string();
            }
        }
        let mut v = 0;
        // SAFETY: an out-pointer.
        unsafe { (self.api.driver_get_version)(&mut v) };
        format!("CUDA {}.{}", v / 1000, v % 1000 / 10)
    }
}

/// Is there an NVIDIA GPU this process can use? The devices, else why not.
pub fn probe() -> Result<Vec<String>, String> {
    let cuda = driver()?;
    // SAFETY: cuInit takes flags 0.
    let code = unsafe { (cuda.api.init)(0) };
    if code != CUDA_SUCCESS {
        return Err(format!("no usable NVIDIA GPU (cuInit: {})", cuda.error_name(code)));
    }
    let mut n = 0;
    // SAFETY: an out-pointer.
    unsafe { (cuda.api.device_get_count)(&mut n) };
    (0..n).map(|d| cuda.describe(d).map(|d| d.description)).collect()
}

/// The program's current context, seen from inside one of its launches.
pub struct ProgramContext(pub &'static Cuda);

impl Host for ProgramContext {
    fn synchronize(&self) -> Result<(), String> {
        // SAFETY: no arguments; the calling thread has the program's context current.
        let code = unsafe { (self.0.api.ctx_synchronize)() };
        self.0.check(code, "cuCtxSynchronize").map_err(|e| e.to_string())
    }

    fn address_range(&self, ptr: u64) -> Option<Range> {
        let (mut base, mut size) = (0u64, 0usize);
        // SAFETY: out-pointers; any value may be asked about (not found is an error code).
        let code = unsafe { (self.0.api.mem_get_address_range)(&mut base, &mut size, ptr) };
        if code == CUDA_SUCCESS {
            return Some(Range { addr: base, bytes: size as u64 });
        }
        // The driver's pointer attributes know ranges the address-range query may not.
        let (mut start, mut bytes) = (0u64, 0u64);
        // SAFETY: both attributes write one CUdeviceptr / size_t (8 bytes on 64-bit).
        let found = unsafe {
            (self.0.api.pointer_get_attribute)((&mut start as *mut u64).cast(), CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) == CUDA_SUCCESS
                && (self.0.api.pointer_get_attribute)((&mut bytes as *mut u64).cast(), CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) == CUDA_SUCCESS
        };
        (found && start != 0 && bytes > 0).then_some(Range { addr: start, bytes })
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), String> {
        // SAFETY: `dst` has room for `dst.len()` bytes; the range came from the driver.
        let code = unsafe { (self.0.api.memcpy_dtoh)(dst.as_mut_ptr().cast(), addr, dst.len()) };
        self.0.check(code, "cuMemcpyDtoH").map_err(|e| e.to_string())
    }

    fn device(&self) -> Result<Device, String> {
        let mut d = 0;
        // SAFETY: an out-pointer.
        let code = unsafe { (self.0.api.ctx_get_device)(&mut d) };
        self.0.check(code, "cuCtxGetDevice").map_err(|e| e.to_string())?;
        self.0.describe(d)
    }
}

/// The program's context at one of its launches: what [`ProgramContext`]
/// sees, and the launched handle's module variables and the allocations
/// the program has live (CUPTI's allocation callbacks track them).
pub struct LaunchContext {
    pub cuda: &'static Cuda,
    /// The launched CUfunction or CUkernel.
    pub function: Handle,
}

impl Host for LaunchContext {
    fn synchronize(&self) -> Result<(), String> {
        ProgramContext(self.cuda).synchronize()
    }

    fn address_range(&self, ptr: u64) -> Option<Range> {
        ProgramContext(self.cuda).address_range(ptr)
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), String> {
        ProgramContext(self.cuda).read(addr, dst)
    }

    fn device(&self) -> Result<Device, String> {
        ProgramContext(self.cuda).device()
    }

    fn live_allocations(&self) -> Option<Vec<Range>> {
        let live = crate::capture::LIVE.lock().ok()?;
        live.as_ref().filter(|l| !l.is_empty()).map(|l| l.all())
    }

    fn globals(&self, wanted: &[crate::code::Global]) -> Vec<(crate::code::Global, Range)> {
        wanted
            .iter()
            .filter_map(|g| {
                let name = std::ffi::CString::new(g.name.as_str()).ok()?;
                // SAFETY: the handle the program launches, in its context.
                let r = unsafe { self.cuda.global_of(self.function, &name) }?;
                Some((g.clone(), r))
            })
            .collect()
    }
}

/// The replayer's own context on the program's GPU.
pub struct CudaGpu {
    cuda: &'static Cuda,
    start: Handle,
    stop: Handle,
    device: c_int,
    /// Memory mapped at the program's addresses: each region and its physical allocation.
    mapped: Vec<(Range, u64)>,
    /// The address ranges reserved for them.
    reserved: Vec<Range>,
}

impl CudaGpu {
    /// The primary context of the device with this PCI bus id.
    pub fn open(pci_bus_id: &str) -> Result<CudaGpu, String> {
        let cuda = driver()?;
        let id = std::ffi::CString::new(pci_bus_id).map_err(|e| e.to_string())?;
        let fail = |e: GpuError| e.to_string();
        let (mut device, mut ctx) = (0, std::ptr::null_mut());
        // SAFETY: out-pointers and a valid C string; each call is checked before the next uses its result.
        unsafe {
            cuda.check((cuda.api.init)(0), "cuInit").map_err(fail)?;
            cuda.check((cuda.api.device_get_by_pci_bus_id)(&mut device, id.as_ptr()), "cuDeviceGetByPCIBusId").map_err(fail)?;
            cuda.check((cuda.api.primary_ctx_retain)(&mut ctx, device), "cuDevicePrimaryCtxRetain").map_err(fail)?;
            cuda.check((cuda.api.ctx_set_current)(ctx), "cuCtxSetCurrent").map_err(fail)?;
        }
        // The events come with the first kernel loaded (`load`): whatever this
        // process takes before a replay maps the program's addresses could be one of them.
        Ok(CudaGpu { cuda, start: std::ptr::null_mut(), stop: std::ptr::null_mut(), device, mapped: vec![], reserved: vec![] })
    }

    fn allocation_prop(&self) -> MemAllocationProp {
        MemAllocationProp {
            kind: CU_MEM_ALLOCATION_TYPE_PINNED,
            requested_handle_types: 0,
            location: MemLocation { kind: CU_MEM_LOCATION_TYPE_DEVICE, id: self.device },
            win32_handle_meta_data: std::ptr::null_mut(),
            alloc_flags: [0; 8],
        }
    }

    /// Reserve exactly `want` (the program's addresses): Err with what the
    /// driver gave instead (it takes the address as a hint only).
    fn reserve_at(&mut self, vmm: &Vmm, want: Range) -> Result<(), String> {
        let mut got = 0u64;
        // SAFETY: an out-pointer; size and hint are multiples of the granularity.
        let code = unsafe { (vmm.mem_address_reserve)(&mut got, want.bytes as usize, 0, want.addr, 0) };
        if code != CUDA_SUCCESS {
            return Err(self.cuda.error_name(code));
        }
        if got != want.addr {
            // SAFETY: the range just reserved.
            unsafe { (vmm.mem_address_free)(got, want.bytes as usize) };
            return Err(format!("gave {got:#x}"));
        }
        self.reserved.push(want);
        Ok(())
    }

    /// Reserve the program's addresses of `regions`, which lie in
    /// `container` (whole [`RESERVE_UNIT`]s): each region exactly, else
    /// (the driver places small reservations where it likes; it kept
    /// hints of hundreds of MiB on an H200) the whole container.
    fn reserve_container(&mut self, vmm: &Vmm, container: Range, regions: &[Range]) -> Result<(), String> {
        let before = self.reserved.len();
        let mut exact = Ok(());
        for &r in regions {
            exact = self.reserve_at(vmm, r).map_err(|e| format!("cuMemAddressReserve at {:#x} ({} bytes) {e}", r.addr, r.bytes));
            if exact.is_err() {
                break;
            }
        }
        let Err(exact) = exact else { return Ok(()) };
        for r in self.reserved.split_off(before) {
            // SAFETY: reserved just above, nothing mapped in it yet.
            unsafe { (vmm.mem_address_free)(r.addr, r.bytes as usize) };
        }
        match self.reserve_at(vmm, container) {
            Ok(()) => {
                eprintln!("regtune-replay: {exact}; the {} bytes around it at {:#x} were had", container.bytes, container.addr);
                Ok(())
            }
            Err(e) => Err(format!(
                "{exact}, and the {} MiB around it {e}: the driver would not place memory at the program's address",
                container.bytes >> 20
            )),
        }
    }

    /// Back `region` (reserved) with device memory, readable and writable.
    fn back(&mut self, vmm: &Vmm, region: Range) -> Result<(), String> {
        let e = |what: &str, code| format!("{what} at {:#x} ({} bytes): {}", region.addr, region.bytes, self.cuda.error_name(code));
        let (addr, size) = (region.addr, region.bytes as usize);
        let prop = self.allocation_prop();
        let mut handle = 0u64;
        // SAFETY: out-pointer and a filled-in property struct.
        let code = unsafe { (vmm.mem_create)(&mut handle, size, &prop, 0) };
        if code != CUDA_SUCCESS {
            return Err(e("cuMemCreate", code));
        }
        let access = MemAccessDesc { location: prop.location, flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
        // SAFETY: a reserved range and a physical allocation of its size; undone in reverse on failure.
        unsafe {
            let code = (vmm.mem_map)(addr, size, 0, handle, 0);
            if code != CUDA_SUCCESS {
                (vmm.mem_release)(handle);
                return Err(e("cuMemMap", code));
            }
            let code = (vmm.mem_set_access)(addr, size, &access, 1);
            if code != CUDA_SUCCESS {
                (vmm.mem_unmap)(addr, size);
                (vmm.mem_release)(handle);
                return Err(e("cuMemSetAccess", code));
            }
        }
        self.mapped.push((region, handle));
        Ok(())
    }
}

/// Reservations that the driver would not place at a small region's own
/// address are retried as the whole units of this size around it.
pub const RESERVE_UNIT: u64 = 1 << 30;

impl Gpu for CudaGpu {
    fn alloc(&mut self, bytes: u64) -> Result<u64, GpuError> {
        let mut p = 0u64;
        // SAFETY: an out-pointer.
        self.cuda.check(unsafe { (self.cuda.api.mem_alloc)(&mut p, bytes.max(1) as usize) }, "cuMemAlloc")?;
        Ok(p)
    }

    fn free(&mut self, addr: u64) {
        // SAFETY: `addr` came from cuMemAlloc.
        unsafe { (self.cuda.api.mem_free)(addr) };
    }

    fn upload(&mut self, dst: u64, src: &[u8]) -> Result<(), GpuError> {
        // SAFETY: `src` is readable for its length; `dst` an allocation at least that large.
        self.cuda.check(unsafe { (self.cuda.api.memcpy_htod)(dst, src.as_ptr().cast(), src.len()) }, "cuMemcpyHtoD")
    }

    fn download(&mut self, src: u64, dst: &mut [u8]) -> Result<(), GpuError> {
        // SAFETY: `dst` is writable for its length; `src` an allocation at least that large.
        self.cuda.check(unsafe { (self.cuda.api.memcpy_dtoh)(dst.as_mut_ptr().cast(), src, dst.len()) }, "cuMemcpyDtoH")
    }

    fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), GpuError> {
        // SAFETY: both are allocations of at least `bytes`.
        self.cuda.check(unsafe { (self.cuda.api.memcpy_dtod)(dst, src, bytes as usize) }, "cuMemcpyDtoD")
    }

    fn free_memory(&mut self) -> u64 {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: out-pointers.
        unsafe { (self.cuda.api.mem_get_info)(&mut free, &mut total) };
        free as u64
    }

    fn load(&mut self, image: &[u8], symbol: &str, config: &LaunchConfig) -> Result<Kernel, GpuError> {
        let api = &self.cuda.api;
        for event in [&mut self.start, &mut self.stop] {
            if event.is_null() {
                // SAFETY: an out-pointer.
                self.cuda.check(unsafe { (api.event_create)(event, 0) }, "cuEventCreate")?;
            }
        }
        let name = std::ffi::CString::new(symbol).map_err(|e| GpuError::Refused(e.to_string()))?;
        let (mut module, mut f) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `image` is a whole cubin in memory; out-pointers are valid.
        self.cuda.check(unsafe { (api.module_load_data)(&mut module, image.as_ptr().cast()) }, "cuModuleLoadData")?;
        // SAFETY: `module` was just loaded; `name` is a C string.
        let found = self.cuda.check(unsafe { (api.module_get_function)(&mut f, module, name.as_ptr()) }, "cuModuleGetFunction");
        let kernel = Kernel { handle: f as usize, module: module as usize, params: None, max_threads_per_block: 0 };
        if let Err(e) = found {
            self.unload(&kernel);
            return Err(e);
        }
        let mut max_threads = 0;
        // SAFETY: `f` is a live function; an out-pointer.
        unsafe { (api.func_get_attribute)(&mut max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) };
        if config.shared_bytes > DEFAULT_DYNAMIC_SHARED {
            // The program opted its own kernel in; the candidate needs the same.
            // SAFETY: `f` is a live function.
            let code =
                unsafe { (api.func_set_attribute)(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, config.shared_bytes as c_int) };
            if let Err(e) = self.cuda.check(code, "cuFuncSetAttribute") {
                self.unload(&kernel);
                return Err(e);
            }
        }
        // SAFETY: `f` came from cuModuleGetFunction.
        Ok(Kernel { params: unsafe { self.cuda.params(f) }, max_threads_per_block: max_threads.max(0) as u32, ..kernel })
    }

    fn unload(&mut self, kernel: &Kernel) {
        // SAFETY: the module was loaded by `load` and is unloaded once.
        unsafe { (self.cuda.api.module_unload)(kernel.module as Handle) };
    }

    fn map_at(&mut self, ranges: &[Range]) -> Result<Vec<Range>, String> {
        let cuda = self.cuda;
        let vmm = cuda.vmm.as_ref().ok_or("the driver has no virtual memory management (cuMemAddressReserve)")?;
        let prop = self.allocation_prop();
        let mut granularity = 0usize;
        // SAFETY: an out-pointer and a filled-in property struct.
        let code = unsafe { (vmm.mem_get_allocation_granularity)(&mut granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) };
        if code != CUDA_SUCCESS || granularity == 0 || !granularity.is_power_of_two() {
            return Err(format!("cuMemGetAllocationGranularity: {} ({granularity})", cuda.error_name(code)));
        }
        let regions = crate::capture::align_regions(ranges, granularity as u64);
        let fail = |gpu: &mut CudaGpu, why: String| {
            let done: Vec<Range> = gpu.mapped.iter().map(|(r, _)| *r).collect();
            gpu.unmap(&done);
            Err(why)
        };
        for container in crate::capture::align_regions(&regions, RESERVE_UNIT) {
            let inside: Vec<Range> = regions.iter().copied().filter(|r| container.addr <= r.addr && r.end() <= container.end()).collect();
            if let Err(why) = self.reserve_container(vmm, container, &inside) {
                return fail(self, why);
            }
        }
        for &r in &regions {
            if let Err(why) = self.back(vmm, r) {
                return fail(self, why);
            }
        }
        Ok(regions)
    }

    fn unmap(&mut self, regions: &[Range]) {
        let Some(vmm) = self.cuda.vmm.as_ref() else { return };
        // Nothing may still run on the memory.
        // SAFETY: no arguments.
        unsafe { (self.cuda.api.ctx_synchronize)() };
        self.mapped.retain(|&(r, handle)| {
            if !regions.contains(&r) {
                return true;
            }
            // SAFETY: mapped by `back`, undone once, in reverse.
            unsafe {
                (vmm.mem_unmap)(r.addr, r.bytes as usize);
                (vmm.mem_release)(handle);
            }
            false
        });
        // Reservations that back nothing any more.
        let mapped: Vec<Range> = self.mapped.iter().map(|(r, _)| *r).collect();
        self.reserved.retain(|v| {
            if mapped.iter().any(|m| v.addr <= m.addr && m.end() <= v.end()) {
                return true;
            }
            // SAFETY: reserved by `reserve_at`, nothing mapped in it now.
            unsafe { (vmm.mem_address_free)(v.addr, v.bytes as usize) };
            false
        });
    }

    fn global(&mut self, kernel: &Kernel, name: &str) -> Option<Range> {
        let name = std::ffi::CString::new(name).ok()?;
        let (mut addr, mut bytes) = (0u64, 0usize);
        // SAFETY: a module `load` loaded; out-pointers and a C string.
        let code = unsafe { (self.cuda.api.module_get_global)(&mut addr, &mut bytes, kernel.module as Handle, name.as_ptr()) };
        (code == CUDA_SUCCESS).then_some(Range { addr, bytes: bytes as u64 })
    }

    fn launch(&mut self, kernel: &Kernel, config: &LaunchConfig, args: &[u8]) -> Result<f64, GpuError> {
        let api = &self.cuda.api;
        // 8-byte aligned copy of the argument buffer, as the driver reads it.
        let mut words = vec![0u64; args.len().div_ceil(8)];
        // SAFETY: `words` holds at least `args.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), words.as_mut_ptr().cast::<u8>(), args.len()) };
        let mut size = args.len();
        let mut extra: [*mut c_void; 5] = [
            CU_LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
            words.as_mut_ptr().cast(),
            CU_LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
            (&mut size as *mut usize).cast(),
            CU_LAUNCH_PARAM_END as *mut c_void,
        ];
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        let stream = std::ptr::null_mut();
        // A cooperative launch takes a pointer per parameter, into `words`.
        let mut values = if config.cooperative { self.cooperative(kernel, config, &mut words)? } else { vec![] };
        // SAFETY: a live function, events made by `open`, and an `extra` array
        // in the driver's documented form pointing at live locals.
        unsafe {
            self.cuda.check((api.event_record)(self.start, stream), "cuEventRecord")?;
            let code = if config.cooperative {
                let code = (api.launch_cooperative_kernel)(
                    kernel.handle as Handle,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    config.shared_bytes,
                    stream,
                    values.as_mut_ptr(),
                );
                if code == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE {
                    return Err(GpuError::Refused(format!("cannot launch cooperatively at this occupancy ({} blocks)", config.blocks())));
                }
                code
            } else {
                (api.launch_kernel)(
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
                )
            };
            self.cuda.check(code, if config.cooperative { "cuLaunchCooperativeKernel" } else { "cuLaunchKernel" })?;
            self.cuda.check((api.event_record)(self.stop, stream), "cuEventRecord")?;
            self.cuda.check((api.event_synchronize)(self.stop), "the kernel")?;
        }
        let mut ms = 0f32;
        // SAFETY: both events have completed.
        self.cuda.check(unsafe { (api.event_elapsed_time)(&mut ms, self.start, self.stop) }, "cuEventElapsedTime")?;
        Ok(ms as f64)
    }
}

impl CudaGpu {
    /// A cooperative launch's parameter pointers into `words` (the
    /// argument buffer), once the grid is known to fit: every block must
    /// be resident at once, which a candidate of lower occupancy than the
    /// program's build may not allow. That candidate cannot run this launch.
    fn cooperative(&self, kernel: &Kernel, config: &LaunchConfig, words: &mut [u64]) -> Result<Vec<*mut c_void>, GpuError> {
        let api = &self.cuda.api;
        let (mut per_sm, mut sms) = (0 as c_int, 0 as c_int);
        // SAFETY: a live function and out-pointers.
        unsafe {
            let code = (api.occupancy_max_active_blocks_per_multiprocessor)(
                &mut per_sm,
                kernel.handle as Handle,
                config.threads_per_block() as c_int,
                config.shared_bytes as usize,
            );
            self.cuda.check(code, "cuOccupancyMaxActiveBlocksPerMultiprocessor")?;
            let code = (api.device_get_attribute)(&mut sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.device);
            self.cuda.check(code, "cuDeviceGetAttribute")?;
        }
        let most = per_sm.max(0) as u64 * sms.max(0) as u64;
        if config.blocks() > most {
            return Err(GpuError::Refused(format!(
                "cannot launch cooperatively at this occupancy ({} blocks; {per_sm} fit per SM, {most} on the GPU)",
                config.blocks()
            )));
        }
        let Some(params) = &kernel.params else {
            return Err(GpuError::Refused(
                "cannot launch cooperatively: the driver cannot tell the kernel's parameters (CUDA 12.4+)".into(),
            ));
        };
        let base = words.as_mut_ptr().cast::<u8>();
        let len = words.len() * 8;
        params
            .iter()
            .map(|p| {
                if (p.offset + p.size) as usize > len {
                    return Err(GpuError::Refused(format!("the argument buffer ({len} bytes) lacks a parameter at {}", p.offset)));
                }
                // SAFETY: within `words`, checked above.
                Ok(unsafe { base.add(p.offset as usize) }.cast::<c_void>())
            })
            .collect()
    }
}
