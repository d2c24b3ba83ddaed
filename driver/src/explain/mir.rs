//! Read the machine code the AMDGPU backend prints after its last
//! code-changing pass, register allocation long done:
//!
//!   clang-22 -x hip --cuda-device-only -O3 -gline-tables-only -c k.hip \
//!     -mllvm -print-after=amdgpu-preload-kern-arg-prolog      # on stderr
//!
//! Per function: the blocks in layout order, each with its successors and
//! the registers the backend says are live into it, and per instruction the
//! 32-bit VGPRs, AGPRs and SGPRs it defines and reads, its source location
//! (with the inlined-at chain) and whether it touches scratch. The printed
//! code is what the assembly printer emits, minus debug and meta
//! instructions; registers are physical, so no opcode table is needed:
//! definitions stand left of `=` or are marked `implicit-def`.

use std::fmt;

use crate::ir::SourcePos;

/// The pass after which regtune reads the machine code: the last one before
/// the assembly printer that can change instructions.
pub(crate) const LAST_PASS: &str = "amdgpu-preload-kern-arg-prolog";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum RegClass {
    Vgpr,
    Agpr,
    Sgpr,
}

/// One 32-bit register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Reg {
    pub class: RegClass,
    pub index: u16,
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = match self.class {
            RegClass::Vgpr => 'v',
            RegClass::Agpr => 'a',
            RegClass::Sgpr => 's',
        };
        write!(f, "{c}{}", self.index)
    }
}

const V_BASE: usize = 0;
const A_BASE: usize = 512;
const S_BASE: usize = 1024;
const BITS: usize = S_BASE + 128;
const WORDS: usize = BITS / 64;

/// A set of 32-bit registers (512 VGPRs, 512 AGPRs, 128 SGPRs).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RegSet([u64; WORDS]);

impl Default for RegSet {
    fn default() -> Self {
        RegSet([0; WORDS])
    }
}

impl fmt::Debug for RegSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(|r| r.to_string())).finish()
    }
}

impl RegSet {
    fn bit(r: Reg) -> Option<usize> {
        let (base, limit) = match r.class {
            RegClass::Vgpr => (V_BASE, A_BASE),
            RegClass::Agpr => (A_BASE, S_BASE),
            RegClass::Sgpr => (S_BASE, BITS),
        };
        let b = base + r.index as usize;
        (b < limit).then_some(b)
    }

    pub(crate) fn insert(&mut self, r: Reg) {
        if let Some(b) = Self::bit(r) {
            self.0[b / 64] |= 1 << (b % 64);
        }
    }

    pub(crate) fn remove(&mut self, r: Reg) {
        if let Some(b) = Self::bit(r) {
            self.0[b / 64] &= !(1 << (b % 64));
        }
    }

    pub(crate) fn union_with(&mut self, other: &RegSet) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
    }

    pub(crate) fn minus(&self, other: &RegSet) -> RegSet {
        let mut out = self.clone();
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a &= !b;
        }
        out
    }

    pub(crate) fn intersect(&self, other: &RegSet) -> RegSet {
        let mut out = self.clone();
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a &= b;
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// How many registers of `class` the set holds.
    pub(crate) fn count(&self, class: RegClass) -> u32 {
        let (lo, hi) = match class {
            RegClass::Vgpr => (V_BASE, A_BASE),
            RegClass::Agpr => (A_BASE, S_BASE),
            RegClass::Sgpr => (S_BASE, BITS),
        };
        (lo / 64..hi / 64).map(|w| self.0[w].count_ones()).sum()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Reg> + '_ {
        (0..BITS).filter(move |b| self.0[b / 64] & (1 << (b % 64)) != 0).map(|b| {
            let (class, base) = if b >= S_BASE {
                (RegClass::Sgpr, S_BASE)
            } else if b >= A_BASE {
                (RegClass::Agpr, A_BASE)
            } else {
                (RegClass::Vgpr, V_BASE)
            };
            Reg { class, index: (b - base) as u16 }
        })
    }
}

impl FromIterator<Reg> for RegSet {
    fn from_iter<I: IntoIterator<Item = Reg>>(iter: I) -> Self {
        let mut s = RegSet::default();
        for r in iter {
            s.insert(r);
        }
        s
    }
}

