//! What an `lds-spill` build of a kernel keeps in shared memory (LDS): the
//! values the pass demoted and the bytes it spent, as the pass itself
//! reports them (`REGTUNE_VERBOSE`), for the build the db uses or, if that
//! has none, tune's first `lds-spill` candidate.

use std::path::Path;

use regtune_decisions::{Entry, Transforms};

use super::diagnose::{Diagnostic, Kind, Tuned};
use crate::gpu::Arch;
use crate::session::Session;
use crate::toolchain::Toolchain;
use crate::{measure, plugin};

/// Where the kernel is, for the diagnostic.
pub(crate) struct Place<'a> {
    pub file: &'a str,
    pub line: u32,
}

/// The diagnostic for `symbol`, where the db has an `lds-spill` build of it.
pub(crate) fn diagnostic(
    toolchain: &Toolchain,
    source: &Path,
    arch: &Arch,
    user_args: &[String],
    symbol: &str,
    tuned: &Tuned,
    place: Place<'_>,
) -> Option<Result<Diagnostic, String>> {
    let Tuned::Current(entry) = tuned else { return None };
    let (transforms, used) = lds_build(entry)?;
    Some(notes(toolchain, source, arch, user_args, symbol, &transforms).map(|lines| {
        let label = crate::gpu::labels(&transforms, arch, &[]).join(" + ");
        // `regtune: lds-spill<N> SYMBOL: what it did`
        let said = lines
            .iter()
            .filter(|l| l.contains("lds-spill<") && l.contains(symbol))
            .find_map(|l| l.split_once(": ").and_then(|(_, rest)| rest.split_once(": ")).map(|(_, m)| m));
        let usage = entry.usage_of(&transforms);
        Diagnostic {
            kind: Kind::LdsSpill,
            file: place.file.to_string(),
            line: place.line,
            lines: vec![place.line],
            message: match said {
                Some(m) => format!("{label} ({}): {m}", if used { "the build the db uses" } else { "one of tune's candidates" }),
                None => format!("{label}: the pass reported nothing for this kernel"),
            },
            fix: "`regtune measure` times it inside your program and keeps it only if faster with identical results".into(),
            transform: Some(label),
            tune: usage.map(|u| {
                format!(
                    "tune measured it: registers {}, spills {}, shared memory {} B, occupancy {}",
                    u.vgpr, u.vgpr_spills, u.lds_bytes, u.occupancy
                )
            }),
        }
    }))
}

/// The db's `lds-spill` build: the one it uses (true), else the first
/// candidate with one (false).
fn lds_build(entry: &Entry) -> Option<(Transforms, bool)> {
    let used = entry.effective();
    if used.lds_spill.is_some() {
        return Some((used, true));
    }
    entry.candidates.iter().map(|c| &c.transforms).find(|t| t.lds_spill.is_some()).map(|t| (t.clone(), false))
}

/// The plugin's `regtune: ...` lines for `symbol` built with `transforms`.
fn notes(
    toolchain: &Toolchain,
    source: &Path,
    arch: &Arch,
    user_args: &[String],
    symbol: &str,
    transforms: &Transforms,
) -> Result<Vec<String>, String> {
    let plugin = plugin::find().map_err(|e| e.to_string())?;
    // Line tables, so the pass can say where each value is defined (they
    // do not change its choice: debug records are not instructions).
    let args: Vec<String> = user_args.iter().cloned().chain(["-gline-tables-only".to_string()]).collect();
    let (session, _, _) =
        Session::start_with(toolchain, arch, &plugin, source, &args, measure::Options::default()).map_err(|e| e.to_string())?;
    session.plugin_notes(symbol, transforms).map_err(|e| e.to_string())
}
