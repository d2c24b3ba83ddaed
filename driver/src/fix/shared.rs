//! Kernels that share one definition: a template's instantiations, a
//! macro's expansions. An edit in that text is an edit for all of them, so
//! all of them take one decision. Where they decided alike there is
//! nothing to choose. Where they did not, each of their decisions is tried
//! for all of them, the most common first; the rebuild keeps the first
//! that is right for every one (exactly its own promise where it is its
//! own decision, nothing worse than its own promise where it is not), and
//! when none is, none of them is patched and the report says what each
//! try gave. A macro's expansions each take their attributes on a
//! declaration of their own (attributes.rs): only the rest must agree.

use std::collections::BTreeMap;

use regtune_decisions::Transforms;

use crate::gpu::Arch;
use crate::names;

use super::unit_patch::Planned;

/// Kernels of one definition that decided differently.
#[derive(Debug)]
pub(crate) struct Group {
    /// "template" or "macro".
    pub what: &'static str,
    /// The members' decisions, per target (`archs`), by symbol.
    decisions: BTreeMap<String, Vec<Option<Transforms>>>,
    archs: Vec<Arch>,
    /// The candidates: the members that decided each, most first.
    candidates: Vec<Vec<String>>,
    choice: usize,
    /// What each rejected candidate gave.
    tried: Vec<String>,
}