/// What a scratch (private memory) access holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scratch {
    /// A register spilled to a stack slot, or reloaded from one.
    Spill,
    /// A private variable that lives in memory (an array, an address-taken local).
    Private,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instr {
    pub opcode: String,
    pub defs: Vec<Reg>,
    pub uses: Vec<Reg>,
    /// Innermost first: the instruction's own place, then where each
    /// inlined function was called. Empty without a debug location.
    pub location: Vec<SourcePos>,
    pub scratch: Option<Scratch>,
    /// It reads memory (its memory operand says `load`).
    pub loads: bool,
    /// A register-to-register move: its first defined and first read operand.
    pub copy: Option<(Vec<Reg>, Vec<Reg>)>,
    /// No machine instruction is emitted for it (IMPLICIT_DEF, KILL).
    pub meta: bool,
}

impl Instr {
    /// The place in the function the machine code belongs to: the last
    /// element of the inlined-at chain.
    pub(crate) fn outer(&self) -> Option<&SourcePos> {
        self.location.last()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub number: u32,
    pub successors: Vec<u32>,
    /// What the backend says is live on entry (any lane of a register counts).
    pub live_ins: RegSet,
    pub instrs: Vec<Instr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Function {
    pub name: String,
    /// The backend kept block live-ins up to date (`TracksLiveness`).
    pub tracks_liveness: bool,
    pub blocks: Vec<Block>,
}

/// Every function printed in `dump` (the compile's stderr; other lines,
/// such as warnings and remarks, are skipped).
pub(crate) fn parse(dump: &str) -> Vec<Function> {
    let mut functions = Vec::new();
    let mut current: Option<Function> = None;
    let mut function_live_ins = RegSet::default();
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix("# Machine code for function ") {
            let (name, props) = rest.split_once(": ").unwrap_or((rest.trim_end_matches(':'), ""));
            current = Some(Function {
                name: name.to_string(),
                tracks_liveness: props.split(", ").any(|p| p.trim() == "TracksLiveness"),
                blocks: Vec::new(),
            });
            function_live_ins = RegSet::default();
            continue;
        }
        let Some(f) = current.as_mut() else { continue };
        if line.starts_with("# End machine code for function") {
            functions.extend(current.take());
            continue;
        }
        if let Some(regs) = line.strip_prefix("Function Live Ins: ") {
            function_live_ins = live_in_list(regs);
        } else if let Some(header) = line.strip_prefix("bb.") {
            let digits: String = header.chars().take_while(char::is_ascii_digit).collect();
            let Ok(number) = digits.parse() else { continue };
            // The entry block's live-ins are the function's.
            let live_ins = if f.blocks.is_empty() { function_live_ins.clone() } else { RegSet::default() };
            f.blocks.push(Block { number, successors: vec![], live_ins, instrs: vec![] });
        } else if let Some(block) = f.blocks.last_mut() {
            let body = line.trim_start();
            if let Some(list) = body.strip_prefix("successors: ") {
                let list = list.split(';').next().unwrap_or("");
                block.successors = list
                    .split(',')
                    .filter_map(|s| s.trim().strip_prefix("%bb."))
                    .filter_map(|s| s.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok())
                    .collect();
            } else if let Some(list) = body.strip_prefix("liveins: ") {
                block.live_ins.union_with(&live_in_list(list));
            } else if !body.is_empty() && !body.starts_with(';') && line.starts_with("  ") {
                block.instrs.extend(instruction(body));
            }
        }
    }
    functions
}

/// `$sgpr6, $vgpr20_vgpr21:0x0000000000000003, ...`: registers with any
/// live lane (two lane bits per 32-bit register: its low and high halves).
fn live_in_list(list: &str) -> RegSet {
    let mut set = RegSet::default();
    for item in list.split(',') {
        let item = item.trim();
        let Some(name) = item.strip_prefix('$') else { continue };
        let name = name.split_whitespace().next().unwrap_or("");
        let (name, mask) = match name.split_once(':') {
            Some((n, m)) => (n, u64::from_str_radix(m.trim_start_matches("0x"), 16).ok()),
            None => (name, None),
        };
        for (k, r) in registers(name).into_iter().enumerate() {
            if mask.is_none_or(|m| k >= 32 || m >> (2 * k) & 0b11 != 0) {
                set.insert(r);
            }
        }
    }
    set
}

/// The 32-bit registers a physical register name covers: `vgpr4_vgpr5`,
/// `sgpr0_sgpr1_sgpr2_sgpr3`, `agpr7`, `vgpr3_lo16`; none for `vcc`,
/// `exec`, `scc`, `m0`, `sgpr_null`.
pub(crate) fn registers(name: &str) -> Vec<Reg> {
    name.split('_')
        .filter_map(|part| {
            let (class, digits) = if let Some(d) = part.strip_prefix("vgpr") {
                (RegClass::Vgpr, d)
            } else if let Some(d) = part.strip_prefix("agpr") {
                (RegClass::Agpr, d)
            } else if let Some(d) = part.strip_prefix("sgpr") {
                (RegClass::Sgpr, d)
            } else {
                return None;
            };
            Some(Reg { class, index: digits.parse().ok()? })
        })
        .collect()
}

/// Opcodes that only move a register's value (after register allocation,
/// copies are already expanded into these).
const MOVES: &[&str] = &[
    "COPY",
    "V_MOV_B32_e32",
    "V_MOV_B32_e64",
    "V_MOV_B64_e32",
    "V_MOV_B64_e64",
    "V_MOV_B64_PSEUDO",
    "S_MOV_B32",
    "S_MOV_B64",
    "V_ACCVGPR_WRITE_B32_e64",
    "V_ACCVGPR_READ_B32_e64",
    "V_ACCVGPR_MOV_B32",
    "V_READFIRSTLANE_B32",
];

/// One instruction line, trimmed; `None` for debug values, bundle headers
/// and closing braces.
fn instruction(body: &str) -> Option<Instr> {
    if body.starts_with("DBG_") || body.starts_with('}') || body.starts_with("BUNDLE") {
        return None;
    }
    let (text, location) = match body.rsplit_once("; ") {
        Some((text, loc)) if looks_like_location(loc) => (text, location_chain(loc)),
        _ => (body, vec![]),
    };
    let (text, memory) = text.split_once(" :: ").unwrap_or((text, ""));
    let (lhs, rhs) = match split_top(text, " = ") {
        Some((l, r)) => (l, r),
        None => ("", text),
    };
    let mut defs = Vec::new();
    let mut first_def = Vec::new();
    for operand in split_commas(lhs) {
        let regs = operand_registers(&operand);
        if first_def.is_empty() {
            first_def = regs.clone();
        }
        defs.extend(regs);
    }
    let mut words = rhs.split_whitespace();
    let opcode = words.by_ref().find(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))?.to_string();
    let rest = rhs.split_once(opcode.as_str()).map_or("", |(_, r)| r);
    let mut uses = Vec::new();
    let mut first_use: Option<Vec<Reg>> = None;
    for operand in split_commas(rest) {
        let flags: Vec<&str> = operand.split_whitespace().collect();
        let regs = operand_registers(&operand);
        if flags.contains(&"implicit-def") || flags.contains(&"def") {
            defs.extend(regs);
        } else if flags.contains(&"undef") {
            // Reads nothing: the value is undefined.
        } else {
            if first_use.is_none() && !flags.contains(&"implicit") && operand.trim_start().starts_with(|c| c != '%') {
                first_use = Some(regs.clone());
            }
            uses.extend(regs);
        }
    }
    let copy = match first_use {
        Some(src) if MOVES.contains(&opcode.as_str()) && !src.is_empty() && !first_def.is_empty() => Some((first_def, src)),
        _ => None,
    };
    let scratch = memory.contains("addrspace 5").then(|| {
        // Spill slots are bare stack objects (`%stack.3`); private variables
        // are IR values (`%ir.hist`) or named stack objects (`%stack.0.hist`).
        let spill = memory.split("%stack.").skip(1).any(|s| {
            let digits = s.chars().take_while(char::is_ascii_digit).count();
            !s[digits..].starts_with('.')
        }) && !memory.contains("%ir.");
        if spill {
            Scratch::Spill
        } else {
            Scratch::Private
        }
    });
    Some(Instr {
        meta: matches!(opcode.as_str(), "IMPLICIT_DEF" | "KILL" | "CFI_INSTRUCTION" | "EH_LABEL"),
        loads: memory.contains("load"),
        opcode,
        defs,
        uses,
        location,
        scratch,
        copy,
    })
}

