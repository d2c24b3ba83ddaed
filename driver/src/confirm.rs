//! `regtune confirm`: the user's word on a suggestion, written to the db.
//!
//! A suggestion waits for the user where it rests on the caller (noalias,
//! launch bounds) or changes rounding. Confirmed, a measurement that found
//! it faster and identical makes the build use it at once; without one,
//! the next tune applies it. Suggestions are named as `regtune measure`
//! names them ("suggested", "suggested-2", ...).

use regtune_decisions::Db;

use crate::measure::code;
use crate::names;

/// Confirm `which` (every kernel entry's only suggestion when None) of the
/// kernel named `kernel` (its short name, its demangled name or its
/// symbol) in every entry of it that has one: a line per confirmed
/// suggestion, or why none was.
pub fn confirm(db: &mut Db, kernel: &str, which: Option<&str>) -> Result<Vec<String>, String> {
    let named = |name: &str, symbol: &str| symbol == kernel || name == kernel || names::short_name(name) == kernel;
    let mut lines = Vec::new();
    let mut offered = Vec::new();
    let mut found = false;
    for e in db.kernels.values_mut().filter(|e| named(&e.name, &e.symbol)) {
        found = true;
        let chosen = match which {
            Some(w) => (0..e.suggested.len()).find(|&i| code::suggestion_name(i) == w),
            None if e.suggested.len() == 1 => Some(0),
            None => None,
        };
        let Some(i) = chosen else {
            let listed = e.suggested.iter().enumerate();
            offered.extend(listed.map(|(i, s)| format!("{} ({})", code::suggestion_name(i), code::label(&s.transforms))));
            continue;
        };
        let label = code::label(&e.suggested[i].transforms);
        e.suggested[i].confirmed = true;
        lines.push(format!("confirmed {} of {} on {}: {label}", code::suggestion_name(i), names::short_name(&e.name), e.arch));
    }
    if !found {
        return Err(format!("no kernel named {kernel}"));
    }
    if lines.is_empty() {
        offered.dedup();
        return Err(match (which, offered.is_empty()) {
            (_, true) => format!("{kernel} has no suggestion to confirm"),
            (Some(w), false) => format!("{kernel} has no suggestion named {w}; it has {}", offered.join(", ")),
            (None, false) => format!("{kernel} has several suggestions; name one: {}", offered.join(", ")),
        });
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use regtune_decisions::{Entry, Suggestion, Transforms, Usage};

    fn db(suggestions: &[Transforms]) -> Db {
        let mut db = Db::default();
        db.insert(Entry {
            symbol: "_Z4stepPd".into(),
            arch: "sm_90".into(),
            input_hash: "0123".into(),
            name: "step(double*)".into(),
            file: "step.cu".into(),
            transforms: Transforms::default(),
            reason: None,
            suggested: suggestions
                .iter()
                .map(|t| Suggestion {
                    transforms: t.clone(),
                    usage: Usage::default(),
                    message: String::new(),
                    reasons: vec![],
                    confirmed: false,
                })
                .collect(),
            before: None,
            after: None,
            candidates: vec![],
            left_out: vec![],
            measured: None,
        });
        db
    }

    fn confirmed(db: &Db) -> Vec<bool> {
        db.kernels.values().flat_map(|e| e.suggested.iter().map(|s| s.confirmed)).collect()
    }

    #[test]
    fn a_suggestion_is_confirmed_by_the_name_measure_gives_it() {
        let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
        let shared = Transforms { warps_per_sm: Some(40), launch_bounds: Some(256), spill_to_shared: true, ..Default::default() };
        let mut two = db(&[cap.clone(), shared]);
        let lines = confirm(&mut two, "step", Some("suggested-2")).unwrap();
        assert_eq!(lines, ["confirmed suggested-2 of step on sm_90: warps-per-sm=40 + launch-bounds=256 + spill-to-shared"]);
        assert_eq!(confirmed(&two), [false, true]);
        // One suggestion needs no name; the symbol names the kernel too.
        let mut one = db(&[cap]);
        assert_eq!(confirm(&mut one, "_Z4stepPd", None).unwrap().len(), 1);
        assert_eq!(confirmed(&one), [true]);
    }

    #[test]
    fn what_cannot_be_confirmed_says_why_and_changes_nothing() {
        let cap = |c| Transforms { unroll_cap: Some(c), ..Default::default() };
        let mut two = db(&[cap(1), cap(2)]);
        assert_eq!(confirm(&mut two, "other", None).unwrap_err(), "no kernel named other");
        assert_eq!(
            confirm(&mut two, "step", None).unwrap_err(),
            "step has several suggestions; name one: suggested (unroll-cap=1), suggested-2 (unroll-cap=2)"
        );
        assert_eq!(
            confirm(&mut two, "step", Some("suggested-3")).unwrap_err(),
            "step has no suggestion named suggested-3; it has suggested (unroll-cap=1), suggested-2 (unroll-cap=2)"
        );
        assert_eq!(confirm(&mut db(&[]), "step", None).unwrap_err(), "step has no suggestion to confirm");
        assert_eq!(confirmed(&two), [false, false]);
    }
}
