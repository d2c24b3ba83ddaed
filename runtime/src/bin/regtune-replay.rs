//! The replayer: a process of its own with its own GPU context, started by
//! the interposer inside the user's program. It reads launches and their
//! memory on stdin, runs every candidate code object on copies of that
//! memory, and answers on stdout (see `protocol`). A candidate that faults
//! loses this process's context, never the program's: the replayer says so
//! and exits, and the interposer starts a fresh one for the next kernel.
//!
//!     regtune-replay cuda|hip     (started by the interposer, not by hand)

use std::io::{self, BufReader, BufWriter};
use std::process::ExitCode;

use regtune_runtime::capture::{self, Range};
use regtune_runtime::protocol::{self, Request, Response};
use regtune_runtime::replay::{self, Gpu};

fn open(vendor: &str, device: &str) -> Result<Box<dyn Gpu>, String> {
    match vendor {
        "cuda" => regtune_runtime::cuda::CudaGpu::open(device).map(|g| Box::new(g) as Box<dyn Gpu>),
        "hip" => regtune_runtime::hip::HipGpu::open(device).map(|g| Box::new(g) as Box<dyn Gpu>),
        other => Err(format!("unknown vendor `{other}` (cuda or hip)")),
    }
}

fn main() -> ExitCode {
    let Some(vendor) = std::env::args().nth(1) else {
        eprintln!("usage: regtune-replay cuda|hip (started by regtune measure's interposer)");
        return ExitCode::from(2);
    };
    match serve(&vendor) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("regtune-replay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The last replay's ranges, module variable names, plain's bytes after
/// it, and where its stored pointers went (relocated).
type Reference = (Vec<Range>, Vec<String>, Vec<Vec<u8>>, Option<Vec<u64>>);

fn serve(vendor: &str) -> io::Result<()> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let mut gpu: Option<Box<dyn Gpu>> = None;
    // The plain build's bytes after the last replay (the ranges', then the
    // module variables', by name), for the program's launch to be compared
    // with, and where stored pointers were moved to (relocated).
    let mut reference: Option<Reference> = None;
    // REGTUNE_REPLAY_RELOCATE=1: relocate (stored pointers too); =arguments: move the argument buffer's alone.
    let relocate = std::env::var(replay::RELOCATE_ENV).ok();
    let at_program_addresses = relocate.is_none();
    let move_stored = relocate.as_deref() != Some("arguments");
    // REGTUNE_REPLAY_COLD_L2_MIB=N: N MiB copied on the device before each run (an experiment).
    let cold_l2_bytes = std::env::var(replay::COLD_L2_ENV).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) << 20;
    loop {
        let request: Request = match protocol::receive(&mut input) {
            Ok(r) => r,
            // The program closed the pipe: it is done.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        };
        match request {
            Request::Replay(req) => {
                let snapshot = req.ranges.iter().map(|_| protocol::read_frame(&mut input)).collect::<io::Result<Vec<_>>>()?;
                let globals = req
                    .globals
                    .iter()
                    .map(|g| protocol::read_frame(&mut input).map(|bytes| (g.name.clone(), bytes)))
                    .collect::<io::Result<Vec<_>>>()?;
                reference = None;
                if gpu.is_none() {
                    match open(vendor, &req.device) {
                        Ok(g) => gpu = Some(g),
                        Err(message) => {
                            protocol::send(
                                &mut output,
                                &Response::Error { message: format!("the replayer cannot use the GPU: {message}") },
                            )?;
                            continue;
                        }
                    }
                }
                let candidates: Vec<(String, Result<Vec<u8>, String>)> = req
                    .candidates
                    .iter()
                    .map(|c| (c.name.clone(), std::fs::read(&c.path).map_err(|e| format!("cannot read {}: {e}", c.path.display()))))
                    .collect();
                let launch = replay::Launch {
                    symbol: &req.symbol,
                    config: req.launch,
                    args: &req.args,
                    params: &req.params,
                    pointers: &req.pointers,
                    ranges: &req.ranges,
                    snapshot: &snapshot,
                    candidates: &candidates,
                    runs: req.runs,
                    budget_ms: req.budget_ms,
                    globals: &globals,
                    at_program_addresses,
                    move_stored,
                    cold_l2_bytes,
                };
                let start = std::time::Instant::now();
                let result = replay::replay(gpu.as_deref_mut().expect("opened"), &launch);
                let placed = match &result {
                    Ok(Ok(o)) => o.replayed.relocated.as_ref().map_or("at the program's addresses".to_string(), |why| {
                        format!("relocated ({} stored pointers moved): {why}", o.replayed.moved)
                    }),
                    _ => String::new(),
                };
                eprintln!(
                    "{}: replayed in {:.1} ms; {} ranges ({} bytes, {:#x}..), {} variables; {placed}",
                    req.symbol,
                    start.elapsed().as_secs_f64() * 1e3,
                    req.ranges.len(),
                    req.ranges.iter().map(|r| r.bytes).sum::<u64>(),
                    req.ranges.first().map_or(0, |r| r.addr),
                    globals.len(),
                );
                match result {
                    Ok(Ok(outcome)) => {
                        let names = globals.iter().map(|(n, _)| n.clone()).collect();
                        reference = Some((req.ranges.clone(), names, outcome.reference, outcome.moved_to));
                        protocol::send(&mut output, &Response::Replayed(outcome.replayed))?;
                    }
                    Ok(Err(message)) => protocol::send(&mut output, &Response::Error { message })?,
                    Err(fault) => {
                        eprintln!("{}: candidate `{}` faulted: {}", req.symbol, fault.candidate, fault.message);
                        protocol::send(&mut output, &Response::Fault { candidate: fault.candidate, message: fault.message })?;
                        // This context is lost; the interposer starts a new replayer when it needs one.
                        return Ok(());
                    }
                }
            }
            Request::Program { ranges } => {
                let mut after = (0..ranges).map(|_| protocol::read_frame(&mut input)).collect::<io::Result<Vec<_>>>()?;
                let response = match reference.take() {
                    Some((ranges, names, plain, moved_to)) => {
                        if let Some(to) = &moved_to {
                            // The program's stored pointers, moved as the replay's were.
                            for (i, bytes) in after.iter_mut().enumerate() {
                                capture::move_stored(ranges.get(i).map_or(0, |r| r.addr), bytes, &ranges, Some(to));
                            }
                        }
                        let difference = capture::first_difference_named(&ranges, &names, &plain, &after);
                        Response::Compared { identical: difference.is_none(), difference }
                    }
                    None => Response::Error { message: "no replay to compare the program's launch with".into() },
                };
                protocol::send(&mut output, &response)?;
            }
        }
    }
}
