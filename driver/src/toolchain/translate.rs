//! The same CUDA compile in the other compiler's words: nvcc's flags as
//! clang's ([`clang_args`], [`clang_build_args`]) and clang's as nvcc's
//! ([`nvcc_args`]). `tune` builds each CUDA file with the compiler it was
//! not asked for too, so that `regtune measure` can time that compiler's
//! code beside the candidates; `fix --compiler nvcc` runs clang's AST over
//! an nvcc unit.
//!
//! What is translated is what reaches the device code or the source as the
//! compiler sees it: include paths, macros, forced includes, the language
//! standard, fast math, denormals, contraction and ptxas's options. The
//! rest (output, dependency files, what goes to the host compiler, the
//! other compiler's own options) is dropped. The architecture is the
//! caller's: each build is for one arch.

/// nvcc's spellings of the flags clang reads the same way, and clang's;
/// the value follows, or is joined after `=`, or (the short ones) directly.
const SAME: &[(&str, &str, &str)] = &[
    ("-I", "--include-path", "-I"),
    ("-isystem", "--system-include", "-isystem"),
    ("-D", "--define-macro", "-D"),
    ("-U", "--undefine-macro", "-U"),
    ("-include", "--pre-include", "-include"),
    ("-std", "--std", "-std="),
];

/// nvcc flags whose value is the next argument, for another tool or step.
#[rustfmt::skip]
const NVCC_WITH_VALUE: &[&str] = &[
    "-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options", "-Xnvlink",
    "--nvlink-options", "-Xarchive", "--archive-options", "-Xcudafe", "-ccbin", "--compiler-bindir", "-x", "--x", "-arch",
    "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code", "-maxrregcount", "--maxrregcount", "-o",
    "--output-file", "-odir", "--output-directory", "-MF", "--dependency-output", "-MT", "--dependency-target-name", "-MQ",
    "-keep-dir", "--keep-dir", "-rdc", "--relocatable-device-code", "-L", "--library-path", "-l", "--library", "-time",
    "--time", "-t", "--threads", "-Werror", "--Werror", "-default-stream", "--default-stream", "-diag-suppress",
    "--diag-suppress", "-split-compile", "--split-compile",
];

/// nvcc flags clang reads the same way, in clang's spelling: include
/// paths, macros, forced includes, the language standard. The rest (the
/// architectures, nvcc's and ptxas's own options, `-x cu`, what goes to
/// the host compiler) say nothing about where a kernel is in the source.
pub fn clang_args(nvcc_args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = nvcc_args.iter();
    while let Some(a) = args.next() {
        if NVCC_WITH_VALUE.contains(&a.as_str()) {
            args.next();
            continue;
        }
        let found = SAME.iter().find_map(|(short, long, clang)| {
            if a == short || a == long {
                return Some((*clang, None));
            }
            let joined = [*short, *long].iter().find_map(|f| a.strip_prefix(f).and_then(|v| v.strip_prefix('=')));
            let direct = (short.len() == 2).then(|| a.strip_prefix(short)).flatten().filter(|v| !v.is_empty());
            joined.or(direct).map(|v| (*clang, Some(v.to_string())))
        });
        let Some((clang, value)) = found else { continue };
        let Some(value) = value.or_else(|| args.next().cloned()) else { continue };
        match clang.strip_suffix('=') {
            Some(_) => out.push(format!("{clang}{value}")),
            None => out.extend(nvcc_list(&value).into_iter().flat_map(|v| [clang.to_string(), v])),
        }
    }
    out
}

/// The items of one of nvcc's list values: `-DA,B` defines A and B, and
/// `\,` is a comma of the item's own (`-DPPWI=1\,2` defines PPWI as
/// `1,2`).
fn nvcc_list(value: &str) -> Vec<String> {
    let mut items = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => items.last_mut().expect("one item").push(chars.next().expect("peeked")),
            ',' => items.push(String::new()),
            c => items.last_mut().expect("one item").push(c),
        }
    }
    items.retain(|i| !i.is_empty());
    items
}

