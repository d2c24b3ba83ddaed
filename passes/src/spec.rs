//! Pass names as `opt -passes=` spells them, with LLVM's parameter syntax
//! (`name<p1;p2>`):
//!
//! ```text
//! regtune-pow2                          exact rewrites only
//! regtune-pow2<inexact>                 also pows that are not correctly rounded
//! regtune-unroll-cap<N>                 N >= 1
//! regtune-occupancy<W>                  W >= 1 waves per EU (NVPTX: warps per SM)
//! regtune-occupancy<W;block=N>          ... and at most N work-items per block
//! regtune-occupancy<block=N>
//! regtune-noalias<P;P;...>              P: parameter index or IR name
//! regtune-noalias-rank
//! regtune-inspect                      what the tuner needs to know, per kernel
//! regtune-sink
//! regtune-spill-to-shared
//! regtune-lds-spill<N>                  N >= 1 words of LDS per thread
//! regtune-apply                         the decisions db, both phases
//! regtune-apply<early>                  what PipelineStartEP runs under clang
//! regtune-apply<late>                   what OptimizerLastEP runs under clang
//! ```

use std::fmt;

pub use crate::pow2::Rounding;

/// The largest work-group AMDGPU supports (and the largest CUDA block).
const MAX_BLOCK: u32 = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassSpec {
    Pow2(Rounding),
    UnrollCap(u32),
    Occupancy(Occupancy),
    Noalias(Vec<ParamRef>),
    NoaliasRank,
    Inspect,
    Sink,
    SpillToShared,
    LdsSpill(u32),
    Apply(Phase),
}

/// Occupancy attributes for a kernel; at least one is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// `"amdgpu-waves-per-eu"="W"`; on NVPTX W warps per SM, as the
    /// register cap `"nvvm.maxnreg"` that reaches them (the db's
    /// `waves_per_eu` or `warps_per_sm`: [`regtune_decisions::Transforms::occupancy`]).
    pub waves_per_eu: Option<u32>,
    /// `"amdgpu-flat-work-group-size"="1,N"`; on NVPTX `"nvvm.maxntid"="N"`.
    pub max_block: Option<u32>,
}

/// A kernel parameter as a pass parameter names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamRef {
    Index(u32),
    Name(String),
}

/// Which decisions `regtune-apply` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// pow2, noalias, unroll cap, occupancy: before the optimizer.
    Early,
    /// sink: after the optimizer.
    Late,
    /// Both, for `opt -passes=regtune-apply`.
    All,
}

impl Phase {
    pub fn early(self) -> bool {
        matches!(self, Phase::Early | Phase::All)
    }
    pub fn late(self) -> bool {
        matches!(self, Phase::Late | Phase::All)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub name: String,
    pub reason: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid pass '{}': {}", self.name, self.reason)
    }
}

impl std::error::Error for SpecError {}

/// Parse a pipeline element. `Ok(None)`: not a regtune name at all.
pub fn parse(text: &str) -> Result<Option<PassSpec>, SpecError> {
    if !text.starts_with("regtune-") {
        return Ok(None);
    }
    let err = |reason: String| SpecError { name: text.to_string(), reason };
    let (name, params) = split_params(text).map_err(|r| err(r.into()))?;
    let no_params = |spec: PassSpec| match params {
        None => Ok(Some(spec)),
        Some(_) => Err(err(format!("{name} takes no parameters"))),
    };
    match name {
        "regtune-pow2" => match params {
            None => Ok(Some(PassSpec::Pow2(Rounding::Exact))),
            Some("inexact") => Ok(Some(PassSpec::Pow2(Rounding::Inexact))),
            Some(p) => Err(err(format!("unknown parameter '{p}' (expected regtune-pow2 or regtune-pow2<inexact>)"))),
        },
        "regtune-noalias-rank" => no_params(PassSpec::NoaliasRank),
        "regtune-inspect" => no_params(PassSpec::Inspect),
        "regtune-sink" => no_params(PassSpec::Sink),
        "regtune-spill-to-shared" => no_params(PassSpec::SpillToShared),
        "regtune-unroll-cap" => {
            let p = params.ok_or_else(|| err("expected regtune-unroll-cap<N>".into()))?;
            let n = positive(p).map_err(|r| err(format!("unroll cap {r}")))?;
            Ok(Some(PassSpec::UnrollCap(n)))
        }
        "regtune-lds-spill" => {
            let p = params.ok_or_else(|| err("expected regtune-lds-spill<N> (words of LDS per thread)".into()))?;
            let n = positive(p).map_err(|r| err(format!("slot count {r}")))?;
            Ok(Some(PassSpec::LdsSpill(n)))
        }
        "regtune-occupancy" => {
            let p = params.ok_or_else(|| err("expected regtune-occupancy<W> or <W;block=N>".into()))?;
            parse_occupancy(p).map(|o| Some(PassSpec::Occupancy(o))).map_err(err)
        }
        "regtune-noalias" => {
            let p = params.ok_or_else(|| err("expected regtune-noalias<P;...> (index or name)".into()))?;
            parse_params(p).map(|ps| Some(PassSpec::Noalias(ps))).map_err(err)
        }
        "regtune-apply" => match params {
            None => Ok(Some(PassSpec::Apply(Phase::All))),
            Some("early") => Ok(Some(PassSpec::Apply(Phase::Early))),
            Some("late") => Ok(Some(PassSpec::Apply(Phase::Late))),
            Some(p) => Err(err(format!("unknown phase '{p}' (expected early or late)"))),
        },
        _ => Err(err("no such regtune pass".into())),
    }
}

