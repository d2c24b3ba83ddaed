//! CUDA's official tool-injection path: the driver loads this library
//! when `CUDA_INJECTION64_PATH` names it and calls `InitializeInjection`,
//! which subscribes to CUPTI's callbacks on the driver's launch calls.
//! The runtime API (static or shared cudart) launches through them, so
//! every `<<<...>>>`, `cudaLaunchKernel`, `cuLaunchKernel(Ex)` and
//! cooperative launch is seen; a CUDA graph's kernels are seen at
//! `cuGraphLaunch` ([`crate::graph`] keeps what each executable graph runs).
//!
//! Several host threads: a launch call holds [`crate::gate`] from its entry
//! to its exit, so one launch is measured at a time and no other thread's
//! launch runs between its copy and its comparison. Stream capture: a
//! launch into a capturing stream only adds a graph node (it is measured
//! when the graph runs), and while any capture is under way nothing is
//! measured (synchronizing then would break it); such launches are counted
//! in notes.
//!
//! CUPTI (libcupti.so.12, NVIDIA's `nvidia-cuda-cupti-cu12` wheel) is
//! opened at run time from `$REGTUNE_CUPTI`, else by soname. Structures and
//! callback ids are cupti_callbacks.h's, cupti_driver_cbid.h's and
//! generated_cuda_meta.h's; `tests/runtime.rs` checks them against the headers.

pub mod track;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::capture;
use crate::confirm::{self, Confirmation, BOOK};
use crate::cuda::{
    self, CuResult, Cuda, Handle, CUDA_SUCCESS, CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END,
};
use crate::dl::{api, Library};
use crate::gate::{self, Gate};
use crate::graph::{self, CaptureApi, Graph, GraphApi, KernelNodeParams, LaunchAttribute, MemsetParams, NodeLaunch, NodeParams, Work};
use crate::graph_parts::{self, PartsApi};
use crate::interpose::{Interposer, Launch, Pending};
use crate::plan::{Confirmed, Event, EventLog, LaunchConfig, Param, PlanKernel};

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
pub const CBID_CU_LAUNCH_COOPERATIVE_KERNEL: u32 = 477;
pub const CBID_CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ: u32 = 478;
pub const CBID_CU_STREAM_BEGIN_CAPTURE: u32 = 495;
pub const CBID_CU_STREAM_BEGIN_CAPTURE_PTSZ: u32 = 496;
pub const CBID_CU_STREAM_END_CAPTURE: u32 = 497;
pub const CBID_CU_STREAM_END_CAPTURE_PTSZ: u32 = 498;
pub const CBID_CU_STREAM_BEGIN_CAPTURE_V2: u32 = 539;
pub const CBID_CU_STREAM_BEGIN_CAPTURE_V2_PTSZ: u32 = 540;
pub const CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH: u32 = 720;
pub const CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ: u32 = 721;
pub const CBID_CU_GRAPH_INSTANTIATE: u32 = 513;
pub const CBID_CU_GRAPH_INSTANTIATE_V2: u32 = 578;
pub const CBID_CU_GRAPH_INSTANTIATE_WITH_FLAGS: u32 = 643;
pub const CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS: u32 = 656;
pub const CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ: u32 = 657;
pub const CBID_CU_GRAPH_LAUNCH: u32 = 514;
pub const CBID_CU_GRAPH_LAUNCH_PTSZ: u32 = 515;
pub const CBID_CU_GRAPH_EXEC_DESTROY: u32 = 516;
pub const CBID_CU_GRAPH_DESTROY: u32 = 517;
pub const CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS: u32 = 538;
pub const CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_V2: u32 = 692;
pub const CBID_CU_GRAPH_EXEC_MEMSET_NODE_SET_PARAMS: u32 = 563;
pub const CBID_CU_GRAPH_EXEC_NODE_SET_PARAMS: u32 = 714;
pub const CBID_CU_GRAPH_NODE_SET_ENABLED: u32 = 650;
pub const CBID_CU_GRAPH_EXEC_UPDATE: u32 = 561;
pub const CBID_CU_GRAPH_EXEC_UPDATE_V2: u32 = 696;
pub const CBID_CU_GET_PROC_ADDRESS: u32 = 626;
/// `CUDA_ERROR_UNKNOWN`.
const CUDA_ERROR_UNKNOWN: CuResult = 999;
pub const CBID_CU_GET_PROC_ADDRESS_V2: u32 = 677;

/// Entry-point lookups: where a caller may get regtune's cuGraphDestroy ([`graph_destroy`]).
const LOOKUPS: [u32; 2] = [CBID_CU_GET_PROC_ADDRESS, CBID_CU_GET_PROC_ADDRESS_V2];

/// The launch calls: a kernel's, and a graph's.
const LAUNCHES: [u32; 8] = [
    CBID_CU_LAUNCH_KERNEL,
    CBID_CU_LAUNCH_KERNEL_PTSZ,
    CBID_CU_LAUNCH_KERNEL_EX,
    CBID_CU_LAUNCH_KERNEL_EX_PTSZ,
    CBID_CU_LAUNCH_COOPERATIVE_KERNEL,
    CBID_CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
    CBID_CU_GRAPH_LAUNCH,
    CBID_CU_GRAPH_LAUNCH_PTSZ,
];
/// Stream capture's start and end.
const CAPTURES: [u32; 8] = [
    CBID_CU_STREAM_BEGIN_CAPTURE,
    CBID_CU_STREAM_BEGIN_CAPTURE_PTSZ,
    CBID_CU_STREAM_BEGIN_CAPTURE_V2,
    CBID_CU_STREAM_BEGIN_CAPTURE_V2_PTSZ,
    CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH,
    CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
    CBID_CU_STREAM_END_CAPTURE,
    CBID_CU_STREAM_END_CAPTURE_PTSZ,
];
/// What makes and changes executable graphs.
const GRAPHS: [u32; 14] = [
    CBID_CU_GRAPH_INSTANTIATE,
    CBID_CU_GRAPH_INSTANTIATE_V2,
    CBID_CU_GRAPH_INSTANTIATE_WITH_FLAGS,
    CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS,
    CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ,
    CBID_CU_GRAPH_EXEC_DESTROY,
    CBID_CU_GRAPH_DESTROY,
    CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS,
    CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_V2,
    CBID_CU_GRAPH_EXEC_MEMSET_NODE_SET_PARAMS,
    CBID_CU_GRAPH_EXEC_NODE_SET_PARAMS,
    CBID_CU_GRAPH_NODE_SET_ENABLED,
    CBID_CU_GRAPH_EXEC_UPDATE,
    CBID_CU_GRAPH_EXEC_UPDATE_V2,
];

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

/// `cuLaunchCooperativeKernel_params` (and `_ptsz`): cuLaunchKernel's, less `extra`.
#[repr(C)]
pub struct LaunchCooperativeKernelParams {
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
}

/// `cuGraphLaunch_params` (and `_ptsz`).
#[repr(C)]
pub struct GraphLaunchParams {
    pub h_graph_exec: Handle,
    pub h_stream: Handle,
}

/// How every `cuGraphInstantiate*_params` begins.
#[repr(C)]
pub struct GraphInstantiateParams {
    pub ph_graph_exec: *mut Handle,
    pub h_graph: Handle,
}