/// The clang flags of a device build that makes of the source what the
/// nvcc flags make of it: [`clang_args`], and what changes the code:
/// `--use_fast_math` (`-ffast-math`, denormals flushed), `-ftz=true`,
/// `-fmad=false`, ptxas's options (`-Xptxas`, `-maxrregcount`). clang's
/// device code is optimized at `-O3` as nvcc's is (nvcc's `-O` is the
/// host's); `-G` (device code for the debugger) has no counterpart kept.
pub fn clang_build_args(nvcc_args: &[String]) -> Vec<String> {
    let mut out = clang_args(nvcc_args);
    let ptxas = |out: &mut Vec<String>, options: &str| {
        for o in options.split(',').filter(|o| !o.is_empty()) {
            out.extend(["-Xcuda-ptxas".to_string(), o.to_string()]);
        }
    };
    // Flags whose value (`-x cu`, `-D N`) is no flag of its own.
    let takes_value = |f: &str| NVCC_WITH_VALUE.contains(&f) || SAME.iter().any(|(short, long, _)| f == *short || f == *long);
    let mut args = nvcc_args.iter();
    while let Some(a) = args.next() {
        let (flag, joined) = match a.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let value = match (joined, flag) {
            (Some(v), _) => v,
            (None, "-ftz" | "--ftz" | "-fmad" | "--fmad") => args.next().cloned().unwrap_or_default(),
            (None, f) if takes_value(f) => args.next().cloned().unwrap_or_default(),
            (None, _) => String::new(),
        };
        match (flag, value.as_str()) {
            ("-Xptxas" | "--ptxas-options", options) => ptxas(&mut out, options),
            ("-maxrregcount" | "--maxrregcount", n) => ptxas(&mut out, &format!("--maxrregcount={n}")),
            ("-use_fast_math" | "--use_fast_math", _) => out.extend(["-ffast-math", "-fgpu-flush-denormals-to-zero"].map(String::from)),
            ("-ftz" | "--ftz", "true") => out.push("-fgpu-flush-denormals-to-zero".into()),
            ("-fmad" | "--fmad", "false") => out.push("-ffp-contract=off".into()),
            _ => {}
        }
    }
    out
}

/// The nvcc flags of a device build that makes of `source` what clang's
/// CUDA flags make of it: `-I`, `-isystem`, `-D`, `-U`, `-include`, `-std`
/// and `-O` as they are; `-ffast-math` as `--use_fast_math`, denormals
/// flushed as `-ftz=true`, `-ffp-contract=off` as `-fmad=false`,
/// `-Xcuda-ptxas` as `-Xptxas`; the language is CUDA (`-x cu`, where the
/// name does not say so). The architectures (`--cuda-gpu-arch`,
/// `--offload-arch`) are dropped: each build is for the one arch its
/// caller gives. Everything else is clang's own and dropped.
pub fn nvcc_args(clang_args: &[String], source: &std::path::Path) -> Vec<String> {
    // clang's flags that take a value, and how nvcc spells them (None: dropped).
    const WITH_VALUE: &[(&str, Option<&str>)] = &[
        ("-I", Some("-I")),
        ("-isystem", Some("-isystem")),
        ("-D", Some("-D")),
        ("-U", Some("-U")),
        ("-include", Some("-include")),
        ("-Xcuda-ptxas", Some("-Xptxas")),
        ("-x", None),
        ("-o", None),
        ("-MF", None),
        ("-MT", None),
        ("-MQ", None),
        ("-Xclang", None),
        ("-Xarch_device", None),
        ("-Xarch_host", None),
        ("-mllvm", None),
        ("-iquote", None),
        ("-idirafter", None),
        ("-imacros", None),
        ("-include-pch", None),
        ("-Xlinker", None),
        ("-target", None),
        ("--cuda-gpu-arch", None),
        ("--offload-arch", None),
    ];
    let mut out = Vec::new();
    if source.extension().is_none_or(|e| e != "cu") {
        out.extend(["-x".to_string(), "cu".to_string()]);
    }
    let mut args = clang_args.iter();
    while let Some(a) = args.next() {
        if let Some((_, nvcc)) = WITH_VALUE.iter().find(|(f, _)| a == f) {
            let value = args.next();
            if let (Some(flag), Some(value)) = (nvcc, value) {
                let value = if *flag == "-Xptxas" { value.clone() } else { nvcc_item(value) };
                out.extend([flag.to_string(), value]);
            }
            continue;
        }
        // Joined: `-Idir`, `-DN=4`, `-include=x.h` is not clang's, `--include-directory=dir`.
        let joined = ["-I", "-D", "-U"].iter().find_map(|f| a.strip_prefix(f).filter(|v| !v.is_empty()).map(|v| (*f, v)));
        let joined = joined.or_else(|| a.strip_prefix("--include-directory=").map(|v| ("-I", v)));
        let joined = joined.or_else(|| a.strip_prefix("-isystem").filter(|v| !v.is_empty()).map(|v| ("-isystem", v)));
        if let Some((flag, value)) = joined {
            out.extend([flag.to_string(), nvcc_item(value)]);
            continue;
        }
        match a.as_str() {
            "-O0" | "-O1" | "-O2" | "-O3" => out.push(a.clone()),
            "-ffast-math" => out.push("--use_fast_math".into()),
            "-fgpu-flush-denormals-to-zero" | "-fcuda-flush-denormals-to-zero" => out.push("-ftz=true".into()),
            "-ffp-contract=off" => out.push("-fmad=false".into()),
            _ if a.starts_with("-std=") => out.push(a.clone()),
            _ => {}
        }
    }
    out
}

