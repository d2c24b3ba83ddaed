//! Which code a kernel is: its machine code (`.text.<symbol>`) and its
//! attributes (`.nv.info.<symbol>`: registers, frame, barriers) in a
//! cubin. The program's loaded module and regtune's plain build run the
//! same kernel exactly when these bytes are equal; the rest of a cubin
//! (ptxas's options in `.note.nv.tkinfo`, other kernels, debug sections)
//! does not change what the kernel does or how fast.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
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
}
