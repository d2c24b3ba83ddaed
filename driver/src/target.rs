//! An `--offload-arch` value: a processor name plus optional target
//! features ("gfx90a:xnack-"), validated against the targets we model.

use std::fmt;

use crate::occupancy;

#[derive(Debug, thiserror::Error)]
#[error("unknown target `{0}`: regtune knows {known}", known = known_names())]
pub struct UnknownTarget(pub String);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Arch {
    /// As the user wrote it, features included: what clang gets.
    spec: String,
    target: &'static occupancy::Target,
}

impl Arch {
    pub fn parse(spec: &str) -> Result<Arch, UnknownTarget> {
        let spec = spec.trim();
        let target = occupancy::target(spec).ok_or_else(|| UnknownTarget(spec.to_string()))?;
        Ok(Arch { spec: spec.to_string(), target })
    }

    /// Parse a comma-separated list, as `--offload-arch gfx90a,gfx1100`.
    pub fn parse_list(list: &str) -> Result<Vec<Arch>, UnknownTarget> {
        list.split(',').filter(|s| !s.trim().is_empty()).map(Arch::parse).collect()
    }

    /// The offload-arch string, features included.
    pub fn name(&self) -> &str {
        &self.spec
    }

    /// The processor alone ("gfx90a"): what the IR's target-cpu says.
    pub fn processor(&self) -> &str {
        self.spec.split(':').next().unwrap_or(&self.spec)
    }

    pub fn target(&self) -> &'static occupancy::Target {
        self.target
    }

    pub fn wave_size(&self) -> u32 {
        self.target.wave_size
    }

    /// "90a" for gfx90a: how device-library file names spell the target.
    pub fn isa_suffix(&self) -> &str {
        self.processor().trim_start_matches("gfx")
    }

    /// The device libraries' `__oclc_ISA_version`: major*1000 + minor*100 +
    /// stepping, where the last two digits of the name are hex minor/stepping.
    pub fn isa_version(&self) -> u32 {
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
    occupancy::TARGETS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
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
    }

    #[test]
    fn lists_split_on_commas() {
        let v = Arch::parse_list("gfx90a,gfx1100").unwrap();
        assert_eq!(v.iter().map(|a| a.name()).collect::<Vec<_>>(), ["gfx90a", "gfx1100"]);
    }
}
