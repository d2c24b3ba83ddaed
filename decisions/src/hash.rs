//! The db's input hash: what decides a unit's device code, hashed. The
//! tuner records it with each entry; the hipcc wrapper computes it again
//! before a build and hands it to the plugin ([`crate::plugin::INPUT_HASH_ENV`]),
//! so an entry is applied only to the input it was measured on.

use sha2::{Digest, Sha256};

/// Hex SHA-256 of the parts, each length-prefixed so ("ab","c") != ("a","bc").
pub fn of_parts<I, T>(parts: I) -> String
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    let mut h = Sha256::new();
    for p in parts {
        let p = p.as_ref();
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// The input hash of one unit on one target: the compiler's version, the
/// target's name, the versions of the target's other tools (ptxas), the
/// user's flags and the preprocessed source, in that order. The driver
/// hands over flags and text with their paths written the same however a
/// command spelled them (its `hash::Spelling`: `-I` and the like left out,
/// line markers' names relative to the checkout); a change to what goes in,
/// as that one was (issue 39), gives every unit a new hash, so a db's
/// earlier entries, and what a GPU timed of them, stop matching once.
pub fn input_hash(compiler_version: &str, arch: &str, tool_versions: &[String], user_args: &[String], preprocessed: &[u8]) -> String {
    let mut parts: Vec<&[u8]> = vec![compiler_version.as_bytes(), arch.as_bytes()];
    parts.extend(tool_versions.iter().map(|e| e.as_bytes()));
    parts.extend(user_args.iter().map(|a| a.as_bytes()));
    parts.push(preprocessed);
    of_parts(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_delimited() {
        assert_ne!(of_parts(["ab", "c"]), of_parts(["a", "bc"]));
    }

    #[test]
    fn every_input_counts() {
        let base = input_hash("22.1.8", "gfx90a", &[], &["-O3".into()], b"k");
        assert_ne!(base, input_hash("22.1.8", "gfx1100", &[], &["-O3".into()], b"k"));
        assert_ne!(base, input_hash("22.1.8", "gfx90a", &["ptxas 12.8".into()], &["-O3".into()], b"k"));
        assert_ne!(base, input_hash("22.1.8", "gfx90a", &[], &["-O2".into()], b"k"));
        assert_ne!(base, input_hash("22.1.8", "gfx90a", &[], &["-O3".into()], b"j"));
        assert_eq!(base, of_parts(["22.1.8".as_bytes(), b"gfx90a", b"-O3", b"k"]));
    }
}
