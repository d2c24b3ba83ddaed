//! Content hashes for cache keys; the db's own hash is the decisions
//! crate's, over what [`Spelling`] writes the same however a command
//! spelled its paths.

mod spelling;

pub(crate) use regtune_decisions::hash::of_parts;
pub(crate) use spelling::Spelling;

/// First 16 hex digits: enough to name a cache directory.
pub(crate) fn short(bytes: &[u8]) -> String {
    of_parts([bytes])[..16].to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_hashes_name_a_folder() {
        assert_eq!(super::short(b"x").len(), 16);
    }
}
