//! A CUDA graph's launch run in three parts ([`crate::graph::Graph::parts`]),
//! so that a planned kernel node after other work is measured as a plain
//! launch is. The interposer sees `cuGraphLaunch` only at its entry and
//! exit (CUPTI callbacks), and the driver cannot launch one node of an
//! exec; but it can switch nodes off for a launch (`cuGraphNodeSetEnabled`).
//! So, at the program's launch's entry, the interposer launches the exec
//! itself with only the node's ancestors on ([`start`]), and leaves only the
//! node on for the program's own launch; at its exit, it launches the exec
//! with only the rest on, then switches every node back as it was
//! ([`finish`]). Every node runs once, after its ancestors, on the
//! program's stream, with the exec's own parameters (those the program set
//! with `cuGraphExec*SetParams` included).

use std::ffi::c_uint;

use crate::cuda::{CuResult, Handle, CUDA_SUCCESS};
use crate::dl::api;
use crate::graph::{Graph, Parts};

api!(PartsApi {
    set_enabled = "cuGraphNodeSetEnabled": fn(Handle, Handle, c_uint) -> CuResult;
    get_enabled = "cuGraphNodeGetEnabled": fn(Handle, Handle, *mut c_uint) -> CuResult;
    launch = "cuGraphLaunch": fn(Handle, Handle) -> CuResult;
});

/// A graph launch whose first part ran and whose node alone is on: the
/// program's own `cuGraphLaunch` runs it; [`finish`] runs the rest.
#[derive(Debug)]
pub struct Running {
    exec: Handle,
    stream: Handle,
    /// Every node switched (its handle), and whether it was on before.
    nodes: Vec<(Handle, bool)>,
    /// The rest's nodes (their handles); None: the program's launch runs
    /// the rest with the node (a switch failed after the first part ran).
    rest: Option<Vec<Handle>>,
}

impl Running {
    /// Only the node runs in the program's launch: what it leaves is the node's.
    pub fn alone(&self) -> bool {
        self.rest.is_some()
    }
}

