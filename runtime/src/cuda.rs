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
/// Dynamic shared memory a kernel gets without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

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
    mem_get_address_range = "cuMemGetAddressRange_v2": fn(*mut u64, *mut usize, u64) -> CuResult;
    module_load_data = "cuModuleLoadData": fn(*mut Handle, *const c_void) -> CuResult;
    module_unload = "cuModuleUnload": fn(Handle) -> CuResult;
    module_get_function = "cuModuleGetFunction": fn(*mut Handle, Handle, *const c_char) -> CuResult;
    func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, Handle) -> CuResult;
    func_set_attribute = "cuFuncSetAttribute": fn(Handle, c_int, c_int) -> CuResult;
    launch_kernel = "cuLaunchKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> CuResult;
    event_create = "cuEventCreate": fn(*mut Handle, c_uint) -> CuResult;
    event_record = "cuEventRecord": fn(Handle, Handle) -> CuResult;
    event_synchronize = "cuEventSynchronize": fn(Handle) -> CuResult;
    event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, Handle, Handle) -> CuResult;
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
        Ok(Cuda { api, param_info, kernel_get_function, func_load, _lib: lib })
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
        (code == CUDA_SUCCESS).then_some(Range { addr: base, bytes: size as u64 })
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

/// The replayer's own context on the program's GPU.
pub struct CudaGpu {
    cuda: &'static Cuda,
    start: Handle,
    stop: Handle,
}

impl CudaGpu {
    /// The primary context of the device with this PCI bus id.
    pub fn open(pci_bus_id: &str) -> Result<CudaGpu, String> {
        let cuda = driver()?;
        let id = std::ffi::CString::new(pci_bus_id).map_err(|e| e.to_string())?;
        let fail = |e: GpuError| e.to_string();
        let (mut device, mut ctx, mut start, mut stop) = (0, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: out-pointers and a valid C string; each call is checked before the next uses its result.
        unsafe {
            cuda.check((cuda.api.init)(0), "cuInit").map_err(fail)?;
            cuda.check((cuda.api.device_get_by_pci_bus_id)(&mut device, id.as_ptr()), "cuDeviceGetByPCIBusId").map_err(fail)?;
            cuda.check((cuda.api.primary_ctx_retain)(&mut ctx, device), "cuDevicePrimaryCtxRetain").map_err(fail)?;
            cuda.check((cuda.api.ctx_set_current)(ctx), "cuCtxSetCurrent").map_err(fail)?;
            cuda.check((cuda.api.event_create)(&mut start, 0), "cuEventCreate").map_err(fail)?;
            cuda.check((cuda.api.event_create)(&mut stop, 0), "cuEventCreate").map_err(fail)?;
        }
        Ok(CudaGpu { cuda, start, stop })
    }
}

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
        // SAFETY: a live function, events made by `open`, and an `extra` array
        // in the driver's documented form pointing at live locals.
        unsafe {
            self.cuda.check((api.event_record)(self.start, stream), "cuEventRecord")?;
            let code = (api.launch_kernel)(
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
            self.cuda.check(code, "cuLaunchKernel")?;
            self.cuda.check((api.event_record)(self.stop, stream), "cuEventRecord")?;
            self.cuda.check((api.event_synchronize)(self.stop), "the kernel")?;
        }
        let mut ms = 0f32;
        // SAFETY: both events have completed.
        self.cuda.check(unsafe { (api.event_elapsed_time)(&mut ms, self.start, self.stop) }, "cuEventElapsedTime")?;
        Ok(ms as f64)
    }
}