/// `cuGraphExecKernelNodeSetParams(_v2)_params`, `cuGraphExecNodeSetParams_params`
/// and `cuGraphExecMemsetNodeSetParams_params` (then a context): the exec,
/// the node, what is set.
#[repr(C)]
pub struct GraphExecNodeParams {
    pub h_graph_exec: Handle,
    pub h_node: Handle,
    pub params: *const c_void,
}

/// `cuGraphNodeSetEnabled_params`.
#[repr(C)]
pub struct GraphNodeSetEnabledParams {
    pub h_graph_exec: Handle,
    pub h_node: Handle,
    pub is_enabled: c_uint,
}

/// `cuGraphDestroy_params`.
#[repr(C)]
pub struct GraphDestroyParams {
    pub h_graph: Handle,
}

/// `cuGraphExecUpdate(_v2)_params`, and `cuGraphExecDestroy_params` (the exec alone).
#[repr(C)]
pub struct GraphExecUpdateParams {
    pub h_graph_exec: Handle,
    pub h_graph: Handle,
}

/// How `cuGetProcAddress_params` and `cuGetProcAddress_v2_params` begin.
#[repr(C)]
pub struct GetProcAddressParams {
    pub symbol: *const c_char,
    pub pfn: *mut *mut c_void,
}

/// How every `cuStreamBeginCapture*_params` and `cuStreamEndCapture_params` begins.
#[repr(C)]
pub struct StreamCaptureParams {
    pub h_stream: Handle,
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

/// A launch replayed at API entry, finished at API exit (same thread).
struct Measuring {
    pending: Pending,
    /// The program's bytes are compared afterwards (not when a graph runs more after its node).
    compare: bool,
    function: Handle,
}

thread_local! {
    static PENDING: RefCell<Option<Measuring>> = const { RefCell::new(None) };
    /// This thread holds [`GATE`], from a launch's entry to its exit.
    static HELD: Cell<bool> = const { Cell::new(false) };
    /// This thread's launch is one of a kernel being confirmed.
    static CONFIRM_LAUNCH: Cell<bool> = const { Cell::new(false) };
    /// This thread is making the interposer's own driver calls (a graph
    /// run in parts): their callbacks are not the program's.
    static OWN_CALLS: Cell<bool> = const { Cell::new(false) };
    /// The program's graph launch on this thread runs one part of three ([`graph_parts`]).
    static PARTS: RefCell<Option<graph_parts::Running>> = const { RefCell::new(None) };
    /// This thread's launch ran the choice: its stream, and
    /// the module variables to copy back into the program's after it.
    static COPY_BACK: RefCell<Option<(usize, Vec<confirm::Shared>)>> = const { RefCell::new(None) };
}

/// One launch call at a time across the program's threads.
static GATE: Gate = Gate::new();
/// Stream captures under way: by stream (and thread, for the per-thread default stream).
static ACTIVE_CAPTURES: Mutex<Vec<(usize, Option<ThreadId>)>> = Mutex::new(Vec::new());
/// Each executable graph's nodes, or why they cannot be told.
type Execs = HashMap<usize, Result<Arc<Graph>, String>>;
fn execs() -> &'static Mutex<Execs> {
    static EXECS: OnceLock<Mutex<Execs>> = OnceLock::new();
    EXECS.get_or_init(Default::default)
}
/// The graph and capture queries (CUDA 12.3+; None: graphs are not followed).
static GRAPH_API: OnceLock<Option<GraphApi>> = OnceLock::new();
/// What runs a graph in parts (None: graphs are not run so).
static PARTS_API: OnceLock<Option<PartsApi>> = OnceLock::new();
/// Each exec's source graph (whose node handles name the exec's nodes),
/// while that graph lives: a graph is run in parts only then.
static SOURCES: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
static CAPTURE_API: OnceLock<Option<CaptureApi>> = OnceLock::new();
/// The driver's cuGraphDestroy, as a lookup handed it out before regtune's
/// [`graph_destroy`] took its place (0: none has).
static DRIVER_GRAPH_DESTROY: AtomicUsize = AtomicUsize::new(0);
/// Graphs the program destroyed that regtune holds back: each is the
/// source of a live exec that runs in parts, whose nodes it names.
static HELD_BACK: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// The symbols the plan names: a graph's planned kernels keep their arguments.
static PLANNED: OnceLock<HashSet<String>> = OnceLock::new();

const WAITED: &str = "ran unmeasured: another host thread's launch was being measured, and waiting for it took too long";
const CAPTURING: &str = "ran unmeasured: a CUDA graph was being captured meanwhile (synchronizing then would break the capture)";
const GRAPH_NOT_COMPARED: &str =
    "measured in a CUDA graph with other work after or beside it: the program's own bytes are not compared with plain's";
const GRAPH_ANOTHER: &str = "ran unmeasured: another kernel of its CUDA graph was measured at that launch";
const NOT_HELD_BACK: &str = "and the graph cannot be run in parts: the graph it was instantiated from was destroyed (its nodes cannot be named), through a cuGraphDestroy regtune could not hold back (one the program resolved before regtune was loaded, as the CUDA runtime does for its own)";
const GRAPH_HELD_BACK: &str = "its CUDA graph's source graph, which the program destroyed, is held back by regtune until the exec is destroyed (its nodes name the exec's)";
const GRAPH_IN_PARTS: &str = "measured in a CUDA graph after other work: the graph ran in three parts at these launches (the kernel's ancestors, then the kernel alone, measured as a plain launch, then the rest)";

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
    let (api, lib) = cupti;
    let mut subscriber: Handle = std::ptr::null_mut();
    // SAFETY: `on_driver_call` has CUpti_CallbackFunc's prototype; out-pointer valid.
    let code = unsafe { (api.subscribe)(&mut subscriber, on_driver_call, std::ptr::null_mut()) };
    if code != 0 {
        return fail(interposer, format!("cuptiSubscribe failed ({code}): another CUPTI tool may be attached"));
    }
    // Its activity API times the program's own launches of each replay's choice (after
    // subscribing: CUPTI wants the subscription before any other call).
    let mut interposer = interposer;
    match confirm::activity(&lib) {
        Ok(_) => interposer.confirms = true,
        Err(why) => interposer.note("measure", &format!("warning: {} ({why}): the replay's figures decide", confirm::UNTIMED)),
    }
    let _ = PLANNED.set(interposer.planned_symbols());
    let lib = Library::open(&["libcuda.so.1", "libcuda.so"]).ok();
    let _ = GRAPH_API.set(lib.as_ref().and_then(|l| GraphApi::load(l).ok()));
    let _ = CAPTURE_API.set(lib.as_ref().and_then(|l| CaptureApi::load(l).ok()));
    let _ = PARTS_API.set(lib.as_ref().and_then(|l| PartsApi::load(l).ok()));
    // The driver stays loaded for the life of the process (a Library never closes).
    for cbid in LAUNCHES.into_iter().chain(CAPTURES).chain(GRAPHS).chain(LOOKUPS) {
        // SAFETY: a live subscriber and documented ids.
        unsafe { (api.enable_callback)(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) };
    }
    // Notes counted since their last write go out at exit.
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::atexit(flush_at_exit) };
    // The program's allocations: where pointers stored in device memory lead.
    track::start();
    for cbid in track::CBIDS {
        // SAFETY: as above.
        unsafe { (api.enable_callback)(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) };
    }
    // The modules the program loads: is a planned kernel the code regtune tuned?
    // SAFETY: as above.
    unsafe { (api.enable_callback)(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CBID_RESOURCE_MODULE_LOADED) };
    let _ = PLAIN_CODES.set(interposer.plain_codes());
    let whole_runs: Vec<confirm::Start> = match interposer.confirms {
        true => interposer.whole_runs().iter().map(confirm::Start::whole_run).collect(),
        false => vec![],
    };
    if let Ok(mut s) = state().lock() {
        let s = s.insert(State { interposer, cuda });
        // A whole run: its kernels' launches timed from the first.
        for start in whole_runs {
            begin_confirmation(s, start);
        }
    }
}