/// Switch each of `nodes` on where it was on and `on` says so (every
/// one tried; Err: the first failure).
///
/// # Safety
/// `exec` is a live exec and the handles its source graph's nodes.
unsafe fn switch(api: &PartsApi, exec: Handle, nodes: &[(Handle, bool)], on: impl Fn(Handle) -> bool) -> Result<(), String> {
    let mut failed = None;
    for &(node, was) in nodes {
        // SAFETY: as the caller promises.
        let code = unsafe { (api.set_enabled)(exec, node, (was && on(node)) as c_uint) };
        if code != CUDA_SUCCESS {
            failed.get_or_insert(format!("cuGraphNodeSetEnabled failed ({code})"));
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Launch the first part (the node's ancestors) on `stream` and leave the
/// node alone on. Err: why not; the exec is then as it was and nothing ran.
///
/// # Safety
/// `exec` is the program's live exec, read as `graph`, whose source graph
/// (and so its node handles) is alive; `stream` the launch's stream.
pub unsafe fn start(api: &PartsApi, exec: Handle, stream: Handle, graph: &Graph, parts: &Parts) -> Result<Running, String> {
    let handle = |i: usize| graph.nodes[i].handle as Handle;
    let mut nodes = Vec::new();
    for i in parts.first.iter().chain(std::iter::once(&parts.node)).chain(&parts.rest) {
        let mut on: c_uint = 0;
        // SAFETY: a node of the exec's source graph; an out-pointer.
        let code = unsafe { (api.get_enabled)(exec, handle(*i), &mut on) };
        if code != CUDA_SUCCESS {
            return Err(format!("cuGraphNodeGetEnabled failed ({code})"));
        }
        nodes.push((handle(*i), on != 0));
    }
    let first: Vec<Handle> = parts.first.iter().map(|&i| handle(i)).collect();
    let node = handle(parts.node);
    let restore = |why: String| {
        // SAFETY: as above.
        let _ = unsafe { switch(api, exec, &nodes, |_| true) };
        Err(why)
    };
    // SAFETY: as above.
    if let Err(why) = unsafe { switch(api, exec, &nodes, |n| first.contains(&n)) } {
        return restore(why);
    }
    // SAFETY: the program's exec and stream.
    let code = unsafe { (api.launch)(exec, stream) };
    if code != CUDA_SUCCESS {
        return restore(format!("cuGraphLaunch of its first part failed ({code})"));
    }
    let rest = parts.rest.iter().map(|&i| handle(i)).collect();
    // SAFETY: as above.
    if unsafe { switch(api, exec, &nodes, |n| n == node) }.is_err() {
        // The first part ran: the program's launch must run everything after it.
        // SAFETY: as above.
        let _ = unsafe { switch(api, exec, &nodes, |n| !first.contains(&n)) };
        return Ok(Running { exec, stream, nodes, rest: None });
    }
    Ok(Running { exec, stream, nodes, rest: Some(rest) })
}

/// After the program's launch (`ran`: it succeeded): launch the rest, then
/// switch every node back as it was. Err: what failed.
///
/// # Safety
/// As for [`start`]; at the exit of the program's launch.
pub unsafe fn finish(api: &PartsApi, running: Running, ran: bool) -> Result<(), String> {
    let Running { exec, stream, nodes, rest } = running;
    let mut failed = None;
    match rest {
        Some(rest) if ran => {
            // SAFETY: as the caller promises.
            let launched = unsafe { switch(api, exec, &nodes, |n| rest.contains(&n)) }.and_then(|()| {
                // SAFETY: the program's exec and stream.
                let code = unsafe { (api.launch)(exec, stream) };
                (code == CUDA_SUCCESS).then_some(()).ok_or(format!("cuGraphLaunch of its last part failed ({code})"))
            });
            failed = launched.err();
        }
        Some(_) => failed = Some("the program's launch of the node failed: the rest of the graph was not run".into()),
        None => {}
    }
    // SAFETY: as the caller promises.
    if let Err(why) = unsafe { switch(api, exec, &nodes, |_| true) } {
        failed.get_or_insert(why);
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Node, Work};
    use std::cell::RefCell;

    // A fake driver: each node's on/off state, and what each launch ran.
    thread_local! {
        static ON: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
        static RAN: RefCell<Vec<Vec<usize>>> = const { RefCell::new(Vec::new()) };
        static FAIL_SET: RefCell<Option<usize>> = const { RefCell::new(None) };
    }
    const BASE: usize = 0x100;
    unsafe extern "C" fn set_enabled(_: Handle, node: Handle, on: c_uint) -> CuResult {
        if FAIL_SET.with(|f| f.borrow().is_some_and(|n| n == node as usize - BASE)) {
            return 1;
        }
        ON.with(|s| s.borrow_mut()[node as usize - BASE] = on != 0);
        CUDA_SUCCESS
    }
    unsafe extern "C" fn get_enabled(_: Handle, node: Handle, on: *mut c_uint) -> CuResult {
        unsafe { *on = ON.with(|s| s.borrow()[node as usize - BASE]) as c_uint };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn launch(_: Handle, _: Handle) -> CuResult {
        let on: Vec<usize> = ON.with(|s| s.borrow().iter().enumerate().filter(|(_, on)| **on).map(|(i, _)| i).collect());
        RAN.with(|r| r.borrow_mut().push(on));
        CUDA_SUCCESS
    }
    fn api() -> PartsApi {
        PartsApi { set_enabled, get_enabled, launch }
    }

    fn kernel() -> Work {
        Work::Kernel { symbol: "k".into(), launch: Err("not planned".into()) }
    }

    // 0 -> 1 -> 2 -> 3 (lbm's chain), and 4 beside; the program switched 4 off.
    fn setup() -> Graph {
        let nodes = (0..5).map(|i| Node { handle: BASE + i, work: kernel(), enabled: i != 4 }).collect();
        ON.with(|s| *s.borrow_mut() = vec![true, true, true, true, false]);
        RAN.with(|r| r.borrow_mut().clear());
        FAIL_SET.with(|f| *f.borrow_mut() = None);
        Graph { nodes, edges: vec![(0, 1), (1, 2), (2, 3)] }
    }

    #[test]
    fn each_node_runs_once_in_three_launches_and_the_exec_is_left_as_it_was() {
        let g = setup();
        let parts = g.parts(2).unwrap();
        // SAFETY: the fake driver.
        let running = unsafe { start(&api(), 1 as Handle, std::ptr::null_mut(), &g, &parts) }.unwrap();
        assert!(running.alone());
        assert_eq!(ON.with(|s| s.borrow().clone()), [false, false, true, false, false], "the program's launch runs the node alone");
        // The program's own launch.
        unsafe { launch(1 as Handle, std::ptr::null_mut()) };
        // SAFETY: as above.
        unsafe { finish(&api(), running, true) }.unwrap();
        assert_eq!(RAN.with(|r| r.borrow().clone()), [vec![0, 1], vec![2], vec![3]]);
        assert_eq!(ON.with(|s| s.borrow().clone()), [true, true, true, true, false]);
    }

    #[test]
    fn a_failed_switch_leaves_the_exec_as_it_was_or_the_program_running_the_rest() {
        let g = setup();
        let parts = g.parts(2).unwrap();
        // Node 3 cannot be switched: nothing runs, the exec is restored as far as it can be.
        FAIL_SET.with(|f| *f.borrow_mut() = Some(3));
        // SAFETY: the fake driver.
        let e = unsafe { start(&api(), 1 as Handle, std::ptr::null_mut(), &g, &parts) }.unwrap_err();
        assert_eq!(e, "cuGraphNodeSetEnabled failed (1)");
        assert!(RAN.with(|r| r.borrow().is_empty()));
        assert_eq!(ON.with(|s| s.borrow().clone()), [true, true, true, true, false]);
        // The program's launch failed: the rest is not run, the exec is restored.
        FAIL_SET.with(|f| *f.borrow_mut() = None);
        // SAFETY: as above.
        let running = unsafe { start(&api(), 1 as Handle, std::ptr::null_mut(), &g, &parts) }.unwrap();
        // SAFETY: as above.
        let e = unsafe { finish(&api(), running, false) }.unwrap_err();
        assert!(e.contains("the rest of the graph was not run"), "{e}");
        assert_eq!(RAN.with(|r| r.borrow().clone()), [vec![0, 1]]);
        assert_eq!(ON.with(|s| s.borrow().clone()), [true, true, true, true, false]);
    }
}
