//! What an `lds-spill` build of a kernel keeps in shared memory (LDS): the
//! values the pass demoted and the bytes it spent, as the pass itself
//! reports them (`REGTUNE_VERBOSE`), for the build the db uses or, if that
//! has none, tune's first `lds-spill` candidate. One session per file,
//! started by the first kernel that needs it.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use regtune_decisions::{Entry, Transforms};

use super::diagnose::{Diagnostic, Kind, Tuned};
use crate::gpu::resources;
use crate::gpu::Arch;
use crate::plugin;
use crate::session::Session;
use crate::toolchain::Toolchain;

/// Where the kernel is, for the diagnostic.
pub(crate) struct Place<'a> {
    pub file: &'a str,
    pub line: u32,
}

/// What the notes' builds need, made once per file.
pub(crate) struct Inputs {
    plugin: PathBuf,
    /// The user's flags and line tables, so the pass can say where each
    /// value is defined (they do not change its choice: debug records are
    /// not instructions).
    args: Vec<String>,
}

/// The file's source of plugin notes: its session, started on first use.
pub(crate) struct Notes<'a> {
    pub toolchain: &'a Toolchain,
    pub source: &'a Path,
    pub arch: &'a Arch,
    pub user_args: &'a [String],
    pub inputs: &'a OnceCell<Result<Inputs, String>>,
    pub session: &'a OnceCell<Result<Session<'a>, String>>,
}

impl<'a> Notes<'a> {
    /// The plugin's `regtune: ...` lines for `symbol` built with `transforms`.
    fn lines(&self, symbol: &str, transforms: &Transforms) -> Result<Vec<String>, String> {
        let session = self
            .session
            .get_or_init(|| {
                let inputs = self
                    .inputs
                    .get_or_init(|| {
                        let plugin = plugin::find().map_err(|e| e.to_string())?;
                        let args = self.user_args.iter().cloned().chain(["-gline-tables-only".to_string()]).collect();
                        Ok(Inputs { plugin, args })
                    })
                    .as_ref()
                    .map_err(Clone::clone)?;
                Session::start_with(self.toolchain, self.arch, &inputs.plugin, self.source, &inputs.args, resources::Options::default())
                    .map(|(session, _, _)| session)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)?;
        session.plugin_notes(symbol, transforms).map_err(|e| e.to_string())
    }
}

/// The diagnostic for `symbol`, where the db has an `lds-spill` build of it.
pub(crate) fn diagnostic(notes: &Notes<'_>, symbol: &str, tuned: &Tuned, place: Place<'_>) -> Option<Result<Diagnostic, String>> {
    let Tuned::Current(entry) = tuned else { return None };
    let (transforms, used) = lds_build(entry)?;
    Some(notes.lines(symbol, &transforms).map(|lines| {
        let label = transforms.labels().join(" + ");
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
