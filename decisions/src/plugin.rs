//! The pass plugin's side of the contract with the driver: the environment
//! variables the plugin reads, and the line `regtune-inspect` prints for
//! each kernel. The plugin (passes/) and the driver both name these from
//! here, so neither can drift from the other.

use serde::{Deserialize, Serialize};

use crate::Param;

/// Where `regtune-apply` finds its decisions when the shim's
/// `-regtune-decisions=` option is empty.
pub const DECISIONS_ENV: &str = "REGTUNE_DECISIONS";
/// Narrows `regtune-apply` to the entries of one input hash.
pub const INPUT_HASH_ENV: &str = "REGTUNE_INPUT_HASH";
/// Set (to anything but 0) to have the plugin, and the hipcc wrapper, say
/// on stderr what they do.
pub const VERBOSE_ENV: &str = "REGTUNE_VERBOSE";
/// Set by the tuner: compile only this kernel (the tuner's one-kernel variants).
pub const ONLY_KERNEL_ENV: &str = "REGTUNE_ONLY_KERNEL";

/// Whether [`VERBOSE_ENV`] asks for messages: set, and neither empty nor `0`.
pub fn verbose() -> bool {
    std::env::var_os(VERBOSE_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// One kernel as `regtune-inspect` describes it, one JSON line each:
///
///   {"kernel":"<symbol>","pow2":true,"pow2_inexact":false,"unroll_cap":false,"noalias_candidates":[...]}
///
/// The plugin writes its ranked candidates (`C` with a score and a reason);
/// the driver reads each as a [`Param`] and ignores the rest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Inspection<C = Param> {
    pub kernel: String,
    /// pow2 would rewrite something.
    pub pow2: bool,
    /// pow2 with inexact rewrites allowed would rewrite more.
    #[serde(default)]
    pub pow2_inexact: bool,
    /// There are loops an unroll cap would touch.
    pub unroll_cap: bool,
    /// Pointer parameters in the heuristic's order, most promising first.
    pub noalias_candidates: Vec<C>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_reads_what_the_plugin_writes() {
        #[derive(Serialize)]
        struct Ranked {
            index: u32,
            name: String,
            score: u32,
            reason: String,
        }
        let written = Inspection {
            kernel: "_Z1kPd".into(),
            pow2: true,
            pow2_inexact: false,
            unroll_cap: true,
            noalias_candidates: vec![Ranked { index: 1, name: "x".into(), score: 3, reason: "read in a loop".into() }],
        };
        let line = serde_json::to_string(&written).unwrap();
        assert_eq!(
            line,
            r#"{"kernel":"_Z1kPd","pow2":true,"pow2_inexact":false,"unroll_cap":true,"noalias_candidates":[{"index":1,"name":"x","score":3,"reason":"read in a loop"}]}"#
        );
        let read: Inspection = serde_json::from_str(&line).unwrap();
        assert_eq!(read.noalias_candidates, [Param { index: 1, name: "x".into() }]);
        assert!(read.pow2 && read.unroll_cap && !read.pow2_inexact);
    }
}
