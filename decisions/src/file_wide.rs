//! nvcc's `-maxrregcount=R` is one flag for a whole file: the file's
//! kernels are built with the same R or none. [`Db::settle_file_wide`]
//! decides, per file (same arch and input), between one R for all of its
//! kernels and each kernel's own best build, by the kernels' total time.

use std::collections::BTreeMap;

use crate::measured::{Candidate, Verdict};
use crate::{Db, Entry, Measured, Transforms};

impl Db {
    /// One build of a file takes one `-maxrregcount`. A file whose measured
    /// kernels hold file-wide candidates takes the R under which their
    /// total time (each kernel's time at R, from its candidate or the build
    /// whose code R's equals, [`Entry::file_wide_same_as`]) beats their own
    /// bests' by [`crate::measured::MIN_GAIN`], R faster beyond the noise on
    /// one kernel at least; or the R every one of them chose alone. Those
    /// kernels then build with R ([`crate::Measured::file_takes`]); the rest
    /// keep their own best, and a kernel whose own choice was another R
    /// names the kernel that decided the file
    /// ([`crate::Measured::file_wide_declined_for`]). A kernel of the file
    /// whose time at R is unknown and whose own best is plain counts as
    /// plain: the build compares its code with R and without, and builds
    /// every kernel its own best where R changes it.
    pub fn settle_file_wide(&mut self) {
        // Most dbs hold no file-wide build: nothing to read on the plugin's loads.
        let wide = |e: &Entry| e.candidates.iter().any(|c| c.transforms.maxrregcount.is_some()) || !e.file_wide_same_as.is_empty();
        if !self.kernels.values().any(|e| e.measured.is_some() && wide(e)) {
            for m in self.kernels.values_mut().filter_map(|e| e.measured.as_mut()) {
                (m.file_takes, m.file_wide_declined_for) = (None, None);
            }
            return;
        }
        let mut files: BTreeMap<(&str, &str), Vec<(&String, &Entry)>> = BTreeMap::new();
        for (key, e) in &self.kernels {
            files.entry((&e.arch, &e.input_hash)).or_default().push((key, e));
        }
        let settled: Vec<(String, Settled)> = files.values().flat_map(|kernels| settle(kernels)).collect();
        for (key, s) in settled {
            if let Some(m) = self.kernels.get_mut(&key).and_then(|e| e.measured.as_mut()) {
                (m.file_takes, m.file_wide_declined_for) = (s.takes, s.declined_for);
            }
        }
    }
}

/// What a file's choice means for one of its kernels.
struct Settled {
    takes: Option<u32>,
    declined_for: Option<String>,
}

/// One measured kernel of a file, as the file's choice reads it.
struct Kernel<'a> {
    /// Its key in the db.
    key: &'a String,
    entry: &'a Entry,
    measured: &'a Measured,
    /// Its own choice, as if alone in the file.
    alone: Transforms,
    /// Its best build without a file-wide cap, and that build's time over plain's.
    own: f64,
    /// Plain's time over the launches measured: the kernel's share of the file.
    weight: Option<f64>,
}

impl Kernel<'_> {
    /// Its time at `-maxrregcount=r` over plain's: its candidate's, or
    /// the build whose code that one's equals. None: not known.
    fn at(&self, r: u32) -> Option<(f64, &Candidate)> {
        let m = self.measured;
        let c = self.entry.measured_candidate(&Transforms::file_wide(r))?;
        let speedup = (!matches!(m.verdict(c), Verdict::Failed | Verdict::Differs)).then(|| m.speedup(c)).flatten()?;
        (!m.program_rejects(&c.transforms)).then_some((1.0 / speedup, c))
    }

    /// Its time at `r` where known; plain's where not known, its own best
    /// is plain and tune did not find that R changes its code (the build
    /// proves its code unchanged, or builds each kernel its own best).
    fn counted_at(&self, r: u32) -> Option<f64> {
        match self.at(r) {
            Some((ratio, _)) => Some(ratio),
            None if self.entry.file_wide_same_as.get(&r) == Some(&None) => None,
            None => (self.own == 1.0 && self.entry.effective_per_kernel().is_empty()).then_some(1.0),
        }
    }
}

/// A kernel of the file that no measurement timed (not launched, or
/// nothing to time) allows `r` where its code under R is the build it gets
/// (tune built it), or where tune built no file-wide cap of it at all (an
/// older db: the build compares its code with R and without).
fn unmeasured_allows(e: &Entry, r: u32) -> bool {
    match e.file_wide_same_as.get(&r) {
        Some(same) => same.as_ref() == Some(&e.effective()),
        None => e.file_wide_same_as.is_empty() && !e.candidates.iter().any(|c| c.transforms.maxrregcount.is_some()),
    }
}

