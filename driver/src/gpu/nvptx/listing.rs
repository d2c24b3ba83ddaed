//! PTX as the cost model reads it, and the SM sub-partition it runs on.

use crate::gpu::listing::{self, access_bytes, count, parse_int, Line, Listing, Machine, MemKind, Op};

/// NVPTX's [`Machine::spill_latency`] and [`Machine::hiding`], fitted on an
/// H100 to 137 candidates: the example kernels' and those of three Rodinia
/// programs (bench/calibrate; docs/guide/how-tune-decides.md, "Cost model", has what it ranks well and
/// what it does not). Weak hiding: on those programs more warps rarely
/// bought time. AMDGPU keeps perfect hiding: no AMD GPU here to fit it on.
const SPILL_LATENCY: f64 = 200.0;
const HIDING: f64 = 0.25;

/// An NVIDIA SM sub-partition.
pub(crate) fn machine() -> Machine {
    Machine {
        valu_cycles: 1.0,
        memory_latency: 600.0,
        scalar_latency: 0.0,
        lds_latency: 30.0,
        alu_latency: 4.0,
        // L1: 128 B per clock per SM, four sub-partitions.
        bytes_per_cycle: 32.0,
        lanes: 32.0,
        stores_in_vmcnt: false,
        spill_latency: SPILL_LATENCY,
        hiding: HIDING,
    }
}

/// The listing of an NVPTX kernel from its PTX (the `.entry` block).
pub(crate) fn read(ptx: &str) -> Listing {
    let lines: Vec<Line> = ptx.lines().map(line).collect();
    listing::read(&lines, &branch_target, &op, &trips, true)
}

fn line(line: &str) -> Line {
    let code = line.split("//").next().unwrap_or("").trim();
    if let Some(label) = code.strip_suffix(':') {
        return (Some(label.to_string()), None);
    }
    let Some(code) = code.strip_suffix(';') else {
        return (None, None);
    };
    if code.starts_with('.') {
        return (None, None);
    }
    // A guard: "@%p1 bra $L" → mnemonic "bra", the guard kept as an operand.
    let (guard, rest) = match code.strip_prefix('@') {
        Some(g) => {
            let (p, rest) = g.split_once(char::is_whitespace).unwrap_or((g, ""));
            (Some(p.trim_start_matches('!')), rest.trim())
        }
        None => (None, code),
    };
    let (mnemonic, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let operands = match guard {
        Some(p) => format!("{}, {p}", operands.trim()),
        None => operands.trim().to_string(),
    };
    (None, Some((mnemonic.to_string(), operands)))
}

fn branch_target(mnemonic: &str, operands: &str) -> Option<String> {
    mnemonic.starts_with("bra").then(|| operands.split(',').next().unwrap_or("").trim().to_string())
}

/// PTX registers an operand list names (`%rd12`, `%fd3`, `%p1`).
fn registers(operands: &str) -> Vec<String> {
    operands
        .split(|c: char| !(c.is_alphanumeric() || c == '%' || c == '_'))
        .filter(|t| t.starts_with('%') && t.len() > 1)
        .map(str::to_string)
        .collect()
}

fn op(mnemonic: &str, operands: &str) -> Option<Op> {
    let regs = registers(operands);
    let parts: Vec<&str> = mnemonic.split('.').collect();
    let space = |s: &str| parts.get(1) == Some(&s);
    let kind = if space("global") {
        Some(MemKind::Global)
    } else if space("local") {
        Some(MemKind::Scratch)
    } else if space("shared") {
        Some(MemKind::Lds)
    } else {
        None
    };
    match (parts[0], kind) {
        ("ld", Some(kind)) => {
            let (dest, srcs) = split_dest(regs);
            Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load: true, dest, srcs })
        }
        ("st", Some(kind)) | ("red", Some(kind)) | ("atom", Some(kind)) => {
            Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load: parts[0] == "atom", dest: None, srcs: regs })
        }
        ("ret" | "exit", _) => None,
        _ => {
            let (dest, srcs) = if parts[0] == "bra" { (None, regs) } else { split_dest(regs) };
            Some(Op::Alu { cycles: 1.0, vector: false, dest, srcs })
        }
    }
}

fn split_dest(mut regs: Vec<String>) -> (Option<String>, Vec<String>) {
    if regs.is_empty() {
        return (None, regs);
    }
    let dest = regs.remove(0);
    (Some(dest), regs)
}

/// A PTX counter: `mov.{u32,b32} %r, I` before the loop, `add.s32 %r, %r,
/// S` in it, `setp.{ne,lt,..}.s32 %p, %r, B` feeding the back branch.
fn trips(lines: &[Line], start: usize, end: usize) -> Option<u64> {
    let ops = |r: std::ops::Range<usize>| lines[r].iter().filter_map(|(_, i)| i.as_ref());
    let (setp, setp_ops) = ops(start..end).rfind(|(m, _)| m.starts_with("setp."))?;
    let args: Vec<&str> = setp_ops.split(',').map(str::trim).collect();
    let (reg, bound) = (*args.get(1)?, parse_int(args.get(2)?)?);
    let step = ops(start..end).find_map(|(m, o)| {
        let a: Vec<&str> = o.split(',').map(str::trim).collect();
        (m.starts_with("add.") && a.len() == 3 && a[0] == reg && a[1] == reg).then(|| parse_int(a[2]))?
    })?;
    let init = ops(0..start).rfind(|(m, o)| m.starts_with("mov.") && o.split(',').next().map(str::trim) == Some(reg))?;
    let init = parse_int(init.1.split(',').nth(1)?)?;
    let inclusive = setp.contains(".le.") || setp.contains(".ge.");
    count(init, step, bound, inclusive)
}
