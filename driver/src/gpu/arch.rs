//! An `--offload-arch` value: an AMDGPU processor plus optional target
//! features ("gfx90a:xnack-"), or an NVIDIA compute capability ("sm_90"),
//! validated against the targets we model.

use std::fmt;

use super::amdgpu::occupancy;
use super::nvptx::nvidia;

#[derive(Debug, thiserror::Error)]
#[error("unknown target `{0}`: regtune knows {known}", known = known_names())]
pub struct UnknownTarget(pub String);

/// The GPU family an arch belongs to: which backend, device libraries and
/// occupancy model apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Vendor {
    /// AMDGPU through HIP: code objects, `-Rpass-analysis` remarks, waves per SIMD.
    Amdgpu,
    /// NVPTX through CUDA: PTX, ptxas, cubins, warps per SM.
    Nvptx,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Model {
    Amdgpu(&'static occupancy::Gfx),
    Nvptx(&'static nvidia::Sm),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Arch {
    /// As the user wrote it, features included: what clang gets.
    spec: String,
    model: Model,
}

/// What `--target nvptx` alone compiles for.
pub const DEFAULT_NVPTX_ARCH: &str = "sm_90";
/// What regtune compiles for when no target is named.
pub const DEFAULT_AMDGPU_ARCH: &str = "gfx90a";

impl Arch {
    pub fn parse(spec: &str) -> Result<Arch, UnknownTarget> {
        let spec = spec.trim();
        if let Some(gfx) = occupancy::gfx(spec) {
            return Ok(Arch { spec: spec.to_string(), model: Model::Amdgpu(gfx) });
        }
        let sm = nvidia::sm(spec).ok_or_else(|| UnknownTarget(spec.to_string()))?;
        Ok(Arch { spec: spec.to_ascii_lowercase(), model: Model::Nvptx(sm) })
    }

    /// Parse a comma-separated list, as `--offload-arch gfx90a,gfx1100`.
    pub fn parse_list(list: &str) -> Result<Vec<Arch>, UnknownTarget> {
        list.split(',').filter(|s| !s.trim().is_empty()).map(Arch::parse).collect()
    }

    /// The offload-arch string, features included.
    pub(crate) fn name(&self) -> &str {
        &self.spec
    }

    /// The processor alone ("gfx90a", "sm_90"): what the IR's target-cpu says.
    pub(crate) fn processor(&self) -> &str {
        self.spec.split(':').next().unwrap_or(&self.spec)
    }

    pub(crate) fn vendor(&self) -> Vendor {
        match self.model {
            Model::Amdgpu(_) => Vendor::Amdgpu,
            Model::Nvptx(_) => Vendor::Nvptx,
        }
    }

    pub fn is_nvptx(&self) -> bool {
        self.vendor() == Vendor::Nvptx
    }

    /// The AMDGPU occupancy model. Only AMDGPU arches have one: callers
    /// check [`Arch::vendor`] first (an NVPTX arch here is a bug in regtune).
    pub(crate) fn gfx(&self) -> &'static occupancy::Gfx {
        match self.model {
            Model::Amdgpu(t) => t,
            Model::Nvptx(_) => panic!("regtune bug: AMDGPU processor model asked for NVPTX arch {}", self.spec),
        }
    }

    /// The NVIDIA occupancy calculator's device properties, if this is an NVPTX arch.
    pub(crate) fn nvidia(&self) -> Option<&'static nvidia::Sm> {
        match self.model {
            Model::Nvptx(s) => Some(s),
            Model::Amdgpu(_) => None,
        }
    }

    /// Threads per wave (AMDGPU) or warp (NVIDIA: 32).
    pub(crate) fn wave_size(&self) -> u32 {
        match self.model {
            Model::Amdgpu(t) => t.wave_size,
            Model::Nvptx(_) => nvidia::WARP_SIZE,
        }
    }

    /// What `occupancy` counts on this arch, for messages.
    pub(crate) fn occupancy_unit(&self) -> &'static str {
        super::of(self).occupancy_unit()
    }

    /// "90a" for gfx90a: how device-library file names spell the target.
    pub(crate) fn isa_suffix(&self) -> &str {
        self.processor().trim_start_matches("gfx")
    }

    /// The device libraries' `__oclc_ISA_version`: major*1000 + minor*100 +
    /// stepping, where the last two digits of the name are hex minor/stepping.
    pub(crate) fn isa_version(&self) -> u32 {
        let s = self.isa_suffix();
        let (major, rest) = s.split_at(s.len().saturating_sub(2));
        let digit = |i: usize| rest[i..i + 1].chars().next().and_then(|c| c.to_digit(16)).unwrap_or(0);
        major.parse::<u32>().unwrap_or(0) * 1000 + digit(0) * 100 + digit(1)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

fn known_names() -> String {
    occupancy::PROCESSORS.iter().map(|t| t.name).chain(nvidia::SMS.iter().map(|s| s.name)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_versions_match_the_device_library_numbering() {
        // Values as in the device libraries' oclc_isa_version_*.bc.
        assert_eq!(Arch::parse("gfx90a").unwrap().isa_version(), 9010);
        assert_eq!(Arch::parse("gfx942").unwrap().isa_version(), 9402);
        assert_eq!(Arch::parse("gfx1100").unwrap().isa_version(), 11000);
        assert_eq!(Arch::parse("gfx90a:xnack-").unwrap().isa_suffix(), "90a");
    }

    #[test]
    fn unknown_targets_are_named_in_the_error() {
        let e = Arch::parse("gfx9999").unwrap_err().to_string();
        assert!(e.starts_with("unknown target `gfx9999`: regtune knows gfx"), "{e}");
        assert!(e.ends_with("sm_89, sm_90, sm_100, sm_103, sm_120"), "{e}");
        // ptxas 12.9 takes sm_101 and sm_121, but regtune has no model for them.
        let e = Arch::parse("sm_121").unwrap_err().to_string();
        assert!(e.starts_with("unknown target `sm_121`"), "{e}");
    }

    #[test]
    fn lists_split_on_commas() {
        let v = Arch::parse_list("gfx90a,gfx1100").unwrap();
        assert_eq!(v.iter().map(|a| a.name()).collect::<Vec<_>>(), ["gfx90a", "gfx1100"]);
    }

    #[test]
    fn nvidia_compute_capabilities_are_nvptx_arches() {
        let a = Arch::parse("sm_90").unwrap();
        assert_eq!((a.vendor(), a.processor(), a.wave_size()), (Vendor::Nvptx, "sm_90", 32));
        assert_eq!(a.nvidia().unwrap().max_warps_per_sm, 64);
        assert_eq!(Arch::parse("sm_90a").unwrap().nvidia().unwrap().name, "sm_90");
        assert_eq!(Arch::parse("gfx90a").unwrap().vendor(), Vendor::Amdgpu);
        assert_eq!(Arch::parse("gfx90a").unwrap().occupancy_unit(), "waves/SIMD");
        assert_eq!(a.occupancy_unit(), "warps/SM");
    }

    /// Blackwell: the arch-specific `a` suffix keeps its spelling (what clang
    /// gets) and resolves to the base capability's model.
    #[test]
    fn blackwell_compute_capabilities_parse_with_and_without_the_suffix() {
        for (spec, model, warps) in [
            ("sm_100", "sm_100", 64),
            ("sm_100a", "sm_100", 64),
            ("sm_103a", "sm_103", 64),
            ("sm_120", "sm_120", 48),
            ("SM_120a", "sm_120", 48),
        ] {
            let a = Arch::parse(spec).unwrap();
            let sm = a.nvidia().unwrap();
            assert_eq!((a.vendor(), sm.name, sm.max_warps_per_sm), (Vendor::Nvptx, model, warps), "{spec}");
            assert_eq!(a.processor(), spec.to_ascii_lowercase(), "{spec}");
        }
        let v = Arch::parse_list("sm_90,sm_100a,sm_120").unwrap();
        assert_eq!(v.iter().map(|a| a.name()).collect::<Vec<_>>(), ["sm_90", "sm_100a", "sm_120"]);
        assert!(Arch::parse("sm_100f").is_err(), "clang 22 refuses family-specific targets");
    }
}
