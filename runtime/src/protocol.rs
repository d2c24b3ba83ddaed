//! Interposer ↔ replayer, over the replayer's stdin and stdout: frames of
//! a little-endian u64 length and its bytes. A request or response is one
//! JSON frame; memory follows as one raw frame per range.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use crate::capture::{Pointer, Range};
use crate::plan::{LaunchConfig, Param, PlanCandidate, Replayed};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Replay a launch; one frame per range follows (its bytes before the
    /// launch), then one per module variable.
    Replay(Box<ReplayRequest>),
    /// The program's own launch ran; `ranges` frames follow (its bytes
    /// after: the ranges', then the module variables').
    Program { ranges: usize },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRequest {
    /// The program's device (PCI bus id), so the replayer uses the same GPU.
    pub device: String,
    pub symbol: String,
    pub candidates: Vec<PlanCandidate>,
    pub launch: LaunchConfig,
    pub args: Vec<u8>,
    pub params: Vec<Param>,
    pub pointers: Vec<Pointer>,
    pub ranges: Vec<Range>,
    pub runs: u32,
    /// Milliseconds this launch's replay may take (0: no limit).
    #[serde(default)]
    pub budget_ms: f64,
    /// The kernel's module's `__device__` and `__constant__` variables, as
    /// the program's module holds them: each candidate's own are set to
    /// these bytes before every run, and compared after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globals: Vec<GlobalVar>,
}

/// A module variable: its name (as `cuModuleGetGlobal` finds it) and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalVar {
    pub name: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "response", rename_all = "snake_case")]
pub enum Response {
    Replayed(Replayed),
    /// The program's launch compared with the plain build's.
    Compared {
        identical: bool,
        difference: Option<String>,
    },
    /// A candidate faulted; the replayer exits after saying so.
    Fault {
        candidate: String,
        message: String,
    },
    /// This launch could not be replayed (the replayer goes on).
    Error {
        message: String,
    },
}

/// Frames larger than this are refused: no allocation is bigger than a GPU.
const MAX_FRAME: u64 = 1 << 40;

pub fn write_frame(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(&(bytes.len() as u64).to_le_bytes())?;
    w.write_all(bytes)
}

pub fn read_frame(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes")));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

pub fn send<T: Serialize>(w: &mut impl Write, message: &T) -> io::Result<()> {
    write_frame(w, &serde_json::to_vec(message).expect("message serializes"))?;
    w.flush()
}

pub fn receive<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> io::Result<T> {
    let frame = read_frame(r)?;
    serde_json::from_slice(&frame).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_memory_frames_round_trip() {
        let request = Request::Replay(Box::new(ReplayRequest {
            device: "0000:01:00.0".into(),
            symbol: "_Z1kPd".into(),
            candidates: vec![PlanCandidate { name: "plain".into(), path: "p.cubin".into() }],
            launch: LaunchConfig { grid: [2, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false },
            args: vec![0, 16, 0, 0, 0, 0x7f, 0, 0],
            params: vec![Param { offset: 0, size: 8 }],
            pointers: vec![Pointer { offset: 0, range: 0 }],
            ranges: vec![Range { addr: 0x7f00_0000_1000, bytes: 3 }],
            runs: 10,
            budget_ms: 2500.0,
            globals: vec![GlobalVar { name: "counter".into(), bytes: 4 }],
        }));
        let mut wire = Vec::new();
        send(&mut wire, &request).unwrap();
        write_frame(&mut wire, &[1, 2, 3]).unwrap();
        send(&mut wire, &Response::Compared { identical: true, difference: None }).unwrap();
        let mut r = &wire[..];
        assert_eq!(receive::<Request>(&mut r).unwrap(), request);
        assert_eq!(read_frame(&mut r).unwrap(), [1, 2, 3]);
        assert_eq!(receive::<Response>(&mut r).unwrap(), Response::Compared { identical: true, difference: None });
        assert_eq!(read_frame(&mut r).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn an_absurd_frame_length_is_refused() {
        let wire = u64::MAX.to_le_bytes();
        assert_eq!(read_frame(&mut &wire[..]).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
