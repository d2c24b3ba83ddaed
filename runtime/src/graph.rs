//! CUDA graphs, as measure sees them. A graph's kernels launch at
//! `cuGraphLaunch`, not at `cuLaunchKernel` (a launch into a capturing
//! stream only adds a node), so the interposer keeps, per executable graph
//! (`CUgraphExec`), what its nodes do: read from the graph at
//! `cuGraphInstantiate*`, then followed through
//! `cuGraphExecKernelNodeSetParams`, `cuGraphExecNodeSetParams`,
//! `cuGraphExecMemsetNodeSetParams`, `cuGraphNodeSetEnabled` and
//! `cuGraphExecUpdate` (an exec cannot be read back; its graph can).
//!
//! At a graph's launch the program's memory is what the graph's first
//! nodes see. A planned kernel node is measured when that, with the
//! memsets that run before it applied, is what it sees: when nothing else
//! that writes memory (a kernel, a copy, a host function, a child graph)
//! runs before it. The program's own bytes are compared with plain's
//! afterwards only when every other node of the graph runs before it (the
//! program then leaves exactly what it left). The rest is pure: what runs
//! before what ([`Graph`]) and a memset on a copy ([`Memset::apply`]).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::capture::Range;
use crate::cuda::{CuResult, Handle, CUDA_SUCCESS};
use crate::dl::api;
use crate::plan::{LaunchConfig, Param};

