use super::*;
use regtune_decisions::Occupancy;

fn said(held: &Transforms, with: &Transforms, now: &Usage, then: &Usage, all: &[Param], arch: &Arch) -> String {
    message(held, with, (now, then), all, arch, &Evidence::shipped())
}

#[test]
fn suggestions_say_what_to_verify() {
    let t = Transforms { noalias: vec![Param { index: 13, name: "g14".into() }], ..Default::default() };
    let now = Usage { vgpr: 96, occupancy: 5, ..Default::default() };
    let then = Usage { vgpr: 84, occupancy: 6, ..Default::default() };
    let gfx = Arch::parse("gfx90a").unwrap();
    assert_eq!(
        said(&t, &t, &now, &then, &[], &gfx),
        "`__restrict__` on `g14` would reach occupancy 6 (96 → 84 VGPRs) — verify that `g14` never overlaps another argument"
    );
    let with = Transforms { pow2: true, waves_per_eu: Some(6), ..t.clone() };
    assert!(said(&t, &with, &now, &then, &[], &gfx).contains("(96 → 84 VGPRs) with pow2 + waves-per-eu=6 — verify"));
}

#[test]
fn every_held_kind_says_what_it_would_change_and_what_to_check() {
    let gfx = Arch::parse("gfx90a").unwrap();
    let sm = Arch::parse("sm_90").unwrap();
    let now = Usage { vgpr: 99, occupancy: 4, sgpr_spills: 16, ..Default::default() };
    let then = Usage { vgpr: 82, occupancy: 5, ..Default::default() };
    let pow2 = Transforms { pow2: true, pow2_inexact: true, ..Default::default() };
    assert_eq!(
        said(&pow2, &pow2, &now, &then, &[], &gfx),
        "`pow(x, 2.0)` → `x * x` would reach occupancy 5 (99 → 82 VGPRs, spills 16 → 0) — ocml's `pow` is not \
         correctly rounded, so results change in the last bit (for ~20% of doubles); accept that, or build with \
         -ffast-math or -fapprox-func"
    );
    assert!(said(&pow2, &pow2, &now, &then, &[], &sm).contains("libdevice's `pow`"));
    let cap = Transforms { unroll_cap: Some(1), ..Default::default() };
    let with = Transforms { waves_per_eu: Some(6), ..cap.clone() };
    let m = said(&cap, &with, &now, &then, &[], &gfx);
    assert!(
        m.starts_with(
            "capping unrolling at 1 would reach occupancy 5 (99 → 82 VGPRs, spills 16 → 0) with waves-per-eu=6 — it gives up instruction-level parallelism"
        ),
        "{m}"
    );
    let both = said(&with, &with, &now, &then, &[], &gfx);
    assert!(both.starts_with("capping unrolling at 1 and the occupancy target waves-per-eu=6 would reach occupancy 5"), "{both}");
    // One sentence for both trades, naming each class's evidence.
    assert_eq!(both.matches("it gives up instruction-level parallelism").count(), 1, "{both}");
    assert!(both.contains("(unroll-cap: ") && both.contains("; occupancy-target: "), "{both}");
    let all: Vec<Param> = (0..3).map(|i| Param { index: i, name: format!("p{i}") }).collect();
    let restrict = Transforms { noalias: all.clone(), ..Default::default() };
    let m = said(&restrict, &restrict, &now, &then, &all, &gfx);
    assert!(m.starts_with("`__restrict__` on every pointer parameter (nvcc's --restrict) would reach"), "{m}");
    assert!(m.ends_with("verify that no two pointer arguments ever overlap"), "{m}");
    // Held for speed alone: measure decides; resting on the caller: the user first.
    let sink = Transforms { sink: true, launch_bounds: Some(256), ..Default::default() };
    let m = said(&sink, &sink, &now, &then, &[], &gfx);
    assert!(m.starts_with("moving definitions next to their first use (sink) and `__launch_bounds__(256)` would reach"), "{m}");
    assert!(m.ends_with("once you confirm it, the build uses it only if faster with the same results"), "{m}");
    let m = said(&cap, &cap, &now, &then, &[], &gfx);
    assert!(m.ends_with("times it inside your program and keeps it only if faster with the same results"), "{m}");
}