impl Group {
    pub(crate) fn has(&self, symbol: &str) -> bool {
        self.decisions.contains_key(symbol)
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &String> {
        self.decisions.keys()
    }

    /// The members whose edits are kept, if a candidate is left.
    pub(crate) fn chosen(&self) -> Option<&[String]> {
        self.candidates.get(self.choice).map(Vec::as_slice)
    }

    /// A member that takes another's decision: whose.
    pub(crate) fn donor_for(&self, symbol: &str) -> Option<&str> {
        let chosen = self.chosen()?;
        (self.has(symbol) && !chosen.iter().any(|s| s == symbol)).then(|| chosen[0].as_str())
    }

    /// The candidate did not serve `symbol` (`why`): try the next. False
    /// when none is left.
    pub(crate) fn reject(&mut self, symbol: &str, why: &str) -> bool {
        if let Some(donor) = self.chosen().map(|c| c[0].clone()) {
            // "the plain build of the patched files on gfx90a gives X" reads "K on gfx90a gives X" here.
            let what = match why.strip_prefix("the plain build of the patched files on ") {
                Some(rest) => format!("{} on {rest}", names::short(symbol)),
                None => format!("{}: {why}", names::short(symbol)),
            };
            self.tried.push(format!("with {}'s {}, {what}", names::short(&donor), self.labels(&donor)));
            self.choice += 1;
        }
        self.choice < self.candidates.len()
    }

    /// The decision kept after others were tried, and how those came out.
    pub(crate) fn settled(&self) -> Option<String> {
        let donor = self.chosen()?.first()?;
        (!self.tried.is_empty()).then(|| {
            format!(
                "the {} of {} takes {}'s {} (tried before it: {})",
                self.what,
                self.members().map(|m| names::short(m)).collect::<Vec<_>>().join(", "),
                names::short(donor),
                self.labels(donor),
                self.tried.join("; ")
            )
        })
    }

    /// Why none of the members is patched.
    pub(crate) fn reason(&self) -> String {
        let decided: Vec<String> = self.candidates.iter().map(|c| format!("{}: {}", names::short(&c[0]), self.labels(&c[0]))).collect();
        format!(
            "the {}'s {} decided differently ({}) and no one edit of the text they share is right for all: {}",
            self.what,
            if self.what == "template" { "instantiations" } else { "expansions" },
            decided.join("; "),
            self.tried.join("; ")
        )
    }

    /// A member's decision as the tuner labels it, every target's joined.
    pub(crate) fn labels(&self, symbol: &str) -> String {
        let mut out: Vec<String> = Vec::new();
        for (t, arch) in self.decisions.get(symbol).into_iter().flatten().zip(&self.archs) {
            let l = t.as_ref().filter(|t| !t.is_empty()).map_or_else(|| "nothing".to_string(), |t| super::labels(t, arch).join(" + "));
            if !out.contains(&l) {
                out.push(l);
            }
        }
        out.join(" / ")
    }
}

/// What of a decision lands in the text the group shares.
fn shared_part(what: &str, t: &Transforms) -> Transforms {
    match what {
        "macro" => Transforms { launch_bounds: None, ..t.without_occupancy() },
        _ => t.clone(),
    }
}

/// The decision a member that takes `donor`'s is patched with.
pub(crate) fn patched_with(group: &Group, donor: &Transforms, own: &Transforms) -> Transforms {
    let mut t = shared_part(group.what, donor);
    if group.what == "macro" {
        (t.waves_per_eu, t.warps_per_sm, t.launch_bounds) = (own.waves_per_eu, own.warps_per_sm, own.launch_bounds);
    }
    t
}

/// Whether a member that takes another's decision keeps this edit of its own.
pub(crate) fn keeps_own(group: &Group, what: &str) -> bool {
    group.what == "macro" && what == "occupancy"
}

/// The groups among the units' decided kernels, leaving out `skipped` ones.
pub(crate) fn groups(units: &[Planned], archs: &[Arch], skipped: &dyn Fn(&str) -> bool) -> Vec<Group> {
    // Per body (its file and offset): what it is, and the kernels built from it.
    let mut by_body = BTreeMap::new();
    let mut decisions: BTreeMap<String, Vec<Option<Transforms>>> = BTreeMap::new();
    for u in units {
        for (symbol, (body, what)) in &u.bodies {
            if skipped(symbol) || decisions.contains_key(symbol) || *what == "kernel" {
                continue;
            }
            let per_arch = archs
                .iter()
                .map(|a| u.active().find(|d| &d.symbol == symbol && &d.arch == a).map(|d| shared_part(what, &d.transforms)))
                .collect();
            decisions.insert(symbol.clone(), per_arch);
            by_body.entry(body.clone()).or_insert((*what, vec![])).1.push(symbol.clone());
        }
    }
    let mut out = Vec::new();
    for (_, (what, members)) in by_body {
        let mut candidates: Vec<Vec<String>> = Vec::new();
        for m in &members {
            match candidates.iter_mut().find(|c| decisions[&c[0]] == decisions[m]) {
                Some(c) => c.push(m.clone()),
                None => candidates.push(vec![m.clone()]),
            }
        }
        if candidates.len() < 2 {
            continue;
        }
        // Most members first; among equals, in the order they came.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.len()));
        let decisions = members.iter().map(|m| (m.clone(), decisions[m].clone())).collect();
        out.push(Group { what, decisions, archs: archs.to_vec(), candidates, choice: 0, tried: vec![] });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> Group {
        let pow2 = Transforms { pow2: true, ..Default::default() };
        let waves = Transforms { waves_per_eu: Some(6), ..Default::default() };
        Group {
            what: "template",
            decisions: BTreeMap::from([("_Z1kIfEvPT_".to_string(), vec![Some(pow2)]), ("_Z1kIdEvPT_".to_string(), vec![Some(waves)])]),
            archs: vec![Arch::parse("gfx90a").unwrap()],
            candidates: vec![vec!["_Z1kIfEvPT_".into()], vec!["_Z1kIdEvPT_".into()]],
            choice: 0,
            tried: vec![],
        }
    }

    #[test]
    fn each_candidate_is_tried_once_and_the_reason_names_every_try() {
        let mut g = group();
        assert_eq!(g.donor_for("_Z1kIdEvPT_"), Some("_Z1kIfEvPT_"));
        assert_eq!(g.donor_for("_Z1kIfEvPT_"), None);
        assert!(g.reject("_Z1kIdEvPT_", "the plain build of the patched files on gfx90a gives occupancy 5 where it was 6"));
        assert_eq!(g.chosen().unwrap(), ["_Z1kIdEvPT_".to_string()]);
        assert!(!g.reject("_Z1kIfEvPT_", "VGPRs 40 where the tuner measured 38"));
        assert!(g.chosen().is_none());
        let why = g.reason();
        assert!(why.starts_with("the template's instantiations decided differently (void k<float>: pow2; "), "{why}");
        assert!(why.contains("with void k<float>'s pow2, void k<double> on gfx90a gives occupancy 5 where it was 6; "), "{why}");
        assert!(why.ends_with("with void k<double>'s waves-per-eu=6, void k<float>: VGPRs 40 where the tuner measured 38"), "{why}");
    }
}
