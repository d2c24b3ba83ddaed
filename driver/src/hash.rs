//! Content hashes for cache keys and the decisions db.

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

/// First 16 hex digits: enough to name a cache directory.
pub fn short(bytes: &[u8]) -> String {
    of_parts([bytes])[..16].to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parts_are_delimited() {
        assert_ne!(super::of_parts(["ab", "c"]), super::of_parts(["a", "bc"]));
        assert_eq!(super::short(b"x").len(), 16);
    }
}
