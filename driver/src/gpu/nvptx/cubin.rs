//! Read kernels from an NVIDIA cubin (the ELF ptxas writes).
//!
//! A kernel is a function symbol marked as a CUDA entry point (`st_other`
//! bit `STO_CUDA_ENTRY`); its code size is the symbol's size. The rest is in
//! the `.nv.info` sections, a list of `EIATTR_*` records (one format byte,
//! one attribute byte, then a 16-bit value or a 16-bit length and payload):
//! the module-wide `.nv.info` gives each function's register count
//! (`EIATTR_REGCOUNT`) and stack frame (`EIATTR_FRAME_SIZE`) by symbol index,
//! and `.nv.info.<kernel>` its launch bounds (`EIATTR_MAX_THREADS`, from
//! `__launch_bounds__` / `.maxntid`) and its parameters
//! (`EIATTR_KPARAM_INFO`: ordinal, offset, and the size in bits 18..32 of
//! the last word). Spill traffic and shared memory are
//! not recorded there in a form regtune relies on; they come from `ptxas -v`.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian as LE;

/// `STO_CUDA_ENTRY`: the symbol is a `.entry` (a kernel).
const STO_CUDA_ENTRY: u8 = 0x10;
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_KPARAM_INFO: u8 = 0x17;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;
/// The register cap the kernel was built under (`.maxnreg`, `-maxrregcount`).
const EIATTR_MAXREG_COUNT: u8 = 0x1b;
/// The kernel's parameter bank: [its `.nv.constant0` section's symbol index, offset and size].
const EIATTR_PARAM_CBANK: u8 = 0x0a;
/// The external functions it calls (`vprintf`, ...): their symbol indices.
const EIATTR_EXTERNS: u8 = 0x0f;
/// Record formats: no value, byte, half-word, sized payload.
const EIFMT_NVAL: u8 = 0x01;
const EIFMT_SVAL: u8 = 0x04;

#[derive(Debug, thiserror::Error)]
pub enum CubinError {
    #[error("not an NVIDIA cubin (ELF for EM_CUDA)")]
    NotCubin,
    #[error("malformed cubin: {0}")]
    Elf(#[from] object::Error),
}

/// One kernel as the cubin records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CubinKernel {
    pub name: String,
    pub registers: u32,
    pub stack_frame_bytes: u32,
    /// `__launch_bounds__` / `.maxntid`, as threads per block (x*y*z).
    pub max_threads: Option<u32>,
    /// SASS bytes.
    pub code_bytes: u64,
    /// Parameters as (offset, size) in the parameter buffer, in order.
    pub params: Vec<(u64, u64)>,
}

/// Is `bytes` an NVIDIA cubin?
pub(crate) fn is_cubin(bytes: &[u8]) -> bool {
    elf::FileHeader64::<LE>::parse(bytes).ok().and_then(|h| h.endian().ok().map(|e| h.e_machine(e) == elf::EM_CUDA)).unwrap_or(false)
}