/// Each planned kernel's code in the plain build (symbol, key, code), set
/// once at start: a module-loaded callback reads it without the state's
/// lock, which a launch callback may hold while the driver loads a module.
static PLAIN_CODES: OnceLock<Vec<(String, String, Vec<u8>)>> = OnceLock::new();
/// Keys of entries whose kernel a loaded module holds as other code; the
/// next launch callback stops measuring them.
static NOT_THE_PROGRAMS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The code objects regtune loaded into the program (replays' choices).
static OURS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// A replay's choice is being confirmed: kernel records are on.
static CONFIRMING: AtomicBool = AtomicBool::new(false);
pub const CU_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;

extern "C" fn flush_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        // A thread stopped mid-launch may hold the state: then nothing is written.
        if let Ok(mut s) = state().try_lock() {
            if let Some(s) = s.as_mut() {
                // What the program's launches showed of each choice still under way.
                report_confirmations(s, true);
                s.interposer.flush_notes();
            }
        }
    });
}

/// A driver launch, as the callback sees it.
struct Call {
    f: Handle,
    config: LaunchConfig,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
    /// The stream, as the capture query names it (a `_ptsz` call's null is the per-thread stream).
    stream: Handle,
}

/// The stream a call names, as a capture query names it.
fn stream_of(cbid: u32, h: Handle) -> Handle {
    let ptsz = matches!(
        cbid,
        CBID_CU_LAUNCH_KERNEL_PTSZ
            | CBID_CU_LAUNCH_KERNEL_EX_PTSZ
            | CBID_CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ
            | CBID_CU_GRAPH_LAUNCH_PTSZ
            | CBID_CU_STREAM_BEGIN_CAPTURE_PTSZ
            | CBID_CU_STREAM_BEGIN_CAPTURE_V2_PTSZ
            | CBID_CU_STREAM_BEGIN_CAPTURE_TO_GRAPH_PTSZ
            | CBID_CU_STREAM_END_CAPTURE_PTSZ
    );
    if ptsz && h.is_null() {
        graph::STREAM_PER_THREAD as Handle
    } else {
        h
    }
}

/// Whether the launch's stream is capturing (or cannot tell): a launch
/// into it adds a node to a graph, and must not be synchronized.
fn capturing(stream: Handle) -> bool {
    let Some(Some(api)) = CAPTURE_API.get() else { return false };
    let mut status: c_int = graph::CAPTURE_STATUS_NONE;
    // SAFETY: any stream handle the program passed; an out-pointer.
    let code = unsafe { (api.is_capturing)(stream, &mut status) };
    code != CUDA_SUCCESS || status != graph::CAPTURE_STATUS_NONE
}

/// What names a capture: its stream, and the thread for the per-thread default stream.
fn capture_key(stream: Handle) -> (usize, Option<ThreadId>) {
    let s = stream as usize;
    (s, (s == graph::STREAM_PER_THREAD).then(|| std::thread::current().id()))
}

/// Why a planned launch cannot be measured now, on this thread.
fn cannot_measure_now() -> Option<&'static str> {
    if !HELD.get() {
        return Some(WAITED);
    }
    if ACTIVE_CAPTURES.lock().map_or(true, |c| !c.is_empty()) {
        return Some(CAPTURING);
    }
    None
}

fn enter_gate() {
    if !HELD.get() {
        HELD.set(GATE.enter(gate::WAIT));
    }
}

fn leave_gate() {
    if HELD.replace(false) {
        GATE.exit();
    }
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
                cooperative: false,
            };
            Some(Call { f: p.f, config, kernel_params: p.kernel_params, extra: p.extra, stream: stream_of(cbid, p.h_stream) })
        }
        CBID_CU_LAUNCH_COOPERATIVE_KERNEL | CBID_CU_LAUNCH_COOPERATIVE_KERNEL_PTSZ => {
            // SAFETY: for these ids CUPTI passes a cuLaunchCooperativeKernel_params.
            let p = unsafe { &*(params as *const LaunchCooperativeKernelParams) };
            let config = LaunchConfig {
                grid: [p.grid_dim_x, p.grid_dim_y, p.grid_dim_z],
                block: [p.block_dim_x, p.block_dim_y, p.block_dim_z],
                shared_bytes: p.shared_mem_bytes,
                cooperative: true,
            };
            let stream = stream_of(cbid, p.h_stream);
            Some(Call { f: p.f, config, kernel_params: p.kernel_params, extra: std::ptr::null_mut(), stream })
        }
        CBID_CU_LAUNCH_KERNEL_EX | CBID_CU_LAUNCH_KERNEL_EX_PTSZ => {
            // SAFETY: for these ids CUPTI passes a cuLaunchKernelEx_params.
            let p = unsafe { &*(params as *const LaunchKernelExParams) };
            if p.config.is_null() {
                return None;
            }
            // SAFETY: the caller's launch config, valid for the call.
            let c = unsafe { &*p.config };
            let attrs = c.attrs as *const LaunchAttribute;
            // SAFETY: the config's `num_attrs` attributes.
            let cooperative = !attrs.is_null()
                && (0..c.num_attrs as usize).any(|i| {
                    let a = unsafe { &*attrs.add(i) };
                    a.id == graph::LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.bytes[0] as u32 != 0
                });
            let config = LaunchConfig {
                grid: [c.grid_dim_x, c.grid_dim_y, c.grid_dim_z],
                block: [c.block_dim_x, c.block_dim_y, c.block_dim_z],
                shared_bytes: c.shared_mem_bytes,
                cooperative,
            };
            let stream = stream_of(cbid, c.h_stream);
            Some(Call { f: p.f, config, kernel_params: p.kernel_params, extra: p.extra, stream })
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
    if OWN_CALLS.get() {
        // The interposer's own cuGraphLaunch and cuGraphNodeSetEnabled: not the program's.
        return;
    }
    // SAFETY: for the driver domain CUPTI passes a CUpti_CallbackData.
    let data = unsafe { &*(data as *const CallbackData) };
    if track::CBIDS.contains(&cbid) {
        // SAFETY: CUPTI's data for this allocation call.
        let _ = std::panic::catch_unwind(|| unsafe { track::on_call(cbid, data) });
        return;
    }
    if LOOKUPS.contains(&cbid) {
        // SAFETY: CUPTI's data for this lookup.
        let _ = std::panic::catch_unwind(|| unsafe { on_lookup(data) });
        return;
    }
    // Never unwind into the driver.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the callback's own data, valid for this call.
        unsafe {
            if LAUNCHES.contains(&cbid) {
                on_launch(cbid, data)
            } else if CAPTURES.contains(&cbid) {
                on_capture(cbid, data)
            } else if GRAPHS.contains(&cbid) {
                on_graph(cbid, data)
            }
        }
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
    // The replay's choice, loaded into the program's context by regtune.
    if OURS.lock().is_ok_and(|ours| ours.iter().any(|o| o.as_slice() == cubin)) {
        return;
    }
    let Some(planned) = PLAIN_CODES.get() else { return };
    let differing = planned.iter().filter(|(symbol, _, plain)| crate::code::kernel_code(cubin, symbol).is_some_and(|c| &c != plain));
    if let Ok(mut keys) = NOT_THE_PROGRAMS.lock() {
        keys.extend(differing.map(|(_, key, _)| key.clone()));
    }
}