/// The registers one operand names: `killed renamable $vgpr0_vgpr1`,
/// `implicit-def dead $vcc`, `$vgpr98(tied-def 0)`.
fn operand_registers(operand: &str) -> Vec<Reg> {
    operand
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('$'))
        .flat_map(|name| {
            let name = name.split(['(', ':']).next().unwrap_or("");
            registers(name)
        })
        .collect()
}

/// `a.hip:12:3` or `h.h:4:1 @[ a.hip:12:3 ]`.
fn looks_like_location(s: &str) -> bool {
    let first = s.split(" @[ ").next().unwrap_or("");
    let mut parts = first.trim().rsplitn(3, ':');
    let col = parts.next().unwrap_or("");
    let line = parts.next().unwrap_or("");
    parts.next().is_some() && !col.is_empty() && col.chars().all(|c| c.is_ascii_digit()) && line.chars().all(|c| c.is_ascii_digit())
}

fn location_chain(s: &str) -> Vec<SourcePos> {
    s.split(" @[ ")
        .filter_map(|part| {
            let part = part.trim().trim_end_matches([']', ' ']);
            let mut it = part.rsplitn(3, ':');
            let col = it.next()?.parse().ok()?;
            let line = it.next()?.parse().ok()?;
            let file = it.next()?.to_string();
            Some(SourcePos { file, line, col })
        })
        .collect()
}

