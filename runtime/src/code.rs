//! Which code a kernel is: its machine code (`.text.<symbol>`) and its
//! attributes (`.nv.info.<symbol>`: registers, frame, barriers) in a
//! cubin. The program's loaded module and regtune's plain build run the
//! same kernel exactly when these bytes are equal; the rest of a cubin
//! (ptxas's options in `.note.nv.tkinfo`, other kernels, debug sections)
//! does not change what the kernel does or how fast.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian as LE;

/// The kernel's code and attributes in an ELF cubin; None when the bytes
/// are not one, or it has no such kernel.
pub fn kernel_code(cubin: &[u8], symbol: &str) -> Option<Vec<u8>> {
    let header = elf::FileHeader64::<LE>::parse(cubin).ok()?;
    let endian = header.endian().ok()?;
    if header.e_machine(endian) != elf::EM_CUDA {
        return None;
    }
    let sections = header.sections(endian, cubin).ok()?;
    let wanted = [format!(".text.{symbol}"), format!(".nv.info.{symbol}")];
    let mut out = Vec::new();
    for want in &wanted {
        let section = sections.iter().find(|s| sections.section_name(endian, s).ok() == Some(want.as_bytes()))?;
        out.extend_from_slice(section.data(endian, cubin).ok()?);
    }
    Some(out)
}

/// Whether a module the program loaded holds `symbol` as other code than
/// `plain` (a cubin) does: Some(true) when both hold it and differ; None
/// when either cannot be read or lacks it.
pub fn differs(loaded: &[u8], plain: &[u8], symbol: &str) -> Option<bool> {
    Some(kernel_code(loaded, symbol)? != kernel_code(plain, symbol)?)
}

/// A module-scope variable of a cubin: a `__device__` one (`.nv.global`,
/// `.nv.global.init`) or a `__constant__` one (`.nv.constant3`, the user's
/// constant bank; other `.nv.constantN` banks are the compiler's), by the
/// name `cuModuleGetGlobal` finds it under, and its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    pub name: String,
    pub bytes: u64,
    /// `__constant__`: read-only to kernels, so never compared after a run.
    pub constant: bool,
}

/// The module-scope variables of an ELF cubin (internal ones too: the
/// driver finds those by name as well), each once, in symbol order;
/// empty when the bytes are not a cubin.
pub fn globals(cubin: &[u8]) -> Vec<Global> {
    let mut out: Vec<Global> = Vec::new();
    let Ok(header) = elf::FileHeader64::<LE>::parse(cubin) else { return out };
    let Ok(endian) = header.endian() else { return out };
    if header.e_machine(endian) != elf::EM_CUDA {
        return out;
    }
    let Ok(sections) = header.sections(endian, cubin) else { return out };
    let Ok(symbols) = sections.symbols(endian, cubin, elf::SHT_SYMTAB) else { return out };
    for (index, sym) in symbols.iter().enumerate() {
        if sym.st_type() != elf::STT_OBJECT || sym.st_size(endian) == 0 {
            continue;
        }
        let Ok(Some(section)) = symbols.symbol_section(endian, sym, object::SymbolIndex(index)) else { continue };
        let Ok(section) = sections.section(section) else { continue };
        let Ok(section_name) = sections.section_name(endian, section) else { continue };
        let constant = match section_name {
            b".nv.global" | b".nv.global.init" => false,
            b".nv.constant3" => true,
            _ => continue,
        };
        let Ok(name) = sym.name(endian, symbols.strings()) else { continue };
        let name = String::from_utf8_lossy(name).into_owned();
        if !name.is_empty() && !out.iter().any(|g| g.name == name) {
            out.push(Global { name, bytes: sym.st_size(endian), constant });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry k(.param .u64 k_param_0)\nMAXNTID{\n.reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n\
ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\nmov.u32 %r1, %tid.x;\nst.global.u32 [%rd2], %r1;\nret;\n}\n";

    /// ptxas (ci/bootstrap.sh's CUDA) on PTX with `extra` arguments.
    fn cubin(ptx: &str, extra: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let (src, out) = (dir.path().join("k.ptx"), dir.path().join("k.cubin"));
        std::fs::write(&src, ptx).unwrap();
        let ptxas = std::env::var("REGTUNE_CUDA_PATH").unwrap_or_else(|_| "/opt/regtune-cuda".into()) + "/bin/ptxas";
        let status = Command::new(ptxas).args(["-arch=sm_90"]).args(extra).arg(&src).arg("-o").arg(&out).status().unwrap();
        assert!(status.success());
        std::fs::read(out).unwrap()
    }

    #[test]
    fn a_kernel_is_its_code_and_attributes_not_the_rest_of_the_cubin() {
        let plain = cubin(&PTX.replace("MAXNTID", ""), &[]);
        // ptxas's -v changes the cubin (13 writes its options into it), not the kernel.
        let verbose = cubin(&PTX.replace("MAXNTID", ""), &["-v"]);
        let bounded = cubin(&PTX.replace("MAXNTID", ".maxntid 128, 1, 1\n"), &[]);
        assert!(kernel_code(&plain, "k").is_some_and(|c| !c.is_empty()));
        assert_eq!(differs(&verbose, &plain, "k"), Some(false));
        // The launch bound is an attribute of the kernel: other code.
        assert_eq!(differs(&bounded, &plain, "k"), Some(true));
        assert_eq!(differs(&plain, &plain, "nope"), None);
        assert_eq!(differs(b"not a cubin", &plain, "k"), None);
    }

    /// A kernel reading a `__constant__` table and an internal constant,
    /// writing a `__device__` counter, with an initialized global, an
    /// internal one and shared memory beside them.
    const GLOBALS_PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .global .align 4 .u32 counter;\n\
.visible .global .align 8 .b8 table_init[16] = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16};\n\
.global .align 4 .u32 hidden;\n\
.visible .const .align 4 .b8 ctab[64] = {1,2,3};\n\
.const .align 4 .u32 cint;\n\
.visible .entry k(.param .u64 k_param_0)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<6>;\n.shared .align 4 .u32 sh;\n\
ld.param.u64 %rd1, [k_param_0];\ncvta.to.global.u64 %rd2, %rd1;\nmov.u32 %r1, %tid.x;\n\
ld.const.u32 %r2, [ctab];\nld.const.u32 %r3, [cint];\nld.global.u32 %r4, [hidden];\nld.global.u32 %r5, [table_init];\n\
add.s32 %r1, %r1, %r2;\nadd.s32 %r1, %r1, %r3;\nadd.s32 %r1, %r1, %r4;\nadd.s32 %r1, %r1, %r5;\n\
st.shared.u32 [sh], %r1;\natom.global.add.u32 %r1, [counter], 1;\nst.global.u32 [%rd2], %r1;\nret;\n}\n";

    #[test]
    fn globals_are_the_device_and_constant_variables_of_the_cubin() {
        let image = cubin(GLOBALS_PTX, &[]);
        let mut got: Vec<(String, u64, bool)> = globals(&image).into_iter().map(|g| (g.name, g.bytes, g.constant)).collect();
        got.sort();
        let want = [("cint", 4, true), ("counter", 4, false), ("ctab", 64, true), ("hidden", 4, false), ("table_init", 16, false)];
        assert_eq!(got, want.map(|(n, b, c)| (n.to_string(), b, c)));
        // No kernel, shared variable or section symbol among them; nothing from what is no cubin.
        assert!(globals(&cubin(&PTX.replace("MAXNTID", ""), &[])).is_empty());
        assert!(globals(b"not a cubin").is_empty());
    }
}
