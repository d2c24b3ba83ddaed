//! What `batch` remembers per unit next to the decisions db, so an
//! unchanged unit is reported without being tuned again.
//!
//! The db holds the decisions (what the plugin and the wrapper apply); this
//! file (`decisions.batch.json` beside `decisions.json`) holds the report
//! rows behind them. A unit is cached when its record matches the unit's
//! input hash (computed from a preprocess), was tuned with the same options,
//! and the db still holds exactly the entries the record wrote. Each file is
//! written under its own lock, one unit at a time as units finish, the db
//! first: a run stopped between the two writes only tunes that unit again.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use regtune_decisions::{Db, DbError, Entry};
use serde::{Deserialize, Serialize};

use super::KernelRow;
use crate::hash;

/// Bumped when the layout changes; an older file is ignored (re-tune).
const VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Records {
    pub version: u32,
    /// Keyed by the unit's input hash (preprocessed source, flags,
    /// compiler, target).
    pub units: BTreeMap<String, UnitRecord>,
}

/// One unit on one target, as the run that tuned it saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct UnitRecord {
    pub file: String,
    pub arch: String,
    /// The hash the db entries carry (from the tune's own preprocess).
    pub input_hash: String,
    /// The tuning options and regtune version ([`super::Options::fingerprint`]).
    pub options: String,
    /// Digest of the db entries this unit wrote ([`entries_digest`]).
    pub entries: String,
    pub kernels: Vec<KernelRow>,
    /// Wall time of the tune, and variants compiled.
    pub seconds: f64,
    pub variants: usize,
}

/// `dir/decisions.json` → `dir/decisions.batch.json`.
pub(crate) fn path_for(db: &Path) -> PathBuf {
    let stem = db.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "decisions".into());
    db.with_file_name(format!("{stem}.batch.json"))
}

impl Records {
    /// Load; a missing file is empty, and so (with a warning) is one that
    /// cannot be read: its units are tuned again and the file rewritten.
    pub(crate) fn load(path: &Path) -> Records {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Records::default(),
            Err(e) => {
                eprintln!("warning: cannot read {}: {e}; its units will be tuned again", path.display());
                return Records::default();
            }
        };
        match serde_json::from_str::<Records>(&text) {
            Ok(r) if r.version == VERSION => r,
            Ok(_) => Records::default(),
            Err(e) => {
                eprintln!("warning: {} is not valid JSON ({e}); its units will be tuned again", path.display());
                Records::default()
            }
        }
    }

    /// Read-modify-write under an exclusive lock (`PATH.lock`), as
    /// `Db::update` does for the db: concurrent shards lose no record.
    fn update<T>(path: &Path, f: impl FnOnce(&mut Records) -> T) -> Result<T, DbError> {
        let err = |source| DbError::Write { path: path.into(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut lock_name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        lock_name.push(".lock");
        let lock = File::options().create(true).truncate(false).write(true).open(path.with_file_name(lock_name)).map_err(err)?;
        lock.lock_exclusive().map_err(err)?;
        let mut records = Records::load(path);
        records.version = VERSION;
        let out = f(&mut records);
        records.save(path).map_err(err)?;
        Ok(out)
    }

    fn save(&self, path: &Path) -> Result<(), std::io::Error> {
        let text = serde_json::to_string_pretty(self).expect("records serialize") + "\n";
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// The record for `key` if the db still holds what it wrote and the
    /// options match.
    pub(crate) fn cached<'a>(&'a self, key: &str, options: &str, db: &Db) -> Option<&'a UnitRecord> {
        let record = self.units.get(key)?;
        let entries: Option<Vec<&Entry>> =
            record.kernels.iter().map(|k| db.kernels.get(&Db::key(&k.symbol, arch_processor(&record.arch), &record.input_hash))).collect();
        (record.options == options && entries_digest(&entries?) == record.entries).then_some(record)
    }
}

fn arch_processor(arch: &str) -> &str {
    arch.split(':').next().unwrap_or(arch)
}