/// The kernels of a cubin, in symbol-table order.
pub fn read(bytes: &[u8]) -> Result<Vec<CubinKernel>, CubinError> {
    if !is_cubin(bytes) {
        return Err(CubinError::NotCubin);
    }
    let header = elf::FileHeader64::<LE>::parse(bytes)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, bytes)?;
    let symbols = sections.symbols(endian, bytes, elf::SHT_SYMTAB)?;

    // Symbol index -> (registers, frame), from the module-wide .nv.info.
    let mut regs = std::collections::HashMap::new();
    let mut frames = std::collections::HashMap::new();
    let mut per_kernel: Vec<(String, Vec<Record>)> = Vec::new();
    for section in sections.iter() {
        let name = String::from_utf8_lossy(sections.section_name(endian, section)?).into_owned();
        let Some(owner) = name.strip_prefix(".nv.info") else { continue };
        let data = section.data(endian, bytes)?;
        let records = records(data);
        if owner.is_empty() {
            for r in &records {
                let (Some(sym), Some(value)) = (r.word(0), r.word(1)) else { continue };
                match r.attr {
                    EIATTR_REGCOUNT => {
                        regs.insert(sym, value);
                    }
                    EIATTR_FRAME_SIZE => {
                        frames.insert(sym, value);
                    }
                    _ => {}
                }
            }
        } else if let Some(kernel) = owner.strip_prefix('.') {
            per_kernel.push((kernel.to_string(), records));
        }
    }

    let mut out = Vec::new();
    for (index, sym) in symbols.iter().enumerate() {
        if sym.st_type() != elf::STT_FUNC || sym.st_other() & STO_CUDA_ENTRY == 0 {
            continue;
        }
        let name = String::from_utf8_lossy(sym.name(endian, symbols.strings())?).into_owned();
        let index = index as u32;
        let max_threads = per_kernel
            .iter()
            .find(|(k, _)| *k == name)
            .and_then(|(_, rs)| rs.iter().find(|r| r.attr == EIATTR_MAX_THREADS))
            .and_then(|r| Some(r.word(0)? * r.word(1).unwrap_or(1).max(1) * r.word(2).unwrap_or(1).max(1)));
        let params = per_kernel.iter().find(|(k, _)| *k == name).map(|(_, rs)| kernel_params(rs)).unwrap_or_default();
        out.push(CubinKernel {
            params,
            registers: regs.get(&index).copied().unwrap_or(0),
            stack_frame_bytes: frames.get(&index).copied().unwrap_or(0),
            max_threads,
            code_bytes: sym.st_size(endian),
            name,
        });
    }
    Ok(out)
}

/// A kernel's own code in a cubin, what runs of it: its machine code
/// (`.text.SYMBOL`), its attributes (`.nv.info.SYMBOL`) but the register
/// cap it was built under (`EIATTR_MAXREG_COUNT`: `.maxnreg 255` and
/// `.maxnreg 168` that give the same code differ only there, as do the
/// kernels of a file built with `-maxrregcount=64` whose code the cap does
/// not change), the symbols they name by name rather than by index
/// (`EIATTR_PARAM_CBANK`, `EIATTR_EXTERNS`: a cubin of the kernel alone,
/// `ptxas -e`, numbers its symbols otherwise), its registers and stack
/// frame (the module's `.nv.info`), and the code of the functions that are
/// no kernel (what it may call); not the other kernels, nor ptxas's
/// options (`.note.nv.tkinfo`). None: not a cubin, or it has no such kernel.
pub fn kernel_code(bytes: &[u8], symbol: &str) -> Option<Vec<u8>> {
    let kernels = read(bytes).ok()?;
    let own = kernels.iter().find(|k| k.name == symbol)?;
    let mut out = format!("{} registers, {} bytes of frame\n", own.registers, own.stack_frame_bytes).into_bytes();
    let info = format!(".nv.info.{symbol}");
    let sections = sections_named(bytes, |name| {
        name == info || name.strip_prefix(".text.").is_some_and(|f| f == symbol || !kernels.iter().any(|k| k.name == f))
    })?;
    for (name, data) in sections {
        let data = if name == info { without_attribute(&data, EIATTR_MAXREG_COUNT) } else { data };
        out.extend(format!("{name} {}\n", data.len()).bytes());
        out.extend(data);
    }
    Some(out)
}

/// A kernel's machine code (its `.text.SYMBOL` section); None: not a
/// cubin, or no such kernel.
pub(crate) fn kernel_text(bytes: &[u8], symbol: &str) -> Option<Vec<u8>> {
    let name = format!(".text.{symbol}");
    sections_named(bytes, |n| n == name)?.pop().map(|(_, data)| data)
}

/// A kernel's own sections (`.text.SYMBOL`, `.nv.info.SYMBOL`,
/// `.nv.constant0.SYMBOL`, ...) by name, its `.nv.info` naming symbols by
/// name as [`kernel_code`] does.
pub(crate) fn own_sections(bytes: &[u8], symbol: &str) -> Option<std::collections::BTreeMap<String, Vec<u8>>> {
    let suffix = format!(".{symbol}");
    Some(sections_named(bytes, |name| name.ends_with(&suffix))?.into_iter().collect())
}