/// Split at the first `sep` outside parentheses and quotes.
fn split_top<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let mut depth = 0i32;
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '<' if !quoted => depth += 1,
            ')' | ']' | '>' if !quoted => depth -= 1,
            _ if depth == 0 && !quoted && s[i..].starts_with(sep) => return Some((&s[..i], &s[i + sep.len()..])),
            _ => {}
        }
    }
    None
}

/// Operands separated by commas outside parentheses and quotes.
fn split_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '<' if !quoted => depth += 1,
            ')' | ']' | '>' if !quoted => depth -= 1,
            ',' if depth == 0 && !quoted => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(i: u16) -> Reg {
        Reg { class: RegClass::Vgpr, index: i }
    }
    fn s(i: u16) -> Reg {
        Reg { class: RegClass::Sgpr, index: i }
    }

    const DUMP: &str = "\
# *** IR Dump After AMDGPU Preload Kernel Arguments Prolog (amdgpu-preload-kern-arg-prolog) ***:
# Machine code for function _Z1kPdi: NoPHIs, TracksLiveness, NoVRegs, TiedOpsRewritten
Frame Objects:
  fi#0: size=8, align=4, at location [SP]
Function Live Ins: $vgpr0, $sgpr4_sgpr5, $sgpr6

bb.0 (%ir-block.3):
  successors: %bb.1(0x40000000), %bb.2(0x40000000); %bb.1(50.00%), %bb.2(50.00%)
  liveins: $sgpr6, $vgpr0, $sgpr4_sgpr5
  renamable $sgpr0 = S_LOAD_DWORD_IMM renamable $sgpr4_sgpr5, 8, 0, debug-location !25 :: (invariant load (s32) from %ir.29, addrspace 4); /usr/include/h.h:268:12 @[ /w/k.hip:29:32 ]
  renamable $vgpr20 = V_ADD_U32_e32 killed $sgpr6, killed $vgpr0, implicit $exec, debug-location !41; /w/k.hip:29:43
  V_CMP_GT_I32_e32 $sgpr0, $vgpr20, implicit-def $vcc, implicit $exec, debug-location !42; /w/k.hip:30:11
  DBG_VALUE $vgpr20, $noreg, !\"i\", !DIExpression(), debug-location !7; k.hip:29:0
  $sgpr0_sgpr1 = S_AND_SAVEEXEC_B64 killed $vcc, implicit-def $exec, implicit-def $scc, implicit $exec
  S_CBRANCH_EXECZ %bb.2, implicit $exec