/// A digest of db entries: a unit whose entries someone edited (a confirmed
/// suggestion) is tuned again. A GPU measurement (`regtune measure`) is no
/// edit: it is left out.
pub(crate) fn entries_digest(entries: &[&Entry]) -> String {
    // As dbs spelled them before `warps_per_sm`: an older run's records still match.
    hash::of_parts(entries.iter().map(|e| serde_json::to_vec(&Entry { measured: None, ..e.older_spelling() }).expect("entry serializes")))
}

/// Record a finished unit: its decisions into the db, then its record
/// beside it, so a run stopped after this keeps them.
pub(crate) fn save_unit(db_path: &Path, key: &str, entries: &[Entry], mut record: UnitRecord) -> Result<(), DbError> {
    if !entries.is_empty() {
        Db::update(db_path, |db| {
            for e in entries {
                db.insert(e.clone());
            }
        })?;
    }
    record.entries = entries_digest(&entries.iter().collect::<Vec<_>>());
    Records::update(&path_for(db_path), |r| r.units.insert(key.to_string(), record))?;
    Ok(())
}

/// Join dbs and their records into `out` (kept entries of `out` stay).
/// Returns the records of the inputs, and how many entries differed
/// between inputs (the later input's entry is kept).
pub(crate) fn merge(inputs: &[PathBuf], out: &Path) -> Result<(Records, usize), DbError> {
    let mut dbs = Vec::new();
    let mut merged = Records { version: VERSION, ..Records::default() };
    for path in inputs {
        if !path.is_file() {
            return Err(DbError::Read { path: path.clone(), source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file") });
        }
        dbs.push(Db::load(path)?);
        merged.units.extend(Records::load(&path_for(path)).units);
    }
    let conflicts = Db::update(out, |db| {
        let mut seen: BTreeMap<String, Entry> = BTreeMap::new();
        let mut conflicts = 0;
        for e in dbs.into_iter().flat_map(|d| d.kernels.into_values()) {
            if seen.get(&e.key()).is_some_and(|prev| *prev != e) {
                conflicts += 1;
            }
            seen.insert(e.key(), e.clone());
            db.join(e);
        }
        conflicts
    })?;
    Records::update(&path_for(out), |all| all.units.extend(merged.units.clone()))?;
    Ok((merged, conflicts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_is_not_an_edit_a_confirmation_is() {
        use regtune_decisions::{Measured, Suggestion, Transforms, Usage};
        let mut e = Entry {
            symbol: "_Z1kPd".into(),
            arch: "sm_90".into(),
            input_hash: "h".into(),
            name: "k".into(),
            file: "k.cu".into(),
            transforms: Transforms { sink: true, ..Default::default() },
            reason: None,
            suggested: vec![Suggestion {
                transforms: Transforms::default(),
                usage: Usage::default(),
                message: String::new(),
                reasons: vec![],
                confirmed: false,
            }],
            before: None,
            after: None,
            candidates: vec![],
            left_out: vec![],
            measured: None,
        };
        let before = entries_digest(&[&e]);
        e.measured = Some(Measured {
            device: "gpu".into(),
            launches: 1,
            runs: 20,
            deterministic: true,
            program_identical: Some(true),
            block: None,
            candidates: vec![],
            control: None,
            earlier: vec![],
            program: None,
        });
        assert_eq!(entries_digest(&[&e]), before);
        e.suggested[0].confirmed = true;
        assert_ne!(entries_digest(&[&e]), before);
    }

    #[test]
    fn records_sit_beside_the_db() {
        assert_eq!(path_for(Path::new(".regtune/decisions.json")), Path::new(".regtune/decisions.batch.json"));
        assert_eq!(path_for(Path::new("shard1")), Path::new("shard1.batch.json"));
    }

    #[test]
    fn a_corrupt_records_file_is_empty_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.batch.json");
        std::fs::write(&p, "{ nope").unwrap();
        assert!(Records::load(&p).units.is_empty());
    }
}