/// The call returned CUDA_SUCCESS (at its exit).
fn succeeded(data: &CallbackData) -> bool {
    // SAFETY: for driver calls the return value is a CUresult.
    !data.function_return_value.is_null() && unsafe { *(data.function_return_value as *const c_int) } == CUDA_SUCCESS
}

/// A launch's exit: compare what the program's launch left, free the gate.
/// After a kernel's last replayed launch, its confirmation starts; after a
/// launch that completed one, its result is written.
fn finish(data: &CallbackData) {
    if let Some(m) = PENDING.with(|p| p.borrow_mut().take()) {
        let ran = succeeded(data);
        if let Ok(mut s) = state().lock() {
            if let Some(s) = s.as_mut() {
                let host = cuda::LaunchContext { cuda: s.cuda, function: m.function };
                if let Some(start) = s.interposer.after(&host, m.pending, ran && m.compare) {
                    begin_confirmation(s, start);
                }
            }
        }
    }
    if let Some(running) = PARTS.with(|p| p.borrow_mut().take()) {
        finish_parts(running, succeeded(data));
    }
    if let Some((stream, shared)) = COPY_BACK.with(|c| c.borrow_mut().take()) {
        if let Ok(cuda) = cuda::driver() {
            for v in shared.iter().filter(|v| !v.constant) {
                // SAFETY: two live variables of `bytes` each, on the launch's stream, after the launch.
                unsafe { (cuda.api.memcpy_dtod_async)(v.program, v.ours, v.bytes, stream as Handle) };
            }
        }
    }
    if CONFIRM_LAUNCH.replace(false) {
        if let Ok(mut s) = state().lock() {
            if let Some(s) = s.as_mut() {
                report_confirmations(s, false);
            }
        }
    }
    leave_gate();
}

/// The program's launch of a graph run in parts is done: its last part.
fn finish_parts(running: graph_parts::Running, ran: bool) {
    let Some(Some(api)) = PARTS_API.get() else { return };
    OWN_CALLS.set(true);
    // SAFETY: started at this launch's entry, on the program's exec and stream.
    let finished = unsafe { graph_parts::finish(api, running, ran) };
    OWN_CALLS.set(false);
    if let Err(why) = finished {
        if let Ok(mut s) = state().lock() {
            if let Some(s) = s.as_mut() {
                s.interposer.note("cuGraphLaunch", &format!("a CUDA graph run in parts: {why}"));
            }
        }
    }
}

/// Kernel records on, and the choice's launches to come.
fn begin_confirmation(s: &mut State, start: confirm::Start) {
    let Some(activity) = confirm::loaded() else { return };
    let mut c = Confirmation::new(start);
    if !CONFIRMING.load(Ordering::Relaxed) {
        match activity.kernels(true) {
            Ok(()) => CONFIRMING.store(true, Ordering::Relaxed),
            Err(why) => c.failure = Some(format!("not confirmed: {why}")),
        }
    }
    let failed = c.failure.is_some();
    if let Ok(mut book) = BOOK.lock() {
        book.confirmations.push(c);
    }
    if failed {
        report_confirmations(s, false);
    }
}

/// Write the result of each confirmation that is complete (`all`: of each
/// under way, at the program's exit): its launches' records first; kernel
/// records off once none is under way.
fn report_confirmations(s: &mut State, all: bool) {
    let Some(activity) = confirm::loaded() else { return };
    let due = |c: &Confirmation| !c.reported && (all || c.complete());
    if !BOOK.lock().is_ok_and(|b| b.confirmations.iter().any(due)) {
        return;
    }
    // Every launch timed has finished, and its record is delivered (the book's lock is free).
    let _ = crate::interpose::Host::synchronize(&cuda::ProgramContext(s.cuda));
    activity.flush();
    let (done, active): (Vec<Confirmed>, bool) = match BOOK.lock() {
        Ok(mut book) => {
            book.take_records();
            let due: Vec<usize> = (0..book.confirmations.len()).filter(|&i| due(&book.confirmations[i])).collect();
            let done = due.into_iter().map(|i| book.report(i)).collect();
            (done, book.active())
        }
        Err(_) => return,
    };
    if !active && CONFIRMING.swap(false, Ordering::Relaxed) {
        let _ = activity.kernels(false);
    }
    for c in done {
        s.interposer.confirmed(c);
    }
}

/// A launch of a kernel whose replay's choice is being confirmed: every
/// other pair of its launches runs the choice (its function handle swapped
/// into the call's parameters, which the driver launches), every launch
/// timed by its activity record. False: the kernel is not being confirmed.
///
/// # Safety
/// `data` is CUPTI's callback data for this launch's API entry.
unsafe fn confirm_launch(cbid: u32, data: &CallbackData, s: &mut State, symbol: &str) -> bool {
    let Ok(mut book) = BOOK.lock() else { return false };
    let Some(c) = book.of(symbol) else { return false };
    CONFIRM_LAUNCH.set(true);
    if c.complete() {
        return true;
    }
    // SAFETY: functionParams for this callback id.
    let Some(call) = (unsafe { decode(cbid, data.function_params) }) else { return true };
    if call.config.cooperative {
        s.interposer
            .note(symbol, "ran the program's code, untimed, while the replay's choice was confirmed: a cooperative launch is not swapped");
        return true;
    }
    if capturing(call.stream) {
        return true;
    }
    if c.start.whole == Some(false) {
        // A whole run of plain's code: the program's own function, timed.
        c.launch(call.config, data.correlation_id);
        return true;
    }
    let context = data.context as usize;
    if c.function.is_none() {
        // SAFETY: the handle the program launches, in its context.
        let program = unsafe { s.cuda.function(call.f) };
        let path = &c.start.path;
        let loaded = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display())).and_then(|image| {
            // SAFETY: the program's context is current in its launch callback.
            let loaded = unsafe { load_choice(s.cuda, &image, symbol, program) }?;
            Ok((loaded, image))
        });
        match loaded {
            Ok(((f, registers, module), image)) => {
                c.function = Some((context, f as usize));
                c.registers = registers;
                // SAFETY: as above.
                c.program_registers = unsafe { registers_of(s.cuda, program) };
                // The choice's launches share the program's module variables.
                // SAFETY: the choice's module was just loaded; the program's handle is live.
                match unsafe { shared_variables(s.cuda, &image, module, call.f) } {
                    Ok(shared) => c.shared = shared,
                    Err(why) => {
                        c.failure = Some(format!("not confirmed: {why}"));
                        return true;
                    }
                }
            }
            Err(why) => {
                c.failure = Some(format!("not confirmed: the choice's code could not be loaded into the program ({why})"));
                return true;
            }
        }
    }
    let Some((loaded_in, f)) = c.function else { return true };
    if loaded_in != context {
        // Another context: the program's own code, untimed.
        return true;
    }
    if c.launch(call.config, data.correlation_id) {
        if !c.shared.is_empty() {
            for v in &c.shared {
                // SAFETY: two live variables of `bytes` each, on the launch's stream, before it.
                let copied = unsafe { (s.cuda.api.memcpy_dtod_async)(v.ours, v.program, v.bytes, call.stream) };
                if copied != CUDA_SUCCESS {
                    c.failure = Some(format!(
                        "not confirmed: a module variable could not be copied into the choice's ({})",
                        s.cuda.error_name(copied)
                    ));
                    return true;
                }
            }
            COPY_BACK.with(|b| *b.borrow_mut() = Some((call.stream as usize, c.shared.clone())));
        }
        let params = data.function_params as *mut c_void;
        // SAFETY: the parameters the driver launches from, for this callback id:
        // the function handle is cuLaunchKernel's first field and cuLaunchKernelEx's second.
        unsafe {
            match cbid {
                CBID_CU_LAUNCH_KERNEL | CBID_CU_LAUNCH_KERNEL_PTSZ => (*(params as *mut LaunchKernelParams)).f = f as Handle,
                _ => (*(params as *mut LaunchKernelExParams)).f = f as Handle,
            }
        }
    }
    true
}