/// `CUgraphNodeType`.
pub const NODE_KERNEL: c_int = 0;
pub const NODE_MEMCPY: c_int = 1;
pub const NODE_MEMSET: c_int = 2;
pub const NODE_HOST: c_int = 3;
pub const NODE_GRAPH: c_int = 4;
pub const NODE_EMPTY: c_int = 5;
pub const NODE_WAIT_EVENT: c_int = 6;
pub const NODE_EVENT_RECORD: c_int = 7;
/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE` (also a kernel node's attribute).
pub const LAUNCH_ATTRIBUTE_COOPERATIVE: c_int = 2;
/// `CUstreamCaptureStatus`'s NONE.
pub const CAPTURE_STATUS_NONE: c_int = 0;
/// `CU_STREAM_PER_THREAD`.
pub const STREAM_PER_THREAD: usize = 2;

/// `CUDA_KERNEL_NODE_PARAMS` (v2; v1 is its first six fields, v3 the same).
#[repr(C)]
pub struct KernelNodeParams {
    pub func: Handle,
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    pub kern: Handle,
    pub ctx: Handle,
}

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemsetParams {
    pub dst: u64,
    pub pitch: usize,
    pub value: c_uint,
    pub element_size: c_uint,
    pub width: usize,
    pub height: usize,
}

/// `CUgraphNodeParams`: the type, then a union (kernel: a
/// `CUDA_KERNEL_NODE_PARAMS_v3`, memset: a `CUDA_MEMSET_NODE_PARAMS_v2`,
/// whose first fields are [`MemsetParams`]'s) at 16 bytes.
#[repr(C)]
pub struct NodeParams {
    pub node_type: c_int,
    pub reserved0: [c_int; 3],
    pub union: [i64; 29],
    pub reserved2: i64,
}

/// `CUlaunchAttributeValue` (and `CUkernelNodeAttrValue`): 64 bytes; `cooperative` is an int at 0.
#[repr(C)]
pub struct LaunchAttributeValue {
    pub bytes: [u64; 8],
}

/// `CUlaunchAttribute`: the id, padding to 8, the value.
#[repr(C)]
pub struct LaunchAttribute {
    pub id: c_int,
    pub pad: [u8; 4],
    pub value: LaunchAttributeValue,
}

api!(GraphApi {
    get_nodes = "cuGraphGetNodes": fn(Handle, *mut Handle, *mut usize) -> CuResult;
    get_edges = "cuGraphGetEdges": fn(Handle, *mut Handle, *mut Handle, *mut usize) -> CuResult;
    node_get_type = "cuGraphNodeGetType": fn(Handle, *mut c_int) -> CuResult;
    kernel_node_get_params = "cuGraphKernelNodeGetParams_v2": fn(Handle, *mut KernelNodeParams) -> CuResult;
    kernel_node_get_attribute = "cuGraphKernelNodeGetAttribute": fn(Handle, c_int, *mut LaunchAttributeValue) -> CuResult;
    memset_node_get_params = "cuGraphMemsetNodeGetParams": fn(Handle, *mut MemsetParams) -> CuResult;
    func_get_name = "cuFuncGetName": fn(*mut *const c_char, Handle) -> CuResult;
    kernel_get_name = "cuKernelGetName": fn(*mut *const c_char, Handle) -> CuResult;
});

api!(CaptureApi {
    is_capturing = "cuStreamIsCapturing": fn(Handle, *mut c_int) -> CuResult;
});

/// A memset node: `height` rows of `width` elements of `element_size`
/// bytes, `pitch` apart, set to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memset {
    pub dst: u64,
    pub pitch: u64,
    pub value: u32,
    pub element_size: u32,
    pub width: u64,
    pub height: u64,
}

impl From<&MemsetParams> for Memset {
    fn from(p: &MemsetParams) -> Memset {
        Memset {
            dst: p.dst,
            pitch: p.pitch as u64,
            value: p.value,
            element_size: p.element_size,
            width: p.width as u64,
            height: p.height as u64,
        }
    }
}

impl Memset {
    /// Do it on a copy of the memory: `snapshot[i]` holds `ranges[i]`;
    /// bytes outside them are not the launch's concern.
    pub fn apply(&self, ranges: &[Range], snapshot: &mut [Vec<u8>]) {
        let size = self.element_size.clamp(1, 4) as u64;
        let pattern = self.value.to_le_bytes();
        let row_bytes = self.width * size;
        for row in 0..self.height.max(1) {
            let start = self.dst + row * if self.height > 1 { self.pitch } else { 0 };
            let end = start + row_bytes;
            for (r, bytes) in ranges.iter().zip(snapshot.iter_mut()) {
                let (lo, hi) = (start.max(r.addr), end.min(r.end()));
                for addr in lo..hi {
                    bytes[(addr - r.addr) as usize] = pattern[((addr - start) % size) as usize];
                }
            }
        }
    }
}

/// A planned kernel's launch in a node: what [`crate::interpose::Launch`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLaunch {
    /// The CUfunction or CUkernel, for the driver's questions.
    pub function: usize,
    pub config: LaunchConfig,
    pub args: Vec<u8>,
    pub params: Vec<Param>,
}

/// What a node does, as far as the memory a kernel node sees goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// A kernel (its symbol; empty when the driver cannot name it). Its
    /// launch is kept for planned kernels; Err says why it cannot be.
    Kernel {
        symbol: String,
        launch: Result<NodeLaunch, String>,
    },
    Memset(Memset),
    /// Nothing to memory: an empty node.
    Nothing,
    /// An event record or wait: nothing to memory, but it must run once
    /// (a graph with one is not run in parts, see [`Graph::parts`]).
    Event,
    /// A copy: what it writes is not followed, but the driver can switch
    /// it off for a launch.
    Copy,
    /// Anything else, by what it is: "a host function", "a child graph", ...
    Other(&'static str),
}

impl Work {
    fn writes(&self) -> Option<&'static str> {
        match self {
            Work::Kernel { .. } => Some("a kernel"),
            Work::Copy => Some(other_kind(NODE_MEMCPY)),
            Work::Other(what) => Some(what),
            Work::Memset(_) | Work::Nothing | Work::Event => None,
        }
    }

    /// The driver can switch such a node off for a launch
    /// (`cuGraphNodeSetEnabled`: kernel, memset and copy nodes only).
    fn switchable(&self) -> bool {
        match self {
            Work::Kernel { .. } | Work::Memset(_) | Work::Copy => true,
            Work::Nothing | Work::Event | Work::Other(_) => false,
        }
    }
}

/// What a node type is, in words, for the types whose effect on memory
/// is not followed.
pub fn other_kind(node_type: c_int) -> &'static str {
    match node_type {
        NODE_MEMCPY => "a copy",
        NODE_HOST => "a host function",
        NODE_GRAPH => "a child graph",
        8 | 9 => "an external semaphore",
        10 => "a memory allocation",
        11 => "a memory free",
        12 => "a batch memory operation",
        13 => "a conditional node",
        _ => "a node of a kind regtune does not follow",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node in the graph the exec was instantiated from (what
    /// `cuGraphExec*SetParams` name it by).
    pub handle: usize,
    pub work: Work,
    pub enabled: bool,
}

/// A graph's launch in three parts ([`Graph::parts`]): the nodes (by
/// index) each part leaves switched on. Nodes switched off by the
/// program stay off; empty nodes, which cannot be switched, do nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    pub first: Vec<usize>,
    pub node: usize,
    pub rest: Vec<usize>,
}

/// A graph's nodes (in the driver's order) and its edges (from, to), by index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<(usize, usize)>,
}

impl Graph {
    /// Node `i`'s ancestors: every node that runs before it, in an order
    /// they can run in (topological; by index among equals).
    pub fn before(&self, i: usize) -> Vec<usize> {
        let mut ancestor = vec![false; self.nodes.len()];
        let mut todo = vec![i];
        while let Some(n) = todo.pop() {
            for &(from, to) in &self.edges {
                if to == n && !ancestor[from] {
                    ancestor[from] = true;
                    todo.push(from);
                }
            }
        }
        self.order().into_iter().filter(|&n| ancestor[n]).collect()
    }

    /// Every node in an order they can run in (Kahn's, lowest index first).
    fn order(&self) -> Vec<usize> {
        let mut waiting: Vec<usize> = vec![0; self.nodes.len()];
        for &(_, to) in &self.edges {
            waiting[to] += 1;
        }
        let mut ready: std::collections::BTreeSet<usize> = (0..self.nodes.len()).filter(|&n| waiting[n] == 0).collect();
        let mut out = Vec::with_capacity(self.nodes.len());
        while let Some(n) = ready.pop_first() {
            out.push(n);
            for &(from, to) in &self.edges {
                if from == n {
                    waiting[to] -= 1;
                    if waiting[to] == 0 {
                        ready.insert(to);
                    }
                }
            }
        }
        out
    }

    /// What node `i` sees, from the memory at the graph's launch: these
    /// memsets done on it, in order. Err: why that cannot be told (what
    /// else runs before it); [`Graph::parts`] may then run the graph so
    /// that it can.
    pub fn prefix(&self, i: usize) -> Result<Vec<Memset>, String> {
        let mut memsets = Vec::new();
        for n in self.before(i) {
            let node = &self.nodes[n];
            if !node.enabled {
                continue;
            }
            if let Some(what) = node.work.writes() {
                return Err(format!("ran unmeasured: in its CUDA graph {what} runs before it"));
            }
            if let Work::Memset(m) = &node.work {
                memsets.push(*m);
            }
        }
        Ok(memsets)
    }

    /// Node `i`'s launch, as three launches of the same exec with other
    /// nodes switched off, for when [`Graph::prefix`] cannot tell what it
    /// sees: first its ancestors, then `i` alone (measured as a plain
    /// launch is: its memory copied after the first part, the program's
    /// bytes compared after the second), then the rest. Every node runs
    /// once, after its ancestors, with the exec's own parameters. Err: why
    /// the graph cannot be run so (a node the driver cannot switch off,
    /// which would run in all three).
    pub fn parts(&self, i: usize) -> Result<Parts, String> {
        if let Some(what) = self.unswitchable() {
            return Err(format!(
                "and the graph cannot be run in parts: it has {what} (only graphs of kernels, memsets, copies and empty nodes can)"
            ));
        }
        let before = self.before(i);
        let switched = |n: &usize| self.nodes[*n].enabled && self.nodes[*n].work.switchable();
        let first: Vec<usize> = before.iter().copied().filter(switched).collect();
        let rest: Vec<usize> = (0..self.nodes.len()).filter(|n| *n != i && !before.contains(n)).filter(switched).collect();
        Ok(Parts { first, node: i, rest })
    }

    /// A node that runs and that the driver cannot switch off, by what it is.
    fn unswitchable(&self) -> Option<&'static str> {
        self.nodes.iter().filter(|n| n.enabled).find_map(|node| match &node.work {
            Work::Event => Some("an event record or wait"),
            Work::Other(what) => Some(*what),
            _ => None,
        })
    }

    /// Some node for which `planned` holds would be run in parts
    /// ([`Graph::parts`]): it is after other work, and the graph can be.
    pub fn wants_parts(&self, planned: impl Fn(&str) -> bool) -> bool {
        self.unswitchable().is_none()
            && self.nodes.iter().enumerate().any(|(i, n)| {
                n.enabled && matches!(&n.work, Work::Kernel { symbol, launch: Ok(_) } if planned(symbol)) && self.prefix(i).is_err()
            })
    }

    /// Every other node runs before node `i`: what the graph leaves is what `i` left.
    pub fn last_alone(&self, i: usize) -> bool {
        let before = self.before(i);
        self.nodes[i].enabled && self.nodes.iter().enumerate().all(|(n, node)| n == i || !node.enabled || before.contains(&n))
    }

    pub fn node_mut(&mut self, handle: usize) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.handle == handle)
    }

    /// This exec updated from `other` (`cuGraphExecUpdate`): nodes pair
    /// by position, which holds when both graphs were built by the same
    /// calls in the same order; the pairing is checked (node kinds,
    /// kernels, edges), and Err says why it does not hold. The nodes keep
    /// their handles from the graph the exec was instantiated from.
    pub fn updated(&self, other: Graph) -> Result<Graph, String> {
        let why = "updated (cuGraphExecUpdate) from a graph whose nodes regtune cannot pair with its own";
        let kind = |w: &Work| match w {
            Work::Kernel { symbol, .. } => format!("kernel {symbol}"),
            Work::Memset(_) => "memset".into(),
            Work::Nothing => "nothing".into(),
            Work::Event => "event".into(),
            Work::Copy => other_kind(NODE_MEMCPY).into(),
            Work::Other(what) => what.to_string(),
        };
        if other.nodes.len() != self.nodes.len() || sorted(&other.edges) != sorted(&self.edges) {
            return Err(why.into());
        }
        if self.nodes.iter().zip(&other.nodes).any(|(a, b)| kind(&a.work) != kind(&b.work)) {
            return Err(why.into());
        }
        let nodes = self
            .nodes
            .iter()
            .zip(other.nodes)
            .map(|(old, new)| Node { handle: old.handle, work: new.work, enabled: old.enabled })
            .collect();
        Ok(Graph { nodes, edges: self.edges.clone() })
    }
}

fn sorted(edges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut e = edges.to_vec();
    e.sort_unstable();
    e
}

/// The name of a kernel handle: a CUfunction, or a CUkernel (what the
/// runtime launches under lazy loading, passed where a CUfunction goes).
///
/// # Safety
/// `f` must be a CUfunction or CUkernel the driver handed out.
pub unsafe fn name_of(api: &GraphApi, f: Handle) -> Option<String> {
    if f.is_null() {
        return None;
    }
    for get in [api.func_get_name, api.kernel_get_name] {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: an out-pointer; a handle of either kind (the wrong kind is refused).
        if unsafe { get(&mut name, f) } == CUDA_SUCCESS && !name.is_null() {
            // SAFETY: the driver's NUL-terminated name.
            return Some(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned());
        }
    }
    None
}

/// Read a graph: its nodes, what each does (`kernel` says for a kernel
/// node, from its parameters and whether it is cooperative), and its edges.
///
/// # Safety
/// `graph` must be a live CUgraph.
pub unsafe fn read(
    api: &GraphApi,
    graph: Handle,
    mut kernel: impl FnMut(Handle, &KernelNodeParams, bool) -> Work,
) -> Result<Graph, String> {
    let fail = |what: &str, code: CuResult| format!("{what} failed ({code})");
    let mut n = 0usize;
    // SAFETY: counting: a null array and an out-pointer.
    let code = unsafe { (api.get_nodes)(graph, std::ptr::null_mut(), &mut n) };
    if code != CUDA_SUCCESS {
        return Err(fail("cuGraphGetNodes", code));
    }
    let mut handles: Vec<Handle> = vec![std::ptr::null_mut(); n];
    // An empty array is asked for nothing: the driver refuses a count of 0 with an array.
    if n > 0 {
        // SAFETY: room for `n` nodes.
        let code = unsafe { (api.get_nodes)(graph, handles.as_mut_ptr(), &mut n) };
        if code != CUDA_SUCCESS {
            return Err(fail("cuGraphGetNodes", code));
        }
        handles.truncate(n);
    }
    let mut nodes = Vec::with_capacity(n);
    for &h in &handles {
        let mut t: c_int = -1;
        // SAFETY: a node of the graph; an out-pointer.
        let code = unsafe { (api.node_get_type)(h, &mut t) };
        if code != CUDA_SUCCESS {
            return Err(fail("cuGraphNodeGetType", code));
        }
        let work = match t {
            NODE_KERNEL => {
                // SAFETY: zeroed is a valid (empty) value of this plain C struct.
                let mut p: KernelNodeParams = unsafe { std::mem::zeroed() };
                // SAFETY: a kernel node; an out-pointer to a v2 struct.
                let code = unsafe { (api.kernel_node_get_params)(h, &mut p) };
                if code != CUDA_SUCCESS {
                    Work::Kernel { symbol: String::new(), launch: Err(fail("cuGraphKernelNodeGetParams", code)) }
                } else {
                    let mut value = LaunchAttributeValue { bytes: [0; 8] };
                    // SAFETY: a kernel node; an out-pointer to a 64-byte value.
                    let cooperative = unsafe { (api.kernel_node_get_attribute)(h, LAUNCH_ATTRIBUTE_COOPERATIVE, &mut value) }
                        == CUDA_SUCCESS
                        && value.bytes[0] as u32 != 0;
                    kernel(h, &p, cooperative)
                }
            }
            NODE_MEMSET => {
                // SAFETY: zeroed is a valid value of this plain C struct.
                let mut p: MemsetParams = unsafe { std::mem::zeroed() };
                // SAFETY: a memset node; an out-pointer.
                let code = unsafe { (api.memset_node_get_params)(h, &mut p) };
                if code != CUDA_SUCCESS {
                    return Err(fail("cuGraphMemsetNodeGetParams", code));
                }
                Work::Memset(Memset::from(&p))
            }
            NODE_EMPTY => Work::Nothing,
            NODE_WAIT_EVENT | NODE_EVENT_RECORD => Work::Event,
            NODE_MEMCPY => Work::Copy,
            other => Work::Other(other_kind(other)),
        };
        nodes.push(Node { handle: h as usize, work, enabled: true });
    }
    let mut e = 0usize;
    // SAFETY: counting: null arrays and an out-pointer.
    let code = unsafe { (api.get_edges)(graph, std::ptr::null_mut(), std::ptr::null_mut(), &mut e) };
    if code != CUDA_SUCCESS {
        return Err(fail("cuGraphGetEdges", code));
    }
    let (mut from, mut to): (Vec<Handle>, Vec<Handle>) = (vec![std::ptr::null_mut(); e], vec![std::ptr::null_mut(); e]);
    if e > 0 {
        // SAFETY: room for `e` edges in each.
        let code = unsafe { (api.get_edges)(graph, from.as_mut_ptr(), to.as_mut_ptr(), &mut e) };
        if code != CUDA_SUCCESS {
            return Err(fail("cuGraphGetEdges", code));
        }
    }
    let index: HashMap<usize, usize> = handles.iter().enumerate().map(|(i, &h)| (h as usize, i)).collect();
    let edges = from
        .iter()
        .zip(&to)
        .take(e)
        .map(|(f, t)| Some((*index.get(&(*f as usize))?, *index.get(&(*t as usize))?)))
        .collect::<Option<Vec<_>>>()
        .ok_or("cuGraphGetEdges named a node cuGraphGetNodes did not")?;
    Ok(Graph { nodes, edges })
}

/// The launch config of a kernel node's parameters.
pub fn config_of(p: &KernelNodeParams, cooperative: bool) -> LaunchConfig {
    LaunchConfig {
        grid: [p.grid_dim_x, p.grid_dim_y, p.grid_dim_z],
        block: [p.block_dim_x, p.block_dim_y, p.block_dim_z],
        shared_bytes: p.shared_mem_bytes,
        cooperative,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(symbol: &str) -> Work {
        Work::Kernel { symbol: symbol.into(), launch: Err("not planned".into()) }
    }

    fn graph(works: Vec<Work>, edges: &[(usize, usize)]) -> Graph {
        let nodes = works.into_iter().enumerate().map(|(i, work)| Node { handle: 0x100 + i, work, enabled: true }).collect();
        Graph { nodes, edges: edges.to_vec() }
    }

    fn memset(dst: u64, value: u32, element_size: u32, width: u64) -> Memset {
        Memset { dst, pitch: 0, value, element_size, width, height: 1 }
    }

    #[test]
    fn ancestors_in_an_order_they_can_run_in() {
        // 3 -> 1 -> 0, 2 -> 0; 4 is beside.
        let g = graph(vec![kernel("a"), kernel("b"), Work::Nothing, Work::Nothing, kernel("c")], &[(1, 0), (3, 1), (2, 0)]);
        assert_eq!(g.before(0), [2, 3, 1]);
        assert_eq!(g.before(3), Vec::<usize>::new());
        assert!(!g.last_alone(0), "node 4 runs beside it");
    }

    #[test]
    fn a_root_or_a_kernel_after_memsets_is_measured_and_one_after_a_kernel_is_not() {
        let m = memset(0x1000, 0, 1, 16);
        // memset -> k1 -> k2
        let g = graph(vec![Work::Memset(m), kernel("k1"), kernel("k2")], &[(0, 1), (1, 2)]);
        assert_eq!(g.prefix(1), Ok(vec![m]));
        assert!(!g.last_alone(1), "k2 runs after it: the program's bytes are not k1's");
        let why = g.prefix(2).unwrap_err();
        assert!(why.contains("a kernel runs before it"), "{why}");
        assert!(g.last_alone(2));
        // A copy before it: not followed.
        let g = graph(vec![Work::Copy, kernel("k")], &[(0, 1)]);
        assert!(g.prefix(1).unwrap_err().contains("a copy runs before it"));
        // Alone with its memset: compared.
        let g = graph(vec![Work::Memset(m), kernel("k")], &[(0, 1)]);
        assert!(g.last_alone(1));
    }

    #[test]
    fn disabled_nodes_do_nothing() {
        let mut g = graph(vec![kernel("k1"), kernel("k2")], &[(0, 1)]);
        g.nodes[0].enabled = false;
        assert_eq!(g.prefix(1), Ok(vec![]));
        assert!(g.last_alone(1));
        assert!(!g.last_alone(0), "a disabled node is not the last of anything");
    }

    #[test]
    fn a_later_node_runs_in_three_parts_ancestors_first_then_alone_then_the_rest() {
        // lbm's chain 0 -> 1 -> 2 -> 3 -> 4, with a memset 5 before 0, a copy 6
        // after 4, an empty node 7 beside, and 8 switched off by the program.
        let mut g = graph(
            vec![
                kernel("a"),
                kernel("b"),
                kernel("c"),
                kernel("d"),
                kernel("e"),
                Work::Memset(memset(0, 0, 1, 1)),
                Work::Copy,
                Work::Nothing,
                kernel("off"),
            ],
            &[(5, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 6)],
        );
        g.nodes[8].enabled = false;
        assert!(g.prefix(3).is_err());
        assert_eq!(g.parts(3), Ok(Parts { first: vec![5, 0, 1, 2], node: 3, rest: vec![4, 6] }));
        assert_eq!(g.parts(4), Ok(Parts { first: vec![5, 0, 1, 2, 3], node: 4, rest: vec![6] }));
        // A node beside the chain runs with the rest: its ancestors are not the node's.
        g.edges.push((0, 8));
        g.nodes[8].enabled = true;
        assert_eq!(g.parts(3).unwrap().rest, [4, 6, 8]);
    }

    #[test]
    fn a_graph_with_a_node_that_cannot_be_switched_off_is_not_run_in_parts() {
        for (work, what) in [
            (Work::Event, "an event record or wait"),
            (Work::Other(other_kind(NODE_HOST)), "a host function"),
            (Work::Other(other_kind(NODE_GRAPH)), "a child graph"),
            (Work::Other(other_kind(10)), "a memory allocation"),
            (Work::Other(other_kind(13)), "a conditional node"),
        ] {
            // Anywhere in the graph, even after the node: it would run in every part.
            let g = graph(vec![kernel("k1"), kernel("k2"), work], &[(0, 1), (1, 2)]);
            let why = g.parts(1).unwrap_err();
            assert_eq!(
                why,
                format!(
                    "and the graph cannot be run in parts: it has {what} (only graphs of kernels, memsets, copies and empty nodes can)"
                )
            );
        }
        // Switched off by the program, it does not run at all.
        let mut g = graph(vec![kernel("k1"), kernel("k2"), kernel("k3")], &[(0, 1), (1, 2)]);
        g.nodes[2].enabled = false;
        assert_eq!(g.parts(1), Ok(Parts { first: vec![0], node: 1, rest: vec![] }));
    }

    #[test]
    fn a_graph_wants_parts_only_for_a_planned_kernel_after_other_work_in_a_switchable_graph() {
        let planned = |grid| Work::Kernel {
            symbol: "k".into(),
            launch: Ok(NodeLaunch {
                function: 1,
                config: LaunchConfig { grid: [grid, 1, 1], block: [32, 1, 1], shared_bytes: 0, cooperative: false },
                args: vec![],
                params: vec![],
            }),
        };
        let is_k = |s: &str| s == "k";
        // A root (after a memset) is measured whole: no parts needed.
        assert!(!graph(vec![Work::Memset(memset(0, 0, 1, 1)), planned(1)], &[(0, 1)]).wants_parts(is_k));
        // After another kernel: parts.
        assert!(graph(vec![kernel("a"), planned(1)], &[(0, 1)]).wants_parts(is_k));
        // Not planned, or its launch unknown: no.
        assert!(!graph(vec![kernel("a"), kernel("k")], &[(0, 1)]).wants_parts(is_k));
        assert!(!graph(vec![kernel("a"), planned(1)], &[(0, 1)]).wants_parts(|_: &str| false));
        // A host function anywhere: the graph cannot be run in parts.
        assert!(!graph(vec![kernel("a"), planned(1), Work::Other(other_kind(NODE_HOST))], &[(0, 1)]).wants_parts(is_k));
    }

    #[test]
    fn memsets_are_done_on_the_copy_within_its_ranges() {
        let ranges = [Range { addr: 0x1000, bytes: 8 }, Range { addr: 0x2000, bytes: 8 }];
        let mut snap = vec![vec![9u8; 8], vec![9u8; 8]];
        // 4-byte elements from 0x0ffc: the first element lies before the range.
        memset(0x0ffc, 0x0403_0201, 4, 2).apply(&ranges, &mut snap);
        assert_eq!(snap[0], [1, 2, 3, 4, 9, 9, 9, 9]);
        assert_eq!(snap[1], [9; 8]);
        // 2D: two rows of two bytes, 4 apart.
        let m = Memset { dst: 0x2001, pitch: 4, value: 0xab, element_size: 1, width: 2, height: 2 };
        m.apply(&ranges, &mut snap);
        assert_eq!(snap[1], [9, 0xab, 0xab, 9, 9, 0xab, 0xab, 9]);
        // 2-byte elements.
        memset(0x1004, 0xbbaa, 2, 2).apply(&ranges, &mut snap);
        assert_eq!(snap[0], [1, 2, 3, 4, 0xaa, 0xbb, 0xaa, 0xbb]);
    }

    // A fake driver: graph 1 is [memset 0x20 -> kernel 0x10], graph 2 a
    // lone kernel. As the driver does, a count of 0 with an array is refused.
    unsafe extern "C" fn get_nodes(g: Handle, nodes: *mut Handle, n: *mut usize) -> CuResult {
        let list: &[usize] = if g as usize == 1 { &[0x10, 0x20] } else { &[0x10] };
        unsafe {
            if nodes.is_null() {
                *n = list.len();
                return CUDA_SUCCESS;
            }
            if *n == 0 {
                return 1;
            }
            for (i, h) in list.iter().take(*n).enumerate() {
                *nodes.add(i) = *h as Handle;
            }
        }
        CUDA_SUCCESS
    }
    unsafe extern "C" fn get_edges(g: Handle, from: *mut Handle, to: *mut Handle, n: *mut usize) -> CuResult {
        let list: &[(usize, usize)] = if g as usize == 1 { &[(0x20, 0x10)] } else { &[] };
        unsafe {
            if from.is_null() {
                *n = list.len();
                return CUDA_SUCCESS;
            }
            if *n == 0 {
                return 1;
            }
            for (i, (f, t)) in list.iter().enumerate() {
                *from.add(i) = *f as Handle;
                *to.add(i) = *t as Handle;
            }
        }
        CUDA_SUCCESS
    }
    unsafe extern "C" fn node_get_type(h: Handle, t: *mut c_int) -> CuResult {
        unsafe { *t = if h as usize == 0x10 { NODE_KERNEL } else { NODE_MEMSET } };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn kernel_node_get_params(_: Handle, p: *mut KernelNodeParams) -> CuResult {
        unsafe {
            (*p).func = 0x99 as Handle;
            (*p).grid_dim_x = 4;
            (*p).block_dim_x = 32;
        }
        CUDA_SUCCESS
    }
    unsafe extern "C" fn kernel_node_get_attribute(_: Handle, attr: c_int, v: *mut LaunchAttributeValue) -> CuResult {
        unsafe { (*v).bytes[0] = (attr == LAUNCH_ATTRIBUTE_COOPERATIVE) as u64 };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn memset_node_get_params(_: Handle, p: *mut MemsetParams) -> CuResult {
        unsafe { *p = MemsetParams { dst: 0x1000, pitch: 0, value: 7, element_size: 1, width: 8, height: 1 } };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn func_get_name(name: *mut *const c_char, f: Handle) -> CuResult {
        if f as usize != 0x99 {
            return 1;
        }
        unsafe { *name = c"_Z1kPd".as_ptr() };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn kernel_get_name(_: *mut *const c_char, _: Handle) -> CuResult {
        1
    }

    fn fake() -> GraphApi {
        GraphApi {
            get_nodes,
            get_edges,
            node_get_type,
            kernel_node_get_params,
            kernel_node_get_attribute,
            memset_node_get_params,
            func_get_name,
            kernel_get_name,
        }
    }

    #[test]
    fn a_graph_is_read_with_its_kernels_memsets_and_edges() {
        let api = fake();
        let kernel = |_: Handle, p: &KernelNodeParams, cooperative: bool| {
            // SAFETY: the fake's handle.
            let symbol = unsafe { name_of(&fake(), p.func) }.unwrap();
            assert_eq!(config_of(p, cooperative).grid, [4, 0, 0]);
            assert!(cooperative);
            Work::Kernel { symbol, launch: Err("not planned".into()) }
        };
        // SAFETY: the fake driver's graphs.
        let g = unsafe { read(&api, 1 as Handle, kernel) }.unwrap();
        assert_eq!(g.nodes.iter().map(|n| n.handle).collect::<Vec<_>>(), [0x10, 0x20]);
        assert_eq!(g.nodes[0].work, Work::Kernel { symbol: "_Z1kPd".into(), launch: Err("not planned".into()) });
        assert_eq!(g.nodes[1].work, Work::Memset(Memset { dst: 0x1000, pitch: 0, value: 7, element_size: 1, width: 8, height: 1 }));
        assert_eq!(g.edges, [(1, 0)]);
        // A lone node: no edges to ask for (the driver refuses an array for none).
        // SAFETY: as above.
        let g = unsafe { read(&api, 2 as Handle, kernel) }.unwrap();
        assert_eq!((g.nodes.len(), g.edges.len()), (1, 0));
        assert_eq!(g.prefix(0), Ok(vec![]));
        assert!(g.last_alone(0));
    }

    #[test]
    fn an_update_pairs_nodes_by_position_and_checks_the_pairing() {
        let launch = |grid| NodeLaunch {
            function: 1,
            config: LaunchConfig { grid: [grid, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false },
            args: vec![],
            params: vec![],
        };
        let k = |grid| Work::Kernel { symbol: "k".into(), launch: Ok(launch(grid)) };
        let old = graph(vec![Work::Memset(memset(0, 0, 1, 1)), k(64)], &[(0, 1)]);
        let mut new = graph(vec![Work::Memset(memset(0, 1, 1, 1)), k(128)], &[(0, 1)]);
        new.nodes.iter_mut().for_each(|n| n.handle += 0x1000);
        let up = old.updated(new.clone()).unwrap();
        assert_eq!(up.nodes.iter().map(|n| n.handle).collect::<Vec<_>>(), [0x100, 0x101], "the exec's own nodes keep their names");
        assert_eq!(up.nodes[1].work, k(128));
        // Another shape, or another kernel at a place: not paired.
        assert!(old.updated(graph(vec![Work::Memset(memset(0, 0, 1, 1)), k(64)], &[])).is_err());
        assert!(old.updated(graph(vec![Work::Memset(memset(0, 0, 1, 1)), kernel("other")], &[(0, 1)])).is_err());
        assert!(old.updated(graph(vec![k(64), Work::Memset(memset(0, 0, 1, 1))], &[(0, 1)])).is_err());
    }
}
