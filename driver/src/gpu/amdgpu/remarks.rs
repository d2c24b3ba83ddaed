//! Where each kernel is defined, from clang's resource-usage remarks
//! (`-Rpass-analysis=kernel-resource-usage`: AMDGPU's code generator
//! writes them; NVPTX has none).

use crate::gpu::compile::Location;

/// Locations from "Function Name:" remarks, in either of clang's forms:
/// `k.hip:2:1: remark: Function Name: S` (from source) or
/// `remark: k.hip:2:0: Function Name: S` (from IR).
pub(crate) fn locations(stderr: &str) -> Vec<Location> {
    stderr
        .lines()
        .filter_map(|l| {
            let l = l.strip_suffix(" [-Rpass-analysis=kernel-resource-usage]")?;
            let (head, symbol) = l.split_once("Function Name: ")?;
            let head = head.replace("remark:", "");
            let mut parts = head.trim().trim_end_matches(':').rsplitn(3, ':');
            let (_col, line, file) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Location { symbol: symbol.trim().to_string(), file: file.trim().to_string(), line: line.parse().ok()? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_come_from_function_name_remarks() {
        let remarks = "k.hip:2:1: remark: Function Name: _Z4axpyfPKfPfi [-Rpass-analysis=kernel-resource-usage]\n    2 | __global__ void axpy(float a) {\n      | ^\nk.hip:2:1: remark:     VGPRs: 25 [-Rpass-analysis=kernel-resource-usage]\n";
        assert_eq!(locations(remarks), [Location { symbol: "_Z4axpyfPKfPfi".into(), file: "k.hip".into(), line: 2 }]);
    }

    #[test]
    fn locations_come_from_remarks_on_ir_too() {
        let from_ir = "remark: ../k.hip:47:0: Function Name: _Z1kv [-Rpass-analysis=kernel-resource-usage]\n";
        assert_eq!(locations(from_ir), [Location { symbol: "_Z1kv".into(), file: "../k.hip".into(), line: 47 }]);
    }
}
