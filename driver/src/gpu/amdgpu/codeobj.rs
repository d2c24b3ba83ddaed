//! Read kernel resource usage from AMDGPU code objects.
//!
//! The numbers come from the code-object metadata (the msgpack
//! `NT_AMDGPU_METADATA` note the backend writes for the loader), and code size
//! from the ELF symbol table: structured data, not assembly comments. Host
//! objects and offload bundles are opened to the code objects inside them.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian as LE;
use rmpv::Value;

const NT_AMDGPU_METADATA: u32 = 32;
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

#[derive(Debug, thiserror::Error)]
pub enum CodeObjectError {
    #[error("not an ELF file or offload bundle")]
    NotObject,
    #[error("malformed ELF: {0}")]
    Elf(#[from] object::Error),
    #[error("malformed offload bundle")]
    Bundle,
    #[error("compressed offload bundles are not supported; rebuild without --offload-compress")]
    Compressed,
    #[error("malformed AMDGPU metadata: {0}")]
    Metadata(String),
    /// A `-fgpu-rdc` object: its device part is bitcode for the link step.
    #[error("its device code is relocatable (-fgpu-rdc) bitcode, which only the device link turns into a code object: report the linked program, or the sources with `-- -fgpu-rdc`")]
    Relocatable,
}

/// One kernel's entry in the code-object metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KernelMeta {
    /// Mangled function name.
    pub name: String,
    /// Kernel descriptor symbol (`name.kd`).
    pub symbol: String,
    pub vgpr: u32,
    pub agpr: u32,
    pub sgpr: u32,
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    /// Private segment (scratch) bytes per work-item.
    pub scratch_bytes: u32,
    pub dynamic_stack: bool,
    /// Group segment (LDS) bytes per workgroup.
    pub lds_bytes: u32,
    pub max_flat_workgroup_size: u32,
    pub wavefront_size: u32,
    /// Size of the kernel's machine code, from the symbol table.
    pub code_bytes: u64,
    /// The explicit kernel arguments as (offset, size) in the kernarg
    /// segment; the runtime's hidden ones are left out.
    pub args: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CodeObject {
    /// `amdhsa.target`, e.g. "amdgcn-amd-amdhsa--gfx90a:xnack-".
    pub target: String,
    pub kernels: Vec<KernelMeta>,
}

impl CodeObject {
    /// The processor part of the target id ("gfx90a").
    pub(crate) fn processor(&self) -> &str {
        // "amdgcn-amd-amdhsa--gfx90a:xnack-": the processor follows "--".
        let id = self.target.rsplit("--").next().unwrap_or_default();
        id.split(':').next().unwrap_or_default()
    }
}

/// Does `path` hold a built object rather than source? (By its first bytes.)
pub(crate) fn is_object(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 24];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let head = &head[..n];
    head.starts_with(&elf::ELFMAG) || head.starts_with(BUNDLE_MAGIC) || head.starts_with(b"CCOB")
}