/// What the program may have set on its own function at run time and a
/// launch of the choice's needs the same, and whether the choice is of use
/// without it: the dynamic shared memory it opted into (over 48 KiB a
/// launch is refused without it: the tf32 GEMM's 72 KiB) and its
/// shared-memory carveout (a preference).
const PROGRAM_SET_ATTRIBUTES: [(c_int, bool); 2] =
    [(cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, true), (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, false)];
const CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: c_int = 9;

/// The module variables of the choice's cubin `image` (its `module`,
/// loaded), each paired with the program's variable of that name and size
/// (the module of `f`, the handle the program launches).
///
/// # Safety
/// The program's context must be current; `module` and `f` live in it.
unsafe fn shared_variables(cuda: &Cuda, image: &[u8], module: Handle, f: Handle) -> Result<Vec<confirm::Shared>, String> {
    let mut shared = vec![];
    for g in crate::code::globals(image) {
        let name = std::ffi::CString::new(g.name.as_str()).map_err(|e| e.to_string())?;
        let (mut ours, mut size) = (0u64, 0usize);
        // SAFETY: out-pointers, a loaded module and a C string.
        let found = unsafe { (cuda.api.module_get_global)(&mut ours, &mut size, module, name.as_ptr()) } == CUDA_SUCCESS;
        // SAFETY: the program's handle, in its context.
        let program = unsafe { cuda.global_of(f, &name) };
        match (found, program) {
            (true, Some(p)) if p.bytes == size as u64 => {
                shared.push(confirm::Shared { ours, program: p.addr, bytes: size, constant: g.constant })
            }
            _ => return Err(format!("the module variable `{}` is not in both the program's module and the choice's at one size", g.name)),
        }
    }
    Ok(shared)
}

/// Load the choice's code object (`bytes`) into the current context, its
/// function given the attributes the program set on its own (`program`);
/// the function, its registers per thread and its module.
///
/// # Safety
/// The program's context must be current; `program` a live function in it.
unsafe fn load_choice(cuda: &Cuda, bytes: &[u8], symbol: &str, program: Handle) -> Result<(Handle, Option<u16>, Handle), String> {
    let name = std::ffi::CString::new(symbol).map_err(|e| e.to_string())?;
    if let Ok(mut ours) = OURS.lock() {
        // Its module-loaded callback is not the program loading other code.
        ours.push(bytes.to_vec());
    }
    let (mut module, mut f): (Handle, Handle) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: a code object's bytes, out-pointers, a C string.
    unsafe {
        cuda.check((cuda.api.module_load_data)(&mut module, bytes.as_ptr().cast()), "cuModuleLoadData").map_err(|e| e.to_string())?;
        cuda.check((cuda.api.module_get_function)(&mut f, module, name.as_ptr()), "cuModuleGetFunction").map_err(|e| e.to_string())?;
        for (attribute, required) in PROGRAM_SET_ATTRIBUTES {
            let mut value: c_int = 0;
            if (cuda.api.func_get_attribute)(&mut value, attribute, program) != CUDA_SUCCESS {
                continue;
            }
            let set = cuda.check((cuda.api.func_set_attribute)(f, attribute, value), "cuFuncSetAttribute");
            if required {
                set.map_err(|e| e.to_string())?;
            }
        }
        cuda.load(f);
        Ok((f, registers_of(cuda, f), module))
    }
}

/// A function's registers per thread.
///
/// # Safety
/// `f` must be a live CUfunction.
unsafe fn registers_of(cuda: &Cuda, f: Handle) -> Option<u16> {
    let mut registers: c_int = 0;
    // SAFETY: an out-pointer and a function handle.
    let told = unsafe { (cuda.api.func_get_attribute)(&mut registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f) } == CUDA_SUCCESS;
    told.then_some(registers as u16)
}

/// # Safety
/// `data` is CUPTI's callback data for a launch callback.
unsafe fn on_launch(cbid: u32, data: &CallbackData) {
    if data.callback_site == CUPTI_API_EXIT {
        return finish(data);
    }
    if data.callback_site != CUPTI_API_ENTER {
        return;
    }
    // Held to the exit, measured or not.
    enter_gate();
    if matches!(cbid, CBID_CU_GRAPH_LAUNCH | CBID_CU_GRAPH_LAUNCH_PTSZ) {
        if data.function_params.is_null() {
            return;
        }
        // SAFETY: for these ids CUPTI passes a cuGraphLaunch_params.
        let p = unsafe { &*(data.function_params as *const GraphLaunchParams) };
        // SAFETY: the program's exec and stream.
        return unsafe { on_graph_launch(p.h_graph_exec, stream_of(cbid, p.h_stream)) };
    }
    if data.symbol_name.is_null() {
        return;
    }
    // SAFETY: CUPTI's kernel name for launch callbacks, valid for this call.
    let symbol = unsafe { CStr::from_ptr(data.symbol_name) }.to_string_lossy().into_owned();
    let Ok(mut guard) = state().lock() else { return };
    let Some(s) = guard.as_mut() else { return };
    let swappable =
        matches!(cbid, CBID_CU_LAUNCH_KERNEL | CBID_CU_LAUNCH_KERNEL_PTSZ | CBID_CU_LAUNCH_KERNEL_EX | CBID_CU_LAUNCH_KERNEL_EX_PTSZ);
    // SAFETY: this launch's entry data.
    if CONFIRMING.load(Ordering::Relaxed) && swappable && unsafe { confirm_launch(cbid, data, s, &symbol) } {
        return;
    }
    if s.interposer.wants(&symbol).is_none() {
        s.interposer.unplanned(&symbol);
        return;
    }
    // SAFETY: functionParams for this callback id.
    let Some(call) = (unsafe { decode(cbid, data.function_params) }) else { return };
    if capturing(call.stream) {
        // A node of a graph being captured: measured when the graph runs.
        return;
    }
    if let Some(why) = cannot_measure_now() {
        return s.interposer.note(&symbol, why);
    }
    // SAFETY: the handle the program launches.
    let Some(params) = (unsafe { checked_params(s, &symbol, call.f) }) else { return };
    // SAFETY: the program's own launch arguments.
    let Some(args) = (unsafe { arguments(&call, &params) }) else { return };
    let launch = Launch { symbol, config: call.config, args, params };
    let pending = s.interposer.before(&cuda::LaunchContext { cuda: s.cuda, function: call.f }, &launch);
    PENDING.with(|p| *p.borrow_mut() = pending.map(|pending| Measuring { pending, compare: true, function: call.f }));
}