#[test]
fn each_held_kind_has_its_reason() {
    let t = Transforms { pow2: true, pow2_inexact: true, unroll_cap: Some(2), launch_bounds: Some(256), ..Default::default() };
    assert_eq!(held_reasons(&t), [Reason::ChangesRounding, Reason::TradesIlp, Reason::AssumesCaller]);
    assert_eq!(held_reasons(&Transforms { waves_per_eu: Some(6), ..Default::default() }), [Reason::TradesIlp]);
    assert_eq!(held_reasons(&Transforms { pow2: true, sink: true, ..Default::default() }), [Reason::Unproven]);
    assert!(held_reasons(&Transforms::default()).is_empty());
}

/// Every field a space can hold, each set: the transforms in [`ALL`]
/// between them claim each field, once.
fn everything() -> Transforms {
    Transforms {
        pow2: true,
        pow2_inexact: true,
        sink: true,
        unroll_cap: Some(4),
        noalias: vec![Param { index: 0, name: "a".into() }],
        launch_bounds: Some(128),
        waves_per_eu: Some(6),
        warps_per_sm: Some(32),
        ..Default::default()
    }
}

#[test]
fn each_field_has_one_home() {
    let t = everything();
    // Nothing allowed: all of it is held, and says why.
    assert_eq!(held_part(&t, &Space::default()), t);
    assert_eq!(held_reasons(&t), [Reason::Unproven, Reason::ChangesRounding, Reason::TradesIlp, Reason::AssumesCaller]);
    // Each home holds a part of its own: no two claim one field.
    let parts: Vec<Transforms> = ALL
        .iter()
        .map(|x| {
            let mut held = Transforms::default();
            x.held(&t, &Space::default(), &mut held);
            held
        })
        .collect();
    for (i, a) in parts.iter().enumerate() {
        for b in &parts[i + 1..] {
            let shared: Vec<String> = a.labels().into_iter().filter(|l| b.labels().contains(l)).collect();
            assert!(shared.is_empty(), "{shared:?} held by two transforms");
        }
    }
    // All allowed: nothing is held.
    let allowed = Space {
        pow2: true,
        pow2_inexact: true,
        sink: true,
        unroll_caps: vec![4],
        noalias: t.noalias.clone(),
        waves: vec![6, 32],
        launch_bounds: Some(128),
        occupancy: Occupancy::WarpsPerSm,
        ..Default::default()
    };
    assert!(held_part(&t, &allowed).is_empty());
}

#[test]
fn each_home_has_its_own_class_and_its_fix_module() {
    let classes: Vec<Class> = ALL.iter().map(|t| t.class()).collect();
    for (i, c) in classes.iter().enumerate() {
        assert!(!classes[i + 1..].contains(c), "{} has two homes", c.name());
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for t in ALL {
        if let Some(file) = t.spelled_by() {
            assert!(src.join(file).is_file(), "{}: no {file}", t.class().name());
        }
    }
    // Each held part says something of its own on any target.
    let t = everything();
    for arch in ["gfx90a", "sm_90"] {
        let arch = Arch::parse(arch).unwrap();
        let saying = Saying { with: &t, every_pointer: &[], arch: &arch };
        let spoken = ALL.iter().filter(|x| x.says(&t, &saying).is_some()).count();
        let holding = ALL.iter().filter(|x| x.reason(&t).is_some()).count();
        assert_eq!(spoken, holding);
        assert_eq!(spoken, ALL.len() - 1, "all but spilling, which suggests through launched_spills alone");
    }
}