/// All AMDGPU code objects in `bytes`: a code object itself, an offload
/// bundle, or a host object whose `.hip_fatbin` holds a bundle.
pub(crate) fn read(bytes: &[u8]) -> Result<Vec<CodeObject>, CodeObjectError> {
    if bytes.starts_with(BUNDLE_MAGIC) {
        return bundle_entries(bytes)?.into_iter().filter(|(id, _)| id.contains("amdgcn")).map(|(_, obj)| read_elf(obj)).collect();
    }
    if bytes.starts_with(b"CCOB") {
        return Err(CodeObjectError::Compressed);
    }
    if !bytes.starts_with(&elf::ELFMAG) {
        return Err(CodeObjectError::NotObject);
    }
    let header = elf::FileHeader64::<LE>::parse(bytes)?;
    let endian = header.endian()?;
    if header.e_machine(endian) == elf::EM_AMDGPU {
        return Ok(vec![read_elf(bytes)?]);
    }
    // A host object: the device code is in the fat binary section.
    let sections = header.sections(endian, bytes)?;
    let mut out = Vec::new();
    for section in sections.iter() {
        let name = sections.section_name(endian, section)?;
        if name.starts_with(b"__CLANG_OFFLOAD_BUNDLE__hip-amdgcn") {
            return Err(CodeObjectError::Relocatable);
        }
        if name == b".hip_fatbin" {
            let data = section.data(endian, bytes).map_err(|_| CodeObjectError::Bundle)?;
            // The section may be padded before the bundle starts.
            if let Some(pos) = find(data, BUNDLE_MAGIC).or_else(|| find(data, b"CCOB")) {
                out.extend(read(&data[pos..])?);
            }
        }
    }
    Ok(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Entries of an uncompressed clang offload bundle: (target id, contents).
fn bundle_entries(bytes: &[u8]) -> Result<Vec<(String, &[u8])>, CodeObjectError> {
    let u64_at = |off: usize| -> Result<u64, CodeObjectError> {
        let b = bytes.get(off..off + 8).ok_or(CodeObjectError::Bundle)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| CodeObjectError::Bundle)?))
    };
    let count = u64_at(BUNDLE_MAGIC.len())?;
    let mut pos = BUNDLE_MAGIC.len() + 8;
    let mut out = Vec::new();
    for _ in 0..count {
        let (offset, size, id_len) = (u64_at(pos)? as usize, u64_at(pos + 8)? as usize, u64_at(pos + 16)? as usize);
        pos += 24;
        let id = bytes.get(pos..pos + id_len).ok_or(CodeObjectError::Bundle)?;
        pos += id_len;
        let contents = bytes.get(offset..offset + size).ok_or(CodeObjectError::Bundle)?;
        out.push((String::from_utf8_lossy(id).into_owned(), contents));
    }
    Ok(out)
}

fn read_elf(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
    let header = elf::FileHeader64::<LE>::parse(bytes)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, bytes)?;
    let mut object: Option<CodeObject> = None;
    for section in sections.iter() {
        let Some(mut notes) = section.notes(endian, bytes)? else { continue };
        while let Some(note) = notes.next()? {
            if note.name() == b"AMDGPU" && note.n_type(endian) == NT_AMDGPU_METADATA {
                let found = parse_metadata(note.desc())?;
                // A device link of several LTO partitions (-fgpu-rdc) keeps
                // one note per partition, each with its kernels.
                match object.as_mut() {
                    Some(o) => o.kernels.extend(found.kernels),
                    None => object = Some(found),
                }
            }
        }
    }
    let mut object = object.ok_or_else(|| CodeObjectError::Metadata("no NT_AMDGPU_METADATA note".into()))?;

    // Code size: the kernel function symbol's size.
    let symbols = sections.symbols(endian, bytes, elf::SHT_SYMTAB)?;
    for sym in symbols.iter() {
        if sym.st_type() != elf::STT_FUNC {
            continue;
        }
        let name = sym.name(endian, symbols.strings())?;
        if let Some(k) = object.kernels.iter_mut().find(|k| k.name.as_bytes() == name) {
            k.code_bytes = sym.st_size(endian);
        }
    }
    Ok(object)
}