/// Load the module of a planned kernel's handle (callback included), check
/// it against regtune's plain build, and say its parameters; None when it
/// is not measured (after a failure, logged).
///
/// # Safety
/// `f` must be the CUfunction or CUkernel the program launches.
unsafe fn checked_params(s: &mut State, symbol: &str, f: Handle) -> Option<Vec<Param>> {
    // SAFETY: the handle the program launches.
    unsafe { s.cuda.load(f) };
    let differing: Vec<String> = NOT_THE_PROGRAMS.lock().map(|mut keys| keys.drain(..).collect()).unwrap_or_default();
    for key in differing {
        s.interposer.not_the_programs_code(&key);
    }
    let kernel: PlanKernel = s.interposer.wants(symbol)?.clone();
    // SAFETY: the handle the program launches.
    match (unsafe { s.cuda.params(f) }, kernel.params.is_empty()) {
        (Some(driver), true) => Some(driver),
        (Some(driver), false) if driver == kernel.params => Some(driver),
        (Some(driver), false) => {
            let why = format!(
                "the program's kernel takes other parameters than regtune's build ({driver:?} vs {:?}): the db does not match this program",
                kernel.params
            );
            s.interposer.fail(&kernel, why);
            None
        }
        (None, false) => Some(kernel.params.clone()),
        (None, true) => {
            s.interposer.fail(&kernel, "cannot tell the kernel's parameters (CUDA 12.4+ driver needed)".into());
            None
        }
    }
}

/// A graph's launch: measure one planned kernel node whose memory is known
/// at the launch (see [`crate::graph`]); count the others.
///
/// # Safety
/// `exec` and `stream` are the program's, for this cuGraphLaunch.
unsafe fn on_graph_launch(exec: Handle, stream: Handle) {
    let graph = match execs().lock().ok().and_then(|e| e.get(&(exec as usize)).cloned()) {
        Some(Ok(graph)) => graph,
        Some(Err(why)) => {
            // Its kernels are not known: say so once per launch, under the call's name.
            if let Some(s) = state().lock().ok().as_mut().and_then(|s| s.as_mut()) {
                s.interposer.note("cuGraphLaunch", &format!("a CUDA graph's kernels ran unmeasured: {why}"));
            }
            return;
        }
        None => {
            if let Some(s) = state().lock().ok().as_mut().and_then(|s| s.as_mut()) {
                s.interposer.note("cuGraphLaunch", "a CUDA graph regtune did not see instantiated ran unmeasured");
            }
            return;
        }
    };
    let planned = |n: &graph::Node| matches!(&n.work, Work::Kernel { symbol, .. } if PLANNED.get().is_some_and(|p| p.contains(symbol)));
    if !graph.nodes.iter().any(planned) {
        return;
    }
    let Ok(mut guard) = state().lock() else { return };
    let Some(s) = guard.as_mut() else { return };
    // Launched into a capture, the graph becomes a child node of another.
    if capturing(stream) {
        for node in graph.nodes.iter().filter(|n| planned(n)) {
            if let Work::Kernel { symbol, .. } = &node.work {
                s.interposer.note(symbol, "ran unmeasured: its CUDA graph was launched into a stream capture (a child graph)");
            }
        }
        return;
    }
    // How the chosen node's memory is told: memsets done on the copy
    // taken at the launch, or the graph run in parts.
    enum How {
        Memsets(Vec<graph::Memset>),
        Parts(graph::Parts),
    }
    let sourced = SOURCES.lock().is_ok_and(|sources| sources.iter().any(|&(e, _)| e == exec as usize));
    let in_parts = |i: usize| -> Result<graph::Parts, String> {
        if !matches!(PARTS_API.get(), Some(Some(_))) {
            return Err("and the graph cannot be run in parts (the driver has no cuGraphNodeSetEnabled)".into());
        }
        if !sourced {
            return Err(NOT_HELD_BACK.into());
        }
        graph.parts(i)
    };
    let mut chosen: Option<(usize, String, NodeLaunch, How)> = None;
    for (i, node) in graph.nodes.iter().enumerate() {
        let Work::Kernel { symbol, launch } = &node.work else { continue };
        if !node.enabled || s.interposer.wants(symbol).is_none() {
            if !symbol.is_empty() {
                s.interposer.unplanned(symbol);
            }
            continue;
        }
        let launch = match launch {
            Ok(l) => l,
            Err(why) => {
                s.interposer.note(symbol, &format!("ran unmeasured in a CUDA graph: {why}"));
                continue;
            }
        };
        let how = match graph.prefix(i).map(How::Memsets) {
            Ok(how) => how,
            Err(why) => match in_parts(i) {
                Ok(parts) => How::Parts(parts),
                Err(not) => {
                    s.interposer.note(symbol, &format!("{why}, {not}"));
                    continue;
                }
            },
        };
        if chosen.is_some() {
            s.interposer.note(symbol, GRAPH_ANOTHER);
            continue;
        }
        if let Some(why) = cannot_measure_now() {
            s.interposer.note(symbol, why);
            continue;
        }
        chosen = Some((i, symbol.clone(), launch.clone(), how));
    }
    let Some((i, symbol, node, how)) = chosen else { return };
    let f = node.function as Handle;
    // SAFETY: the node's kernel handle, in the program's context.
    let Some(params) = (unsafe { checked_params(s, &symbol, f) }) else { return };
    if params != node.params {
        let why = "ran unmeasured in a CUDA graph: the driver gave its parameters differently at instantiation and launch";
        return s.interposer.note(&symbol, why);
    }
    let (memsets, compare) = match how {
        How::Memsets(memsets) => (memsets, graph.last_alone(i)),
        How::Parts(parts) => {
            let Some(Some(api)) = PARTS_API.get() else { return };
            OWN_CALLS.set(true);
            // SAFETY: the program's exec, read as `graph`, its source graph alive; the launch's stream.
            let started = unsafe { graph_parts::start(api, exec, stream, &graph, &parts) };
            OWN_CALLS.set(false);
            match started {
                Ok(running) => {
                    let alone = running.alone();
                    PARTS.with(|p| *p.borrow_mut() = Some(running));
                    s.interposer.note(&symbol, GRAPH_IN_PARTS);
                    if held_back(exec as usize) {
                        s.interposer.note(&symbol, GRAPH_HELD_BACK);
                    }
                    (vec![], alone)
                }
                Err(why) => {
                    let why = format!("ran unmeasured in a CUDA graph: running the graph in parts failed ({why}); it ran whole");
                    return s.interposer.note(&symbol, &why);
                }
            }
        }
    };
    if !compare {
        s.interposer.note(&symbol, GRAPH_NOT_COMPARED);
    }
    let launch = Launch { symbol, config: node.config, args: node.args, params };
    let prepare = |ranges: &[crate::capture::Range], snapshot: &mut [Vec<u8>]| memsets.iter().for_each(|m| m.apply(ranges, snapshot));
    let pending = s.interposer.before_prepared(&cuda::LaunchContext { cuda: s.cuda, function: f }, &launch, &prepare);
    PENDING.with(|p| *p.borrow_mut() = pending.map(|pending| Measuring { pending, compare, function: f }));
}