/// The sections whose names `wanted` takes, in the file's order, each
/// `.nv.info.*` with the symbols its records name by index written by
/// name ([`by_name`]); None: not a cubin.
fn sections_named(bytes: &[u8], wanted: impl Fn(&str) -> bool) -> Option<Vec<(String, Vec<u8>)>> {
    let header = elf::FileHeader64::<LE>::parse(bytes).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, bytes).ok()?;
    let symbols = sections.symbols(endian, bytes, elf::SHT_SYMTAB).ok()?;
    let symbol_name = |index: u32| -> Option<Vec<u8>> {
        let sym = symbols.symbol(object::SymbolIndex(index as usize)).ok()?;
        Some(sym.name(endian, symbols.strings()).ok()?.to_vec())
    };
    let mut out = Vec::new();
    for section in sections.iter() {
        let name = String::from_utf8_lossy(sections.section_name(endian, section).ok()?).into_owned();
        if !wanted(&name) {
            continue;
        }
        let data = section.data(endian, bytes).ok()?;
        let data = if name.starts_with(".nv.info.") { by_name(data, &symbol_name)? } else { data.to_vec() };
        out.push((name, data));
    }
    Some(out)
}

/// An `.nv.info` section's records with the symbol indices of
/// `EIATTR_PARAM_CBANK` (its first word) and `EIATTR_EXTERNS` (every word)
/// written as the symbols' names; None where one names no symbol.
fn by_name(data: &[u8], name: &dyn Fn(u32) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len());
    let mut p = 0;
    while p + 2 <= data.len() {
        let (format, attr) = (data[p], data[p + 1]);
        let len = match format {
            EIFMT_NVAL => 2,
            EIFMT_SVAL => 4 + data.get(p + 2..p + 4).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize),
            _ => 4,
        };
        let record = &data[p..(p + len).min(data.len())];
        let named = match (format, attr) {
            (EIFMT_SVAL, EIATTR_PARAM_CBANK) => 1,
            (EIFMT_SVAL, EIATTR_EXTERNS) => (record.len() - 4) / 4,
            _ => 0,
        };
        out.extend_from_slice(&record[..4.min(record.len())]);
        for i in 0..named {
            let at = 4 + 4 * i;
            out.extend(name(u32::from_le_bytes(record.get(at..at + 4)?.try_into().ok()?))?);
            out.push(0);
        }
        out.extend_from_slice(record.get(4 + 4 * named..).unwrap_or_default());
        p += len;
    }
    out.extend_from_slice(&data[p.min(data.len())..]);
    Some(out)
}

/// (offset, size) of each parameter, by ordinal, from a kernel's
/// `EIATTR_KPARAM_INFO` records: [index, ordinal | offset << 16, flags].
fn kernel_params(records: &[Record<'_>]) -> Vec<(u64, u64)> {
    let mut params: Vec<(u32, u64, u64)> = records
        .iter()
        .filter(|r| r.attr == EIATTR_KPARAM_INFO)
        .filter_map(|r| {
            let (ordinal_offset, flags) = (r.word(1)?, r.word(2)?);
            Some((ordinal_offset & 0xffff, (ordinal_offset >> 16) as u64, ((flags >> 18) & 0x3fff) as u64))
        })
        .collect();
    params.sort_unstable();
    params.into_iter().map(|(_, offset, size)| (offset, size)).collect()
}

/// One `EIATTR` record.
struct Record<'a> {
    attr: u8,
    payload: &'a [u8],
}

impl Record<'_> {
    fn word(&self, i: usize) -> Option<u32> {
        let b = self.payload.get(4 * i..4 * i + 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }
}

/// The records of an `.nv.info` section as they are, less those of `attr`.
fn without_attribute(data: &[u8], attr: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut p = 0;
    while p + 2 <= data.len() {
        let len = match data[p] {
            EIFMT_NVAL => 2,
            EIFMT_SVAL => 4 + data.get(p + 2..p + 4).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize),
            _ => 4,
        };
        let record = &data[p..(p + len).min(data.len())];
        if data[p + 1] != attr {
            out.extend_from_slice(record);
        }
        p += len;
    }
    out.extend_from_slice(&data[p.min(data.len())..]);
    out
}