/// `name<params>` into its parts; a name without `<...>` has no parameters.
fn split_params(text: &str) -> Result<(&str, Option<&str>), &'static str> {
    let Some(open) = text.find('<') else {
        return Ok((text, None));
    };
    let Some(inner) = text[open + 1..].strip_suffix('>') else {
        return Err("unterminated parameter list");
    };
    Ok((&text[..open], Some(inner)))
}

fn positive(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive integer")),
    }
}

fn parse_occupancy(params: &str) -> Result<Occupancy, String> {
    let mut occ = Occupancy::default();
    for part in params.split(';').map(str::trim) {
        if let Some(n) = part.strip_prefix("block=") {
            let n = positive(n).map_err(|r| format!("block size {r}"))?;
            if n > MAX_BLOCK {
                return Err(format!("block size {n} exceeds {MAX_BLOCK}"));
            }
            if occ.max_block.replace(n).is_some() {
                return Err("block= given twice".into());
            }
        } else {
            let w = positive(part).map_err(|r| format!("waves per EU {r}"))?;
            if occ.waves_per_eu.replace(w).is_some() {
                return Err("waves per EU given twice".into());
            }
        }
    }
    Ok(occ)
}

fn parse_params(params: &str) -> Result<Vec<ParamRef>, String> {
    let mut out = Vec::new();
    for part in params.split(';').map(str::trim) {
        if part.is_empty() {
            return Err("empty parameter".into());
        }
        let p = match part.parse::<u32>() {
            Ok(i) => ParamRef::Index(i),
            Err(_) => ParamRef::Name(part.to_string()),
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> PassSpec {
        parse(s).expect("valid").expect("a regtune pass")
    }

    #[test]
    fn names_without_parameters() {
        assert_eq!(ok("regtune-pow2"), PassSpec::Pow2(Rounding::Exact));
        assert_eq!(ok("regtune-pow2<inexact>"), PassSpec::Pow2(Rounding::Inexact));
        assert_eq!(ok("regtune-sink"), PassSpec::Sink);
        assert_eq!(ok("regtune-noalias-rank"), PassSpec::NoaliasRank);
        assert_eq!(ok("regtune-apply"), PassSpec::Apply(Phase::All));
        assert_eq!(ok("regtune-apply<late>"), PassSpec::Apply(Phase::Late));
    }

    #[test]
    fn foreign_names_are_not_ours() {
        assert_eq!(parse("instcombine"), Ok(None));
        assert_eq!(parse("loop-unroll<O3>"), Ok(None));
    }

    #[test]
    fn unroll_cap_needs_a_positive_count() {
        assert_eq!(ok("regtune-unroll-cap<4>"), PassSpec::UnrollCap(4));
        assert!(parse("regtune-unroll-cap<0>").is_err());
        assert!(parse("regtune-unroll-cap<x>").is_err());
        assert!(parse("regtune-unroll-cap").is_err());
        assert!(parse("regtune-unroll-cap<4").is_err());
    }

    #[test]
    fn lds_spill_needs_a_positive_slot_count() {
        assert_eq!(ok("regtune-lds-spill<8>"), PassSpec::LdsSpill(8));
        let reason = |s: &str| parse(s).expect_err("invalid").reason;
        assert_eq!(reason("regtune-lds-spill<0>"), "slot count must be at least 1");
        assert_eq!(reason("regtune-lds-spill<many>"), "slot count 'many' is not a positive integer");
        assert_eq!(reason("regtune-lds-spill<-1>"), "slot count '-1' is not a positive integer");
        assert_eq!(reason("regtune-lds-spill"), "expected regtune-lds-spill<N> (words of LDS per thread)");
        assert!(parse("regtune-lds-spill<>").is_err());
        assert!(parse("regtune-lds-spill<4").is_err());
    }

    #[test]
    fn occupancy_takes_waves_and_an_optional_block() {
        let o = |w, b| PassSpec::Occupancy(Occupancy { waves_per_eu: w, max_block: b });
        assert_eq!(ok("regtune-occupancy<5>"), o(Some(5), None));
        assert_eq!(ok("regtune-occupancy<5;block=256>"), o(Some(5), Some(256)));
        assert_eq!(ok("regtune-occupancy<block=128>"), o(None, Some(128)));
        assert!(parse("regtune-occupancy<5;block=2048>").is_err());
        assert!(parse("regtune-occupancy<5;6>").is_err());
        assert!(parse("regtune-occupancy<>").is_err());
    }

    #[test]
    fn noalias_takes_indices_and_names() {
        assert_eq!(ok("regtune-noalias<0;out;0>"), PassSpec::Noalias(vec![ParamRef::Index(0), ParamRef::Name("out".into())]));
        assert!(parse("regtune-noalias<0;;1>").is_err());
    }

    #[test]
    fn unknown_regtune_names_are_errors() {
        let e = parse("regtune-pow3").expect_err("not a pass");
        assert_eq!(e.to_string(), "invalid pass 'regtune-pow3': no such regtune pass");
        assert!(parse("regtune-pow2<1>").is_err());
        assert!(parse("regtune-apply<sometimes>").is_err());
    }
}
