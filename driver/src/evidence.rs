//! What GPUs have shown about each class of transform on real programs,
//! and the rule the default build follows from it: a build with no
//! measurement of a kernel applies, unasked, only classes that never cost
//! more than [`TOLERANCE`] on any real kernel timed, over at least
//! [`MIN_KERNELS`] of them. Everything else is suggested, with what it
//! would reach, and `regtune measure` can confirm it inside the program.
//!
//! The table (`evidence.json`) is written by `bench/search/report.py` from
//! `regtune measure` runs of every candidate on the development corpus
//! (docs/guide/how-tune-decides.md, "Default decisions"); no AMD GPU was reachable, so AMDGPU
//! follows the same evidence.

use serde::Deserialize;

/// The most a class may have cost on one kernel and still be applied
/// unasked: 2 %.
pub(crate) const TOLERANCE: f64 = 0.02;
/// Fewer kernels than this show nothing either way.
pub(crate) const MIN_KERNELS: u32 = 5;

/// A class of transform, as the evidence names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Sink,
    Pow2,
    Pow2Inexact,
    UnrollCap,
    OccupancyTarget,
    SpillToShared,
    LdsSpill,
    Noalias,
    LaunchBounds,
}

impl Class {
    const ALL: [Class; 9] = [
        Class::Sink,
        Class::Pow2,
        Class::Pow2Inexact,
        Class::UnrollCap,
        Class::OccupancyTarget,
        Class::SpillToShared,
        Class::LdsSpill,
        Class::Noalias,
        Class::LaunchBounds,
    ];

    /// The class a record names.
    pub(crate) fn named(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Sink => "sink",
            Class::Pow2 => "pow2",
            Class::Pow2Inexact => "pow2-inexact",
            Class::UnrollCap => "unroll-cap",
            Class::OccupancyTarget => "occupancy-target",
            Class::SpillToShared => "spill-to-shared",
            Class::LdsSpill => "lds-spill",
            Class::Noalias => "noalias",
            Class::LaunchBounds => "launch-bounds",
        }
    }
}

/// One class's speedups (plain time over the class's, alone on a kernel,
/// identical results only) on the kernels where it changed the code.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Record {
    pub class: String,
    /// Distinct kernels, and the candidates of the class timed on them.
    pub kernels: u32,
    #[serde(default)]
    pub candidates: u32,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// The evidence a tune follows: the shipped table, or the user's own
/// (`--evidence FILE`, e.g. from their GPUs: an AMD one, say).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Evidence {
    /// Where the numbers come from (GPU, programs, date).
    #[serde(default)]
    pub source: String,
    pub records: Vec<Record>,
}

impl Evidence {
    /// The shipped table (`evidence.json`).
    pub fn shipped() -> Evidence {
        serde_json::from_str(include_str!("evidence.json")).expect("evidence.json is valid (tested)")
    }

    /// A table in the same format, from a file.
    pub fn load(path: &std::path::Path) -> Result<Evidence, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read evidence {}: {e}", path.display()))?;
        let evidence: Evidence = serde_json::from_str(&text).map_err(|e| format!("evidence {} is not valid: {e}", path.display()))?;
        if let Some(r) = evidence.records.iter().find(|r| Class::named(&r.class).is_none()) {
            return Err(format!("evidence {}: unknown class `{}`", path.display(), r.class));
        }
        Ok(evidence)
    }

    /// The record of a class, if it was ever timed.
    pub(crate) fn record(&self, class: Class) -> Option<&Record> {
        self.records.iter().find(|r| r.class == class.name())
    }

    /// Every number a decision or a suggestion's text reads, in one line:
    /// a batch unit tuned under other evidence is tuned again.
    pub(crate) fn fingerprint(&self) -> String {
        let records: Vec<String> =
            self.records.iter().map(|r| format!("{}:{}:{}:{}:{}", r.class, r.kernels, r.min, r.median, r.max)).collect();
        records.join(",")
    }

    /// Whether the default build may apply `class` unasked.
    pub(crate) fn never_loses(&self, class: Class) -> bool {
        self.record(class).is_some_and(proven)
    }

    /// One line on what the GPU showed of `class`, for suggestions.
    pub(crate) fn summary(&self, class: Class) -> String {
        match self.record(class) {
            Some(r) => format!("on {} real kernels timed on a GPU it ran {:.2}×–{:.2}× (median {:.2}×)", r.kernels, r.min, r.max, r.median),
            None => "no GPU has timed it on real kernels yet".to_string(),
        }
    }
}

/// Enough kernels, and none slower than the tolerance.
fn proven(r: &Record) -> bool {
    r.kernels >= MIN_KERNELS && r.min >= 1.0 - TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_names_known_classes() {
        for r in Evidence::shipped().records {
            assert!(Class::named(&r.class).is_some(), "unknown class {}", r.class);
            assert!(r.min <= r.median && r.median <= r.max, "{r:?}");
        }
    }

    #[test]
    fn a_users_table_is_checked_and_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.json");
        std::fs::write(&path, r#"{"records":[{"class":"sink","kernels":9,"min":0.99,"median":1.0,"max":1.3}]}"#).unwrap();
        let e = Evidence::load(&path).unwrap();
        assert!(e.never_loses(Class::Sink) && !e.never_loses(Class::Pow2));
        assert_eq!(e.summary(Class::Sink), "on 9 real kernels timed on a GPU it ran 0.99×–1.30× (median 1.00×)");
        std::fs::write(&path, r#"{"records":[{"class":"magic","kernels":9,"min":1,"median":1,"max":1}]}"#).unwrap();
        assert!(Evidence::load(&path).unwrap_err().ends_with("unknown class `magic`"));
        std::fs::write(&path, "{").unwrap();
        assert!(Evidence::load(&path).unwrap_err().contains("is not valid"));
    }

    #[test]
    fn a_class_is_proven_by_enough_kernels_none_of_them_slower_than_two_percent() {
        let r = |kernels, min| Record { class: "sink".into(), kernels, candidates: kernels, min, median: 1.0, max: 1.4 };
        assert!(proven(&r(12, 0.985)));
        assert!(!proven(&r(12, 0.97)), "one kernel 3 % slower");
        assert!(!proven(&r(3, 1.1)), "too few kernels");
    }
}