fn records(data: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    let mut p = 0;
    while p + 2 <= data.len() {
        let (format, attr) = (data[p], data[p + 1]);
        match format {
            EIFMT_NVAL => p += 2,
            EIFMT_SVAL => {
                let Some(len) = data.get(p + 2..p + 4).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize) else { break };
                let Some(payload) = data.get(p + 4..p + 4 + len) else { break };
                out.push(Record { attr, payload });
                p += 4 + len;
            }
            // EIFMT_BVAL and EIFMT_HVAL: the value sits in the next two bytes.
            _ => {
                let Some(payload) = data.get(p + 2..p + 4) else { break };
                out.push(Record { attr, payload });
                p += 4;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_each_format() {
        // REGCOUNT [sym 3, 40 regs]; an HVAL; a NVAL; FRAME_SIZE [3, 16].
        let mut d = vec![0x04, EIATTR_REGCOUNT, 8, 0, 3, 0, 0, 0, 40, 0, 0, 0];
        d.extend([0x03, 0x19, 8, 0]);
        d.extend([0x01, 0x20]);
        d.extend([0x04, EIATTR_FRAME_SIZE, 8, 0, 3, 0, 0, 0, 16, 0, 0, 0]);
        let rs = records(&d);
        assert_eq!(rs.len(), 3);
        assert_eq!((rs[0].attr, rs[0].word(0), rs[0].word(1)), (EIATTR_REGCOUNT, Some(3), Some(40)));
        assert_eq!((rs[2].attr, rs[2].word(1)), (EIATTR_FRAME_SIZE, Some(16)));
    }

    #[test]
    fn kernel_parameters_come_in_ordinal_order() {
        // The Laplacian's (double*, const double*, int, int, double) as ptxas 12.9 wrote them: last first.
        let mut d = Vec::new();
        for (ordinal, offset, flags) in
            [(4u32, 24u32, 0x21f000u32), (3, 20, 0x11f000), (2, 16, 0x11f000), (1, 8, 0x21f500), (0, 0, 0x21f500)]
        {
            d.extend([0x04, EIATTR_KPARAM_INFO, 12, 0]);
            d.extend(0u32.to_le_bytes());
            d.extend((ordinal | offset << 16).to_le_bytes());
            d.extend(flags.to_le_bytes());
        }
        assert_eq!(kernel_params(&records(&d)), [(0, 8), (8, 8), (16, 4), (20, 4), (24, 8)]);
    }

    #[test]
    fn the_register_cap_a_kernel_was_built_under_is_not_its_code() {
        // MAXREG_COUNT 255 (an HVAL), a NVAL flag, REGCOUNT [3, 40].
        let mut d = vec![0x03, EIATTR_MAXREG_COUNT, 0xff, 0x00, 0x01, 0x20];
        d.extend([0x04, EIATTR_REGCOUNT, 8, 0, 3, 0, 0, 0, 40, 0, 0, 0]);
        let mut capped = d.clone();
        capped[2] = 0x40;
        assert_eq!(without_attribute(&d, EIATTR_MAXREG_COUNT), without_attribute(&capped, EIATTR_MAXREG_COUNT));
        assert_eq!(without_attribute(&d, EIATTR_MAXREG_COUNT), d[4..]);
        assert_eq!(without_attribute(&d, 0x55), d, "nothing else goes");
    }

    #[test]
    fn truncated_records_stop_the_walk() {
        assert!(records(&[0x04, EIATTR_REGCOUNT, 8, 0, 1]).is_empty());
    }

    #[test]
    fn other_files_are_not_cubins() {
        assert!(!is_cubin(b"not an elf at all"));
        assert!(matches!(read(b"\x7fELF garbage"), Err(CubinError::NotCubin)));
    }
}