/// Decode the msgpack metadata note (code object v3 and later).
pub(crate) fn parse_metadata(desc: &[u8]) -> Result<CodeObject, CodeObjectError> {
    let bad = |what: &str| CodeObjectError::Metadata(what.to_string());
    let root = rmpv::decode::read_value(&mut &desc[..]).map_err(|e| bad(&e.to_string()))?;
    let target = field(&root, "amdhsa.target").and_then(Value::as_str).unwrap_or_default().to_string();
    let kernels = field(&root, "amdhsa.kernels").and_then(Value::as_array).ok_or_else(|| bad("no amdhsa.kernels"))?;
    let kernels = kernels
        .iter()
        .map(|k| {
            let num = |key: &str| field(k, key).and_then(Value::as_u64).unwrap_or(0) as u32;
            let text = |key: &str| field(k, key).and_then(Value::as_str).map(str::to_string);
            Ok(KernelMeta {
                name: text(".name").ok_or_else(|| bad("kernel without .name"))?,
                symbol: text(".symbol").unwrap_or_default(),
                vgpr: num(".vgpr_count"),
                agpr: num(".agpr_count"),
                sgpr: num(".sgpr_count"),
                vgpr_spills: num(".vgpr_spill_count"),
                sgpr_spills: num(".sgpr_spill_count"),
                scratch_bytes: num(".private_segment_fixed_size"),
                dynamic_stack: field(k, ".uses_dynamic_stack").and_then(Value::as_bool).unwrap_or(false),
                lds_bytes: num(".group_segment_fixed_size"),
                max_flat_workgroup_size: num(".max_flat_workgroup_size"),
                wavefront_size: num(".wavefront_size"),
                code_bytes: 0,
                args: field(k, ".args").and_then(Value::as_array).map(|a| explicit_args(a)).unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, CodeObjectError>>()?;
    Ok(CodeObject { target, kernels })
}

fn explicit_args(args: &[Value]) -> Vec<(u64, u64)> {
    args.iter()
        .filter(|a| !field(a, ".value_kind").and_then(Value::as_str).unwrap_or_default().starts_with("hidden_"))
        .map(|a| {
            let num = |key| field(a, key).and_then(Value::as_u64).unwrap_or(0);
            (num(".offset"), num(".size"))
        })
        .collect()
}

fn field<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    map.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: impl Into<Value>) -> (Value, Value) {
        (Value::from(k), v.into())
    }

    fn encode(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    fn sample() -> Value {
        let kernel = Value::Map(vec![
            kv(".name", "_Z4axpyfPKfPfi"),
            kv(".symbol", "_Z4axpyfPKfPfi.kd"),
            kv(".vgpr_count", 26),
            kv(".agpr_count", 4),
            kv(".sgpr_count", 17),
            kv(".vgpr_spill_count", 3),
            kv(".sgpr_spill_count", 1),
            kv(".private_segment_fixed_size", 48),
            kv(".group_segment_fixed_size", 4096),
            kv(".max_flat_workgroup_size", 256),
            kv(".wavefront_size", 64),
            kv(".uses_dynamic_stack", false),
            kv(
                ".args",
                Value::Array(vec![
                    Value::Map(vec![kv(".offset", 0), kv(".size", 4), kv(".value_kind", "by_value")]),
                    Value::Map(vec![kv(".offset", 8), kv(".size", 8), kv(".value_kind", "global_buffer")]),
                    Value::Map(vec![kv(".offset", 16), kv(".size", 8), kv(".value_kind", "global_buffer")]),
                    Value::Map(vec![kv(".offset", 24), kv(".size", 4), kv(".value_kind", "by_value")]),
                    Value::Map(vec![kv(".offset", 32), kv(".size", 4), kv(".value_kind", "hidden_block_count_x")]),
                ]),
            ),
        ]);
        Value::Map(vec![
            kv("amdhsa.kernels", Value::Array(vec![kernel])),
            kv("amdhsa.target", "amdgcn-amd-amdhsa--gfx90a:xnack-"),
            kv("amdhsa.version", Value::Array(vec![1.into(), 2.into()])),
        ])
    }

    #[test]
    fn metadata_fields_map_to_usage() {
        let obj = parse_metadata(&encode(&sample())).unwrap();
        assert_eq!(obj.processor(), "gfx90a");
        assert_eq!(
            obj.kernels,
            [KernelMeta {
                name: "_Z4axpyfPKfPfi".into(),
                symbol: "_Z4axpyfPKfPfi.kd".into(),
                vgpr: 26,
                agpr: 4,
                sgpr: 17,
                vgpr_spills: 3,
                sgpr_spills: 1,
                scratch_bytes: 48,
                dynamic_stack: false,
                lds_bytes: 4096,
                max_flat_workgroup_size: 256,
                wavefront_size: 64,
                code_bytes: 0,
                args: vec![(0, 4), (8, 8), (16, 8), (24, 4)],
            }]
        );
    }

    #[test]
    fn metadata_without_kernels_is_an_error() {
        let v = Value::Map(vec![kv("amdhsa.target", "amdgcn-amd-amdhsa--gfx90a")]);
        let e = parse_metadata(&encode(&v)).unwrap_err();
        assert_eq!(e.to_string(), "malformed AMDGPU metadata: no amdhsa.kernels");
    }

    #[test]
    fn garbage_is_not_an_object() {
        assert!(matches!(read(b"hello world, not an object"), Err(CodeObjectError::NotObject)));
    }

    #[test]
    fn truncated_bundles_are_rejected() {
        let mut b = BUNDLE_MAGIC.to_vec();
        b.extend(5u64.to_le_bytes());
        assert!(matches!(read(&b), Err(CodeObjectError::Bundle)));
    }
}
