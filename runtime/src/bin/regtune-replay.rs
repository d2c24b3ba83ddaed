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

fn serve(vendor: &str) -> io::Result<()> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let mut gpu: Option<Box<dyn Gpu>> = None;
    // The plain build's bytes after the last replay, for the program's launch to be compared with.
    let mut reference: Option<(Vec<Range>, Vec<Vec<u8>>)> = None;
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
                };
                let start = std::time::Instant::now();
                let result = replay::replay(gpu.as_deref_mut().expect("opened"), &launch);
                eprintln!("{}: replayed in {:.1} ms", req.symbol, start.elapsed().as_secs_f64() * 1e3);
                match result {
                    Ok(Ok(outcome)) => {
                        reference = Some((req.ranges.clone(), outcome.reference));
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
                let after = (0..ranges).map(|_| protocol::read_frame(&mut input)).collect::<io::Result<Vec<_>>>()?;
                let response = match reference.take() {
                    Some((ranges, plain)) => {
                        let difference = capture::first_difference(&ranges, &plain, &after);
                        Response::Compared { identical: difference.is_none(), difference }
                    }
                    None => Response::Error { message: "no replay to compare the program's launch with".into() },
                };
                protocol::send(&mut output, &response)?;
            }
        }
    }
}