/// One item of an nvcc list value: its commas escaped ([`nvcc_list`]).
fn nvcc_item(value: &str) -> String {
    value.replace(',', "\\,")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    #[rustfmt::skip]
    fn clang_reads_nvccs_include_paths_macros_and_standard() {
        let nvcc = strings(&[
            "-x", "cu", "-O3", "-arch=sm_90", "-I", "inc", "-Iinc2", "--include-path=inc3", "-DN=4", "-D", "M", "--define-macro=K",
            "-isystem", "sys", "-std=c++17", "--use_fast_math", "-Xptxas", "-v", "-include", "pre.h", "-UX", "--expt-relaxed-constexpr", "-Xcompiler", "-DHOST", "-o", "-Inot",
        ]);
        assert_eq!(
            clang_args(&nvcc),
            strings(&[
                "-I", "inc", "-I", "inc2", "-I", "inc3", "-D", "N=4", "-D", "M", "-D", "K", "-isystem", "sys", "-std=c++17", "-include",
                "pre.h", "-U", "X"
            ])
        );
        assert_eq!(clang_args(&strings(&["-std", "c++20"])), ["-std=c++20"]);
    }

    #[test]
    #[rustfmt::skip]
    fn clangs_build_takes_what_changes_nvccs_code() {
        let nvcc = strings(&[
            "-x", "cu", "-O2", "-arch", "sm_90", "-DN=4", "--use_fast_math", "-Xptxas", "-O3,-warn-spills", "-maxrregcount", "64",
            "-ftz=true", "-fmad=false", "-Xcompiler", "-ffast-math", "-lineinfo", "--extended-lambda", "-o", "-maxrregcount",
        ]);
        assert_eq!(
            clang_build_args(&nvcc),
            strings(&[
                "-D", "N=4", "-ffast-math", "-fgpu-flush-denormals-to-zero", "-Xcuda-ptxas", "-O3", "-Xcuda-ptxas", "-warn-spills",
                "-Xcuda-ptxas", "--maxrregcount=64", "-fgpu-flush-denormals-to-zero", "-ffp-contract=off",
            ])
        );
        // Joined values; precise settings add nothing.
        assert_eq!(
            clang_build_args(&strings(&["--maxrregcount=32", "--ptxas-options=-v", "-ftz=false", "-fmad=true", "--std=c++17"])),
            strings(&["-std=c++17", "-Xcuda-ptxas", "--maxrregcount=32", "-Xcuda-ptxas", "-v"])
        );
    }

    #[test]
    #[rustfmt::skip]
    fn nvcc_takes_clangs_paths_macros_and_what_changes_the_code() {
        let clang = strings(&[
            "-O3", "-I", "inc", "-Iinc2", "--include-directory=inc3", "-DN=4", "-D", "M", "-UX", "-isystem", "sys", "-isystemsys2",
            "-include", "pre.h", "-std=c++17", "-ffast-math", "-fgpu-flush-denormals-to-zero", "-ffp-contract=off",
            "-Xcuda-ptxas", "-v", "--cuda-gpu-arch=sm_90", "--offload-arch=sm_80", "--cuda-path=/opt/cuda", "-x", "cuda",
            "-Xclang", "-fno-x", "-fno-exceptions", "-Wall", "-nocudalib", "-mllvm", "-unroll-threshold=1", "-o", "k.o", "-c",
        ]);
        assert_eq!(
            nvcc_args(&clang, Path::new("k.hip")),
            strings(&[
                "-x", "cu", "-O3", "-I", "inc", "-I", "inc2", "-I", "inc3", "-D", "N=4", "-D", "M", "-U", "X", "-isystem", "sys",
                "-isystem", "sys2", "-include", "pre.h", "-std=c++17", "--use_fast_math", "-ftz=true", "-fmad=false", "-Xptxas", "-v",
            ])
        );
        // A .cu file is CUDA to nvcc by its name.
        assert_eq!(nvcc_args(&strings(&["-O2", "-Os"]), Path::new("dir/k.cu")), ["-O2"]);
    }

    #[test]
    fn nvccs_lists_are_split_at_commas_but_not_escaped_ones() {
        let clang = clang_args(&strings(&["-DA,B", "-DPPWI=1\\,2\\,4", "-I", "x,y", "-std=c++17"]));
        assert_eq!(clang, strings(&["-D", "A", "-D", "B", "-D", "PPWI=1,2,4", "-I", "x", "-I", "y", "-std=c++17"]));
        let nvcc = nvcc_args(&strings(&["-DPPWI=1,2", "-D", "T=a,b"]), Path::new("k.cu"));
        assert_eq!(nvcc, strings(&["-D", "PPWI=1\\,2", "-D", "T=a\\,b"]));
        assert_eq!(clang_args(&nvcc), strings(&["-D", "PPWI=1,2", "-D", "T=a,b"]));
    }

    #[test]
    fn each_direction_keeps_the_others_paths_and_macros() {
        let nvcc = strings(&["-Iinc", "-DN=4", "-std=c++17"]);
        let back = nvcc_args(&clang_build_args(&nvcc), Path::new("k.cu"));
        assert_eq!(back, strings(&["-I", "inc", "-D", "N=4", "-std=c++17"]));
    }
}
