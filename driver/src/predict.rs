//! `regtune predict`: the cost model's estimate for every variant `tune`
//! compiles, as JSON, for comparing with times measured on a GPU.
//!
//! Per file and target it runs `tune`'s search (writing no db), then
//! compiles each candidate once more to assembly (PTX on NVPTX) and asks
//! [`crate::cost`] how fast it would run against the plain build. With
//! `--code-dir`, each candidate's code object is kept too (named as `tune`
//! names them for `regtune measure`, runtime/code.rs), so that the very
//! code predicted can be timed on a GPU (bench/calibrate).

use std::path::{Path, PathBuf};

use regtune_decisions::{Db, Entry, Transforms, Usage};
use serde::Serialize;

use crate::context::Context;
use crate::cost::{self, Estimate, Profile};
use crate::gpu::listing::Machine;
use crate::gpu::Arch;
use crate::measure::code;
use crate::names;
use crate::output::Failure;
use crate::session::Session;
use crate::tune::{self, Options};

/// One candidate of one kernel.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub file: String,
    pub kernel: String,
    pub symbol: String,
    pub arch: String,
    /// The transforms, as tune labels them; empty: the plain build.
    pub transforms: Vec<String>,
    /// What tune did with it: "plain", "applied", "suggested" or "tried".
    pub decision: &'static str,
    pub usage: Usage,
    pub profile: Profile,
    pub estimate: Estimate,
    /// Plain time over this variant's time: above 1.0, predicted faster.
    pub predicted_speedup: f64,
    /// The transforms as dbs spelled them before `warps_per_sm`
    /// ([`Transforms::older_spelling`]: NVIDIA's step as `waves_per_eu`), as
    /// this output always has.
    pub spec: Transforms,
    /// The candidate's code object (the whole file, this kernel built with
    /// `spec`), with `--code-dir`.
    pub code: Option<PathBuf>,
}

/// Every candidate of every kernel of `file` on `arch`.
pub(crate) fn unit(ctx: &Context, file: &Path, arch: &Arch, options: &Options, code_dir: Option<&Path>) -> Result<Vec<Candidate>, Failure> {
    let progress = crate::progress::Progress::new(1, "predicting");
    // The tune's own session: its frontend run serves the listings too.
    let (session, rows) = tune::tune_unit_session(ctx, file, arch, options, &Db::default(), &progress)?;
    progress.finish();
    let mut out = Vec::new();
    for row in &rows {
        let profile_of = |t: &Transforms| tune::profile(&session, &row.report.symbol, t).map_err(|e| Failure::new(e.to_string()));
        let plain_profile = profile_of(&Transforms::default())?;
        let plain = cost::estimate(&plain_profile, &row.before, arch);
        let applied = &row.entry.transforms;
        let suggested = row.entry.suggested.first().map(|s| s.transforms.clone());
        let mut variants: Vec<(Transforms, Usage)> = vec![(Transforms::default(), row.before)];
        variants.extend(row.measured.iter().filter_map(|m| Some((m.transforms.clone(), m.usage?))));
        for (t, usage) in variants {
            let profile = if t.is_empty() { plain_profile.clone() } else { profile_of(&t)? };
            let estimate = cost::estimate(&profile, &usage, arch);
            let code = match code_dir {
                Some(dir) => Some(keep_code(&session, &row.entry, &t, dir)?),
                None => None,
            };
            let decision = if t.is_empty() {
                "plain"
            } else if &t == applied {
                "applied"
            } else if suggested.as_ref() == Some(&t) {
                "suggested"
            } else {
                "tried"
            };
            out.push(Candidate {
                file: file.display().to_string(),
                kernel: names::short_name(&row.report.name).to_string(),
                symbol: row.report.symbol.clone(),
                arch: arch.processor().to_string(),
                transforms: t.labels(),
                decision,
                usage,
                predicted_speedup: cost::speedup(&plain, &estimate),
                profile,
                estimate,
                spec: t.older_spelling(),
                code,
            });
        }
    }
    Ok(out)
}

/// Compile `entry`'s kernel with `t` (the rest of the file plain) into
/// `dir`, unless it is there already.
fn keep_code(session: &Session<'_>, entry: &Entry, t: &Transforms, dir: &Path) -> Result<PathBuf, Failure> {
    let dest = code::path(dir, entry, t);
    if !dest.is_file() {
        let parent = dest.parent().expect("under the code directory");
        std::fs::create_dir_all(parent).map_err(|e| Failure::new(format!("cannot write {}: {e}", parent.display())))?;
        session.save_code_object(&[(entry.symbol.clone(), t.clone())], &dest).map_err(|e| Failure::new(e.to_string()))?;
    }
    Ok(dest)
}

/// `regtune predict`'s document: the machine model and the candidates.
#[derive(Debug, Serialize)]
pub struct Document {
    pub machines: Vec<(String, Machine)>,
    pub candidates: Vec<Candidate>,
}

pub fn run(ctx: &Context, files: &[PathBuf], options: &Options, code_dir: Option<&Path>) -> (Document, Vec<Failure>) {
    let mut doc =
        Document { machines: ctx.archs.iter().map(|a| (a.processor().to_string(), cost::machine(a))).collect(), candidates: vec![] };
    let mut failures = Vec::new();
    for file in files {
        for arch in &ctx.archs {
            match unit(ctx, file, arch, options, code_dir) {
                Ok(c) => doc.candidates.extend(c),
                Err(f) => failures.push(f),
            }
        }
    }
    (doc, failures)
}