/// The file's choice for each of its measured `kernels`, by key.
fn settle(entries: &[(&String, &Entry)]) -> Vec<(String, Settled)> {
    let kernels: Vec<Kernel<'_>> = entries.iter().filter_map(|&(key, e)| Some(kernel(key, e, e.measured.as_ref()?))).collect();
    let unmeasured: Vec<&Entry> = entries.iter().filter(|(_, e)| e.measured.is_none()).map(|&(_, e)| e).collect();
    let mut caps: Vec<u32> = kernels
        .iter()
        .flat_map(|k| k.entry.candidates.iter().filter_map(|c| c.transforms.maxrregcount).chain(k.entry.file_wide_same_as.keys().copied()))
        .collect();
    caps.sort_unstable();
    caps.dedup();
    let blocked_by = |r: u32| unmeasured.iter().find(|e| !unmeasured_allows(e, r));
    caps.retain(|&r| blocked_by(r).is_none());
    let takes = unanimous(&kernels).filter(|r| caps.contains(r)).or_else(|| fastest(&kernels, &caps));
    kernels
        .iter()
        .map(|k| {
            let takes = takes.filter(|&r| k.at(r).is_some());
            let declined_for = match k.alone.maxrregcount {
                Some(r) if takes != Some(r) => {
                    Some(blocked_by(r).map_or_else(|| decider(&kernels, k, takes, r), |e| e.name_or_symbol().to_string()))
                }
                _ => None,
            };
            (k.key.clone(), Settled { takes, declined_for })
        })
        .collect()
}

fn kernel<'a>(key: &'a String, entry: &'a Entry, m: &'a Measured) -> Kernel<'a> {
    let own_build = entry.effective_per_kernel();
    let own = match own_build.is_empty() {
        true => 1.0,
        false => m.candidate(&own_build).and_then(|c| m.speedup(c)).map_or(1.0, |s| 1.0 / s),
    };
    let weight = m.plain().and_then(|p| p.time).map(|t| t.median_ms);
    Kernel { key, entry, measured: m, alone: entry.effective_alone(), own, weight }
}

/// The R every kernel of the file chose alone, where they all did.
fn unanimous(kernels: &[Kernel<'_>]) -> Option<u32> {
    let r = kernels.first()?.alone.maxrregcount?;
    kernels.iter().all(|k| k.alone.file_wide_alone() == Some(r)).then_some(r)
}

/// The R whose total time beats the kernels' own bests' the most, by at
/// least the least gain, and faster than plain beyond the noise on one
/// kernel at least.
fn fastest(kernels: &[Kernel<'_>], caps: &[u32]) -> Option<u32> {
    let weights: Option<Vec<f64>> = kernels.iter().map(|k| k.weight).collect();
    let weights = weights?;
    let own: f64 = kernels.iter().zip(&weights).map(|(k, w)| w * k.own).sum();
    let gain = kernels.iter().map(|k| k.measured.least_gain()).fold(crate::measured::MIN_GAIN, f64::max);
    caps.iter()
        .filter(|&&r| kernels.iter().any(|k| k.at(r).is_some_and(|(_, c)| k.measured.verdict(c) == Verdict::Faster)))
        .filter_map(|&r| {
            let at: Option<Vec<f64>> = kernels.iter().map(|k| k.counted_at(r)).collect();
            Some((r, at?.iter().zip(&weights).map(|(t, w)| t * w).sum::<f64>()))
        })
        .filter(|&(_, total)| total <= own * (1.0 - gain))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| r)
}

/// The kernel of the file that decided against `k`'s own R: where the
/// file takes another R, the kernel that gains most from it; else the one
/// that loses most at `r` (unknown counts as most).
fn decider(kernels: &[Kernel<'_>], k: &Kernel<'_>, takes: Option<u32>, r: u32) -> String {
    let others = kernels.iter().filter(|o| o.key != k.key);
    let w = |o: &Kernel<'_>| o.weight.unwrap_or(0.0);
    let by = |o: &Kernel<'_>| match takes {
        Some(t) => o.at(t).map_or(f64::NEG_INFINITY, |(at, _)| w(o) * (o.own - at)),
        None => o.counted_at(r).map_or(f64::INFINITY, |at| w(o) * (at - o.own)),
    };
    others
        .max_by(|a, b| by(a).total_cmp(&by(b)))
        .map_or_else(|| k.entry.name_or_symbol().to_string(), |o| o.entry.name_or_symbol().to_string())
}
