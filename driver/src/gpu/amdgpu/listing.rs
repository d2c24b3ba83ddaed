//! AMDGPU assembly as the cost model reads it, and the SIMD it runs on.

use crate::gpu::listing::{self, access_bytes, count, parse_int, Line, Listing, Machine, MemKind, Op};
use crate::gpu::Arch;

/// An AMDGPU SIMD (wave64 on gfx9, wave32 on gfx10+).
pub(crate) fn machine(arch: &Arch) -> Machine {
    let wave32 = arch.processor().starts_with("gfx1");
    Machine {
        valu_cycles: if wave32 { 1.0 } else { 4.0 },
        memory_latency: 600.0,
        scalar_latency: 200.0,
        lds_latency: 64.0,
        alu_latency: 4.0,
        // The vector L1: 64 B per clock per CU, four SIMDs.
        bytes_per_cycle: 16.0,
        lanes: if wave32 { 32.0 } else { 64.0 },
        stores_in_vmcnt: !wave32,
        spill_latency: 0.0,
        hiding: 1.0,
    }
}

/// The listing of an AMDGPU kernel from its assembly (the lines from
/// `symbol:` to `.Lfunc_end`, as `clang -S` prints them).
pub(crate) fn read(asm: &str) -> Listing {
    let lines: Vec<Line> = asm.lines().map(line).collect();
    listing::read(&lines, &branch_target, &op, &trips, false)
}

/// A line as (label it defines, (mnemonic, operands)); comments dropped.
fn line(line: &str) -> Line {
    let code = line.split(';').next().unwrap_or("").trim();
    if let Some(label) = code.strip_suffix(':') {
        return (Some(label.to_string()), None);
    }
    if code.is_empty() || code.starts_with('.') {
        return (None, None);
    }
    let (mnemonic, operands) = code.split_once(char::is_whitespace).unwrap_or((code, ""));
    // Spills keep their comment: "; 4-byte Folded Spill".
    let operands = if line.contains("Folded Spill") || line.contains("Folded Reload") {
        format!("{} ;spill", operands.trim())
    } else {
        operands.trim().to_string()
    };
    (None, Some((mnemonic.to_string(), operands)))
}

fn branch_target(mnemonic: &str, operands: &str) -> Option<String> {
    (mnemonic == "s_branch" || mnemonic.starts_with("s_cbranch")).then(|| operands.trim().to_string())
}

fn op(mnemonic: &str, operands: &str) -> Option<Op> {
    let mem = |kind, load| Some(Op::Mem { kind, bytes: access_bytes(mnemonic), load, dest: None, srcs: vec![] });
    let is_load = mnemonic.contains("load") || mnemonic.contains("atomic");
    if mnemonic == "s_waitcnt" {
        let count =
            |name: &str| operands.split_whitespace().find_map(|t| t.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')?.parse().ok());
        return Some(Op::Wait { vm: count("vmcnt"), lgkm: count("lgkmcnt") });
    }
    if mnemonic.starts_with("scratch_") || (mnemonic.starts_with("buffer_") && operands.ends_with(";spill")) {
        return mem(MemKind::Scratch, is_load);
    }
    if mnemonic.starts_with("buffer_") && operands.contains(", off,") {
        // MUBUF with no address VGPR: private memory (scratch).
        return mem(MemKind::Scratch, is_load);
    }
    if mnemonic.starts_with("global_") || mnemonic.starts_with("flat_") || mnemonic.starts_with("buffer_") {
        return mem(MemKind::Global, is_load);
    }
    if mnemonic.starts_with("s_load") || mnemonic.starts_with("s_buffer_load") {
        return mem(MemKind::Scalar, true);
    }
    if mnemonic.starts_with("ds_") {
        return mem(MemKind::Lds, is_load);
    }
    let cycles = if mnemonic == "s_nop" {
        parse_int(operands).unwrap_or(0) as f64 + 1.0
    } else if mnemonic.starts_with("s_waitcnt") || mnemonic == "s_endpgm" {
        0.0
    } else {
        1.0
    };
    Some(Op::Alu { cycles, vector: mnemonic.starts_with("v_"), dest: None, srcs: vec![] })
}

/// A scalar counter: `s_mov_b32 sN, I` before the loop, `s_add_i32 sN,
/// sN, S` in it, and the branch's `s_cmp_{lg,eq,..}_{u32,i32} sN, B`.
fn trips(lines: &[Line], start: usize, end: usize) -> Option<u64> {
    let ops = |r: std::ops::Range<usize>| lines[r].iter().filter_map(|(_, i)| i.as_ref());
    let (cmp, cmp_ops) = ops(start..end).rfind(|(m, _)| m.starts_with("s_cmp_"))?;
    let args: Vec<&str> = cmp_ops.split(',').map(str::trim).collect();
    let (reg, bound) = match (args.first().and_then(|a| parse_int(a)), args.get(1).and_then(|a| parse_int(a))) {
        (None, Some(b)) => (args[0], b),
        (Some(b), None) => (*args.get(1)?, b),
        _ => return None,
    };
    let step = ops(start..end).find_map(|(m, o)| {
        let a: Vec<&str> = o.split(',').map(str::trim).collect();
        let add = matches!(m.as_str(), "s_add_i32" | "s_add_u32");
        let sub = matches!(m.as_str(), "s_sub_i32" | "s_sub_u32");
        ((add || sub) && a.len() == 3 && a[0] == reg && a[1] == reg).then(|| parse_int(a[2]).map(|s| if sub { -s } else { s }))?
    })?;
    let init = ops(0..start).rfind(|(m, o)| m == "s_mov_b32" && o.split(',').next().map(str::trim) == Some(reg))?;
    let init = parse_int(init.1.split(',').nth(1)?)?;
    // The loop runs while the compare lets the branch back: lg/ne continue until equal.
    let inclusive = cmp.contains("_le_") || cmp.contains("_ge_");
    count(init, step, bound, inclusive)
}