/// Stream capture starting (under the gate: not while a launch is
/// measured) and ending.
///
/// # Safety
/// `data` is CUPTI's callback data for a capture call.
unsafe fn on_capture(cbid: u32, data: &CallbackData) {
    if data.function_params.is_null() {
        return;
    }
    // SAFETY: every capture call's parameters begin with the stream.
    let stream = stream_of(cbid, unsafe { (*(data.function_params as *const StreamCaptureParams)).h_stream });
    let ending = matches!(cbid, CBID_CU_STREAM_END_CAPTURE | CBID_CU_STREAM_END_CAPTURE_PTSZ);
    match (data.callback_site, ending) {
        (CUPTI_API_ENTER, false) => enter_gate(),
        (CUPTI_API_EXIT, false) => {
            if succeeded(data) {
                if let Ok(mut c) = ACTIVE_CAPTURES.lock() {
                    c.push(capture_key(stream));
                }
            }
            leave_gate();
        }
        (CUPTI_API_EXIT, true) if !capturing(stream) => {
            let key = capture_key(stream);
            if let Ok(mut c) = ACTIVE_CAPTURES.lock() {
                if let Some(i) = c.iter().position(|k| *k == key) {
                    c.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// What a kernel node runs: its kernel's name, and for a planned kernel
/// its launch with the arguments packed now (the node's own copy may change).
///
/// # Safety
/// `p` must be a kernel node's parameters as the driver reads them; `v2`:
/// it has the `kern` field.
unsafe fn kernel_work(api: &GraphApi, p: &KernelNodeParams, v2: bool, cooperative: bool) -> Work {
    let f = if !p.func.is_null() || !v2 { p.func } else { p.kern };
    // SAFETY: a handle the driver handed out (or null).
    let symbol = unsafe { graph::name_of(api, f) }.unwrap_or_default();
    if !PLANNED.get().is_some_and(|planned| planned.contains(&symbol)) {
        return Work::Kernel { symbol, launch: Err("not planned".into()) };
    }
    let launch = (|| {
        let cuda = cuda::driver()?;
        // SAFETY: the node's kernel handle.
        let params = unsafe { cuda.params(f) }.ok_or("cannot tell the kernel's parameters (CUDA 12.4+ driver needed)")?;
        let config = graph::config_of(p, cooperative);
        let call = Call { f, config, kernel_params: p.kernel_params, extra: p.extra, stream: std::ptr::null_mut() };
        // SAFETY: the node's own argument pointers, valid for this call.
        let args = unsafe { arguments(&call, &params) }.ok_or("cannot read the node's arguments")?;
        Ok(NodeLaunch { function: f as usize, config, args, params })
    })();
    Work::Kernel { symbol, launch }
}

/// Read a graph as an exec instantiated from it runs it.
///
/// # Safety
/// `graph` must be a live CUgraph.
unsafe fn read_graph(graph: Handle) -> Result<Graph, String> {
    let Some(Some(api)) = GRAPH_API.get() else {
        return Err("the driver cannot be asked about graphs (CUDA 12.3+ needed)".into());
    };
    // SAFETY: a live graph; `kernel_work` gets each kernel node's parameters from the driver.
    unsafe { graph::read(api, graph, |_, p, cooperative| kernel_work(api, p, true, cooperative)) }
}

/// Executable graphs made, changed and destroyed.
///
/// # Safety
/// `data` is CUPTI's callback data for a graph call.
unsafe fn on_graph(cbid: u32, data: &CallbackData) {
    if data.function_params.is_null() {
        return;
    }
    let params = data.function_params;
    if cbid == CBID_CU_GRAPH_EXEC_DESTROY {
        if data.callback_site == CUPTI_API_ENTER {
            // SAFETY: cuGraphExecDestroy_params begins with the exec.
            let exec = unsafe { (*(params as *const GraphExecUpdateParams)).h_graph_exec } as usize;
            if let Ok(mut e) = execs().lock() {
                e.remove(&exec);
            }
            if let Ok(mut sources) = SOURCES.lock() {
                sources.retain(|&(e, _)| e != exec);
            }
            release_held_back();
        }
        return;
    }
    if cbid == CBID_CU_GRAPH_DESTROY {
        if data.callback_site == CUPTI_API_ENTER {
            // Its nodes no longer name the nodes of execs made from it.
            // SAFETY: for this id CUPTI passes a cuGraphDestroy_params.
            let graph = unsafe { (*(params as *const GraphDestroyParams)).h_graph } as usize;
            if let Ok(mut sources) = SOURCES.lock() {
                sources.retain(|&(_, g)| g != graph);
            }
        }
        return;
    }
    if data.callback_site != CUPTI_API_EXIT || !succeeded(data) {
        return;
    }
    let Some(Some(api)) = GRAPH_API.get() else { return };
    match cbid {
        CBID_CU_GRAPH_INSTANTIATE
        | CBID_CU_GRAPH_INSTANTIATE_V2
        | CBID_CU_GRAPH_INSTANTIATE_WITH_FLAGS
        | CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS
        | CBID_CU_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ => {
            // SAFETY: every cuGraphInstantiate*_params begins so.
            let p = unsafe { &*(params as *const GraphInstantiateParams) };
            if p.ph_graph_exec.is_null() {
                return;
            }
            // SAFETY: the call succeeded: the driver wrote the exec.
            let exec = unsafe { *p.ph_graph_exec } as usize;
            // SAFETY: the graph the exec was made from, live during the call.
            let graph = unsafe { read_graph(p.h_graph) };
            if let Ok(mut e) = execs().lock() {
                e.insert(exec, graph.map(Arc::new));
            }
            if let Ok(mut sources) = SOURCES.lock() {
                sources.retain(|&(e, _)| e != exec);
                sources.push((exec, p.h_graph as usize));
            }
        }
        CBID_CU_GRAPH_EXEC_UPDATE | CBID_CU_GRAPH_EXEC_UPDATE_V2 => {
            // SAFETY: both begin with the exec and the graph.
            let p = unsafe { &*(params as *const GraphExecUpdateParams) };
            // SAFETY: the graph the exec was updated from, live during the call.
            let new = unsafe { read_graph(p.h_graph) };
            if let Ok(mut e) = execs().lock() {
                let exec = p.h_graph_exec as usize;
                let updated = match (e.get(&exec), new) {
                    (Some(Ok(old)), Ok(new)) => old.updated(new).map(Arc::new),
                    (_, Err(why)) => Err(why),
                    (Some(Err(why)), _) => Err(why.clone()),
                    (None, _) => return,
                };
                e.insert(exec, updated);
            }
        }
        _ => {
            // SAFETY: these begin with the exec and the node.
            let p = unsafe { &*(params as *const GraphExecNodeParams) };
            let Ok(mut e) = execs().lock() else { return };
            let Some(Ok(graph)) = e.get_mut(&(p.h_graph_exec as usize)) else { return };
            let Some(node) = Arc::make_mut(graph).node_mut(p.h_node as usize) else { return };
            if cbid == CBID_CU_GRAPH_NODE_SET_ENABLED {
                // SAFETY: for this id CUPTI passes a cuGraphNodeSetEnabled_params.
                node.enabled = unsafe { (*(params as *const GraphNodeSetEnabledParams)).is_enabled } != 0;
                return;
            }
            // SAFETY: the caller's parameters for this id, valid for the call.
            unsafe { set_node(api, cbid, node, p.params) };
        }
    }
}

/// An entry-point lookup's exit: a caller that asks the driver for
/// cuGraphDestroy gets [`graph_destroy`], which forwards to the driver's.
/// A CUPTI callback cannot keep a call from running, so this is where a
/// program's destroy of a graph can be held back. The CUDA runtime looks
/// its functions up before cuInit loads regtune: its cudaGraphDestroy is
/// not held back (such graphs run whole, with a note).
///
/// # Safety
/// `data` is CUPTI's data for a cuGetProcAddress(_v2) call.
unsafe fn on_lookup(data: &CallbackData) {
    if data.callback_site != CUPTI_API_EXIT || !succeeded(data) || data.function_params.is_null() {
        return;
    }
    // SAFETY: both lookups' parameters begin with the symbol and the out-pointer.
    let p = unsafe { &*(data.function_params as *const GetProcAddressParams) };
    // SAFETY: the caller's NUL-terminated name.
    if p.symbol.is_null() || p.pfn.is_null() || unsafe { CStr::from_ptr(p.symbol) }.to_bytes() != b"cuGraphDestroy" {
        return;
    }
    // SAFETY: the call succeeded: the driver wrote the caller's out-pointer.
    let found = unsafe { *p.pfn } as usize;
    let ours = graph_destroy as *const () as usize;
    if found == 0 || found == ours {
        return;
    }
    // One driver function forwarded to: a lookup that finds another keeps it.
    if let Err(known) = DRIVER_GRAPH_DESTROY.compare_exchange(0, found, Ordering::SeqCst, Ordering::SeqCst) {
        if known != found {
            return;
        }
    }
    // SAFETY: the caller's out-pointer; what it reads after the call returns.
    unsafe { *p.pfn = ours as *mut c_void };
}

/// cuGraphDestroy as [`on_lookup`] hands it out. A graph that is the source
/// of a live exec run in parts is held back, not destroyed:
/// cuGraphNodeSetEnabled names an exec's nodes by its source graph's, which
/// must not be gone. It is destroyed when its last exec is
/// ([`release_held_back`]), so it never outlives what needed it; one whose
/// exec is never destroyed goes with the process, as the exec does.
unsafe extern "C" fn graph_destroy(graph: Handle) -> CuResult {
    if std::panic::catch_unwind(|| hold_back(graph as usize)).unwrap_or(false) {
        return CUDA_SUCCESS;
    }
    // Not reached without one: this is handed out only after the driver's is known.
    let Some(destroy) = driver_graph_destroy() else { return CUDA_ERROR_UNKNOWN };
    // SAFETY: the program's call, passed on as it was made.
    unsafe { destroy(graph) }
}

/// The driver's cuGraphDestroy, once a lookup has handed it out.
fn driver_graph_destroy() -> Option<unsafe extern "C" fn(Handle) -> CuResult> {
    let driver = DRIVER_GRAPH_DESTROY.load(Ordering::SeqCst);
    // SAFETY: the driver's cuGraphDestroy, as its lookup returned it.
    (driver != 0).then(|| unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(Handle) -> CuResult>(driver) })
}

/// Hold `graph` back from the program's destroy: true when some live exec
/// made from it would run in parts.
fn hold_back(graph: usize) -> bool {
    let planned = |s: &str| PLANNED.get().is_some_and(|p| p.contains(s));
    let Ok(sources) = SOURCES.lock() else { return false };
    let wanted = sources
        .iter()
        .filter(|&&(_, g)| g == graph)
        .any(|&(exec, _)| execs().lock().is_ok_and(|e| matches!(e.get(&exec), Some(Ok(g)) if g.wants_parts(planned))));
    if !wanted {
        return false;
    }
    let Ok(mut held) = HELD_BACK.lock() else { return false };
    if !held.contains(&graph) {
        held.push(graph);
    }
    true
}

/// The exec's source graph is held back (the program destroyed it).
fn held_back(exec: usize) -> bool {
    let Ok(sources) = SOURCES.lock() else { return false };
    let Some(&(_, graph)) = sources.iter().find(|&&(e, _)| e == exec) else { return false };
    HELD_BACK.lock().is_ok_and(|h| h.contains(&graph))
}

/// Destroy each held-back graph no live exec was made from (after an exec's
/// destroy): the destroy the program asked for, done once nothing needs it.
fn release_held_back() {
    let free: Vec<usize> = {
        let Ok(sources) = SOURCES.lock() else { return };
        let Ok(mut held) = HELD_BACK.lock() else { return };
        let free = held.iter().copied().filter(|g| !sources.iter().any(|&(_, s)| s == *g)).collect::<Vec<_>>();
        held.retain(|g| !free.contains(g));
        free
    };
    let Some(destroy) = driver_graph_destroy() else { return };
    OWN_CALLS.set(true);
    for graph in free {
        // SAFETY: a graph the program made and destroyed, held back alive until now.
        unsafe { destroy(graph as Handle) };
    }
    OWN_CALLS.set(false);
}

/// One node of an exec changed (`cuGraphExec*SetParams`).
///
/// # Safety
/// `params` is what the call with id `cbid` set, as the caller passed it.
unsafe fn set_node(api: &GraphApi, cbid: u32, node: &mut graph::Node, params: *const c_void) {
    let cooperative = matches!(&node.work, Work::Kernel { launch: Ok(l), .. } if l.config.cooperative);
    if params.is_null() {
        return;
    }
    match cbid {
        CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS | CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_V2 => {
            // SAFETY: a CUDA_KERNEL_NODE_PARAMS (v1 lacks the last two fields, not read then).
            let p = unsafe { &*(params as *const KernelNodeParams) };
            node.work = unsafe { kernel_work(api, p, cbid == CBID_CU_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS_V2, cooperative) };
        }
        CBID_CU_GRAPH_EXEC_MEMSET_NODE_SET_PARAMS => {
            // SAFETY: a CUDA_MEMSET_NODE_PARAMS.
            node.work = Work::Memset(graph::Memset::from(unsafe { &*(params as *const MemsetParams) }));
        }
        CBID_CU_GRAPH_EXEC_NODE_SET_PARAMS => {
            // SAFETY: a CUgraphNodeParams: the type, then the union at 16 bytes.
            let p = unsafe { &*(params as *const NodeParams) };
            let union = p.union.as_ptr().cast::<u8>();
            node.work = match p.node_type {
                // SAFETY: the union's kernel (v3, laid out as v2) or memset member.
                graph::NODE_KERNEL => unsafe { kernel_work(api, &*(union as *const KernelNodeParams), true, cooperative) },
                graph::NODE_MEMSET => Work::Memset(graph::Memset::from(unsafe { &*(union as *const MemsetParams) })),
                _ => return,
            };
        }
        _ => {}
    }
}