bb.1 (%ir-block.9):
; predecessors: %bb.0
  successors: %bb.2(0x80000000); %bb.2(100.00%)
  liveins: $sgpr4_sgpr5, $vgpr20_vgpr21:0x0000000000000003
  BUFFER_STORE_DWORD_OFFSET killed $vgpr20, $sgpr16_sgpr17_sgpr18_sgpr19, 0, 0, 0, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5); /w/k.hip:31:5
  $vgpr3 = V_MOV_B32_e32 killed $sgpr5, implicit $exec, implicit $exec
  dead $vgpr1 = nofpexcept V_FMA_F64_e64 0, undef $vgpr4_vgpr5, 0, $vgpr2_vgpr3, 0, 0, implicit $mode, implicit $exec
  $vgpr7 = IMPLICIT_DEF

bb.2:
  S_ENDPGM 0
# End machine code for function _Z1kPdi.
k.hip:2:1: remark: Function Name: _Z1kPdi [-Rpass-analysis=kernel-resource-usage]
";

    #[test]
    fn functions_blocks_and_live_ins_are_read() {
        let fs = parse(DUMP);
        assert_eq!(fs.len(), 1);
        let f = &fs[0];
        assert_eq!(f.name, "_Z1kPdi");
        assert!(f.tracks_liveness);
        assert_eq!(f.blocks.iter().map(|b| b.number).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(f.blocks[0].successors, [1, 2]);
        assert_eq!(f.blocks[0].live_ins, [v(0), s(4), s(5), s(6)].into_iter().collect());
        // Only the lanes of vgpr20 are live in the pair.
        assert_eq!(f.blocks[1].live_ins, [v(20), s(4), s(5)].into_iter().collect());
        assert_eq!(f.blocks[0].instrs.len(), 5, "the DBG_VALUE is dropped");
    }

    #[test]
    fn definitions_uses_and_locations_come_from_the_operands() {
        let f = &parse(DUMP)[0];
        let load = &f.blocks[0].instrs[0];
        assert_eq!(
            (load.opcode.as_str(), load.defs.as_slice(), load.uses.as_slice()),
            ("S_LOAD_DWORD_IMM", &[s(0)][..], &[s(4), s(5)][..])
        );
        assert!(load.loads);
        assert_eq!(load.location.len(), 2);
        assert_eq!(load.outer(), Some(&SourcePos { file: "/w/k.hip".into(), line: 29, col: 32 }));
        assert_eq!(load.location[0].file_name(), "h.h");
        let cmp = &f.blocks[0].instrs[2];
        assert!(cmp.defs.is_empty(), "vcc is not counted: {cmp:?}");
        assert_eq!(cmp.uses, [s(0), v(20)]);
        let saveexec = &f.blocks[0].instrs[3];
        assert_eq!(saveexec.defs, [s(0), s(1)]);
        assert!(saveexec.location.is_empty());
    }

    #[test]
    fn spills_moves_undef_reads_and_meta_instructions() {
        let f = &parse(DUMP)[0];
        let b = &f.blocks[1].instrs;
        assert_eq!(b[0].scratch, Some(Scratch::Spill));
        assert_eq!(b[0].uses, [v(20), s(16), s(17), s(18), s(19)]);
        assert_eq!(b[1].copy, Some((vec![v(3)], vec![s(5)])));
        // `undef $vgpr4_vgpr5` reads nothing; a dead def is still a def.
        assert_eq!(b[2].uses, [v(2), v(3)]);
        assert_eq!(b[2].defs, [v(1)]);
        assert_eq!(b[2].opcode, "V_FMA_F64_e64");
        assert!(b[3].meta && !b[2].meta);
    }

    #[test]
    fn register_names_cover_tuples_and_halves() {
        assert_eq!(registers("vgpr4_vgpr5"), [v(4), v(5)]);
        assert_eq!(registers("vgpr3_lo16"), [v(3)]);
        assert_eq!(registers("agpr7"), [Reg { class: RegClass::Agpr, index: 7 }]);
        assert!(registers("sgpr_null").is_empty() && registers("vcc").is_empty() && registers("exec_lo").is_empty());
        let set: RegSet = [v(0), v(511), s(105), Reg { class: RegClass::Agpr, index: 3 }].into_iter().collect();
        assert_eq!((set.count(RegClass::Vgpr), set.count(RegClass::Agpr), set.count(RegClass::Sgpr)), (2, 1, 1));
        assert_eq!(set.iter().count(), 4);
    }
}
