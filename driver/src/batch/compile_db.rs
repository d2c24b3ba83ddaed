//! Read a compilation database (`compile_commands.json`) and turn each HIP
//! entry into what `tune` needs: the source, its flags for a device compile,
//! and its targets.
//!
//! Both entry forms are read: `arguments` (a list) and `command` (one string,
//! shell-quoted as clang's JSONCompilationDatabase documents it, split with
//! `shlex`). Launchers in front of the compiler (ccache, sccache, distcc,
//! icecc, `env VAR=...`, `regtune cc`) are dropped, as are the flags that only
//! concern the build's outputs (`-c`, `-o`, `-MD`, `-MF`...). Relative paths
//! in include flags and the source itself resolve against the entry's
//! `directory`, so the unit compiles the same from wherever regtune runs.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum CompileDbError {
    #[error("cannot read compilation database {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("compilation database {} is not valid JSON: {source}", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("compilation database {} is not a JSON array of entries (found {found})", path.display())]
    NotAnArray { path: PathBuf, found: &'static str },
}

/// Where the database is: `-p` names a build directory or the file itself.
pub(crate) fn locate(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("compile_commands.json")
    } else {
        p.to_path_buf()
    }
}

/// One entry as the file states it, before it is understood.
#[derive(Debug, Clone, Deserialize)]
struct RawEntry {
    directory: Option<String>,
    file: Option<String>,
    arguments: Option<Vec<String>>,
    command: Option<String>,
}

/// One HIP translation unit, ready to compile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Unit {
    /// The source, absolute.
    pub file: PathBuf,
    /// Flags for the device compile: defines, include paths (absolute),
    /// language standard, optimization and code-generation flags.
    pub args: Vec<String>,
    /// Targets from the entry's own `--offload-arch` flags (may be empty).
    pub archs: Vec<String>,
    /// The entry's `directory`.
    pub directory: PathBuf,
    /// Position in the database, from 1, for messages.
    pub entry: usize,
    /// Compiled by nvcc (this one): `args` are nvcc's, and nvcc's code is tuned.
    pub nvcc: Option<PathBuf>,
}

/// What one entry turned out to be.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Hip(Unit),
    /// Not a HIP translation unit (C, C++, CUDA for NVPTX...): skipped.
    NotHip,
    /// The entry cannot be used; the message names the cause.
    Bad {
        entry: usize,
        file: String,
        message: String,
    },
}

/// Read the database: one result per entry. Errors here are about the file
/// as a whole; a bad entry is a [`Parsed::Bad`] and the rest still count.
pub(crate) fn load(path: &Path) -> Result<Vec<Parsed>, CompileDbError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompileDbError::Read { path: path.into(), source })?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|source| CompileDbError::Json { path: path.into(), source })?;
    let serde_json::Value::Array(entries) = doc else {
        let found = match doc {
            serde_json::Value::Object(_) => "an object",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(CompileDbError::NotAnArray { path: path.into(), found });
    };
    Ok(entries.into_iter().enumerate().map(|(i, v)| parse_entry(i + 1, v)).collect())
}

fn parse_entry(entry: usize, value: serde_json::Value) -> Parsed {
    let bad = |file: &str, message: String| Parsed::Bad { entry, file: file.to_string(), message };
    let raw: RawEntry = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => return bad("", format!("not an entry: {e}")),
    };
    let file = raw.file.clone().unwrap_or_default();
    let Some(directory) = raw.directory.filter(|d| !d.is_empty()) else {
        return bad(&file, "has no `directory`".into());
    };
    if file.is_empty() {
        return bad("", "has no `file`".into());
    }
    let argv = match (raw.arguments, raw.command) {
        (Some(a), _) if !a.is_empty() => a,
        (_, Some(c)) => match shlex::split(&c) {
            Some(a) if !a.is_empty() => a,
            Some(_) => return bad(&file, "has an empty `command`".into()),
            None => return bad(&file, "has a `command` with an unbalanced quote or a trailing backslash".into()),
        },
        _ => return bad(&file, "has neither `arguments` nor `command`".into()),
    };
    let directory = PathBuf::from(directory);
    let source = absolute(&directory, &file);
    if let Some((nvcc, args, archs)) = understand_nvcc(&argv, &directory, &source) {
        return Parsed::Hip(Unit { file: source, args, archs, directory, entry, nvcc: Some(nvcc) });
    }
    match understand(&argv, &directory, &source) {
        Ok(Some((args, archs))) => Parsed::Hip(Unit { file: source, args, archs, directory, entry, nvcc: None }),
        Ok(None) => Parsed::NotHip,
        Err(message) => bad(&file, message),
    }
}

/// `path` against `dir` unless it is absolute; `.` parts dropped.
fn absolute(dir: &Path, path: &str) -> PathBuf {
    let joined = dir.join(path);
    let mut out = PathBuf::new();
    for c in joined.components() {
        if c != std::path::Component::CurDir {
            out.push(c);
        }
    }
    out
}

/// `a/b/../c` as `a/c`, for reading and matching paths; compiles keep the
/// path as the entry wrote it (`b` may be a symbolic link).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir if matches!(out.components().next_back(), Some(std::path::Component::Normal(_))) => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Words in front of the compiler that only run it.
const LAUNCHERS: &[&str] = &["ccache", "sccache", "distcc", "icecc", "buildcache", "env"];

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `NAME=value`, as `env` takes it.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The compiler and its arguments, launchers removed; the compiler is None
/// when the launcher is itself the compiler (`regtune cc -c a.hip`).
fn strip_launchers<'a>(argv: &'a [String], source: &Path, directory: &Path) -> (Option<&'a str>, &'a [String]) {
    let mut rest = argv;
    while let Some(word) = rest.first() {
        if LAUNCHERS.contains(&base(word)) || is_assignment(word) {
            rest = &rest[1..];
        } else if base(word) == "regtune" {
            rest = &rest[1..];
            // Its subcommand (`cc`, `c++`...), if it has one.
            if rest.first().is_some_and(|w| !w.starts_with('-') && !w.contains('.')) {
                rest = &rest[1..];
            }
        } else {
            break;
        }
    }
    match rest.first() {
        Some(w) if !w.starts_with('-') && absolute(directory, w) != source => (Some(w.as_str()), &rest[1..]),
        _ => (None, rest),
    }
}

/// Flags whose value is the next word.
const SEPARATE_VALUE: &[&str] = &[
    "-o",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-cxx-isystem",
    "-F",
    "-x",
    "-Xclang",
    "-Xarch_device",
    "-Xarch_host",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xoffload-linker",
    "-Xcuda-ptxas",
    "-Xcuda-fatbinary",
    "-mllvm",
    "-target",
    "-arch",
    "-L",
    "-l",
    "-framework",
    "-include-pch",
    "-working-directory",
    "-serialize-diagnostics",
    "-dependency-file",
    "-dependency-dot",
    "--sysroot",
    "--include-directory",
    "--offload-arch",
    "--cuda-gpu-arch",
    "--amdgpu-target",
    "--param",
    "-z",
    "-u",
    "-e",
    "-T",
];

/// Flags (exact) that only shape the build's outputs, or that regtune sets
/// itself for a device-only compile: dropped.
const DROPPED: &[&str] = &[
    "-c",
    "-S",
    "-E",
    "-M",
    "-MM",
    "-MD",
    "-MMD",
    "-MP",
    "-MG",
    "-MV",
    "-pipe",
    "-v",
    "-###",
    "-shared",
    "-static",
    "-rdynamic",
    "-pie",
    "-no-pie",
    "--hip-link",
    "--cuda-host-only",
    "--cuda-device-only",
    "--offload-host-only",
    "--offload-device-only",
    "--cuda-compile-host-device",
    "--no-gpu-bundle-output",
    "--gpu-bundle-output",
    "-save-temps",
    "--save-temps",
    "-emit-llvm",
    "-fsyntax-only",
    "-nogpulib",
    "-nogpuinc",
];

/// Separate-value flags dropped with their value.
const DROPPED_WITH_VALUE: &[&str] = &[
    "-o",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-Xlinker",
    "-Xoffload-linker",
    "-Xarch_host",
    "-L",
    "-l",
    "-framework",
    "-include-pch",
    "-working-directory",
    "-serialize-diagnostics",
    "-dependency-file",
    "-dependency-dot",
    "-z",
    "-u",
    "-e",
    "-T",
];

/// Prefixes of joined flags that are dropped: outputs, linking, and where
/// the toolchain lives (regtune brings its own).
const DROPPED_PREFIXES: &[&str] = &[
    "-o",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-Wl,",
    "-L",
    "-l",
    "-save-temps=",
    "-ftime-trace",
    "-fuse-ld=",
    "--rocm-path=",
    "--hip-path=",
    "--rocm-device-lib-path=",
    "--hip-device-lib-path=",
    "-fcrash-diagnostics-dir=",
];

/// Flags whose value is a path that resolves against the entry's directory,
/// longest first so `-isystem` is not read as `-i` + `system`.
const PATH_FLAGS: &[&str] = &[
    "--include-directory=",
    "-iwithprefixbefore",
    "-iwithprefix",
    "-cxx-isystem",
    "-idirafter",
    "-isysroot",
    "-isystem",
    "-iprefix",
    "-imacros",
    "-include",
    "-iquote",
    "--sysroot=",
    "--sysroot",
    "--include-directory",
    "-I",
    "-F",
];

/// Of those, the ones naming a file clang also looks for on the include
/// path: resolved only when the file is there.
const SEARCHED_FILES: &[&str] = &["-include", "-imacros"];

/// A command's device-compile flags and its targets.
type DeviceFlags = (Vec<String>, Vec<String>);

/// The device-compile flags and targets of a compile command, or None when
/// it does not compile HIP. Errors name the flag at fault.
fn understand(argv: &[String], directory: &Path, source: &Path) -> Result<Option<DeviceFlags>, String> {
    let argv = expand_response_files(argv, directory, 0)?;
    let (compiler, rest) = strip_launchers(&argv, source, directory);
    let mut args = Vec::new();
    let mut archs: Vec<String> = Vec::new();
    let mut language: Option<String> = None;
    let mut i = 0;
    while i < rest.len() {
        let word = rest[i].as_str();
        let takes_value = SEPARATE_VALUE.contains(&word);
        let value = if takes_value {
            Some(rest.get(i + 1).ok_or_else(|| format!("`{word}` at the end of the command has no value"))?.as_str())
        } else {
            None
        };
        i += if takes_value { 2 } else { 1 };

        // The source itself, and any other input: regtune passes its own.
        if !word.starts_with('-') || word == "-" {
            continue;
        }
        if DROPPED.contains(&word) || DROPPED_WITH_VALUE.contains(&word) {
            continue;
        }
        if let Some(list) = arch_value(word, value) {
            archs.extend(list.split(',').filter(|a| !a.is_empty()).map(str::to_string));
            continue;
        }
        if let Some(gone) = word.strip_prefix("--no-offload-arch=") {
            if gone == "all" {
                archs.clear();
            } else {
                archs.retain(|a| a != gone);
            }
            continue;
        }
        if word == "-x" {
            language = value.map(str::to_string);
            continue;
        }
        if let Some(l) = word.strip_prefix("-x").filter(|l| !l.is_empty()) {
            language = Some(l.to_string());
            continue;
        }
        if DROPPED_PREFIXES.iter().any(|p| word.starts_with(p)) {
            continue;
        }
        if let Some(flag) = PATH_FLAGS.iter().find(|f| word.starts_with(*f)) {
            resolve_path_flag(flag, word, value, directory, &mut args);
            continue;
        }
        args.push(word.to_string());
        args.extend(value.map(str::to_string));
    }
    if archs.iter().any(|a| a == "native") {
        return Err("uses `--offload-arch=native`, which needs the build machine's GPU; pass --offload-arch to regtune".into());
    }
    let mut seen = std::collections::HashSet::new();
    archs.retain(|a| seen.insert(a.clone()));
    let extension = source.extension().and_then(|e| e.to_str()).unwrap_or_default();
    let by_hipcc = compiler.is_some_and(|c| base(c).starts_with("hipcc"));
    let hip = match language.as_deref() {
        Some("hip") => true,
        Some(_) => false,
        None => matches!(extension, "hip" | "cu") || (by_hipcc && matches!(extension, "cpp" | "cc" | "cxx" | "C")),
    };
    Ok(hip.then_some((args, archs)))
}

/// An nvcc command (launchers dropped): the nvcc, its flags for a device
/// build (outputs dropped, `-I` paths made absolute against the entry's
/// directory, the source left out) and the real architectures it builds
/// (`-arch=sm_90`, `-gencode arch=compute_90,code=[sm_90,compute_90]`,
/// `--gpu-architecture`, `-code`). None when the command is not nvcc's.
fn understand_nvcc(argv: &[String], directory: &Path, source: &Path) -> Option<(PathBuf, Vec<String>, Vec<String>)> {
    let (compiler, rest) = strip_launchers(argv, source, directory);
    let compiler = compiler.filter(|c| base(c).starts_with("nvcc"))?;
    let nvcc = if compiler.contains('/') { absolute(directory, compiler) } else { PathBuf::from(compiler) };
    let mut args = Vec::new();
    let mut words = crate::gpu::nvptx::nvcc::compile_args(rest).into_iter();
    while let Some(word) = words.next() {
        let path_flag = ["-I", "-isystem", "--include-path", "--system-include"].iter().find(|f| word == **f || word.starts_with(*f));
        match path_flag {
            Some(flag) if word == *flag => {
                args.push(word.clone());
                args.extend(words.next().map(|p| absolute(directory, &p).display().to_string()));
            }
            Some(flag) => {
                let value = word[flag.len()..].trim_start_matches('=');
                args.push(format!("{flag}{}", absolute(directory, value).display()));
            }
            // The source and other inputs: regtune passes its own.
            None if !word.starts_with('-') && lexical(&absolute(directory, &word)) == lexical(source) => {}
            None => args.push(word),
        }
    }
    let archs = nvcc_archs(&args);
    Some((nvcc, args, archs))
}

/// The real architectures (`sm_XX`) nvcc flags build SASS for, in order.
pub(crate) fn nvcc_archs(args: &[String]) -> Vec<String> {
    let mut archs: Vec<String> = Vec::new();
    let mut push = |list: &str| {
        for a in list.trim_matches(|c| c == '[' || c == ']' || c == '"').split(',') {
            let a = a.trim().trim_matches(|c| c == '[' || c == ']');
            let a = a.strip_prefix("code=").unwrap_or(a);
            if a.starts_with("sm_") && !archs.iter().any(|x| x == a) {
                archs.push(a.to_string());
            }
        }
    };
    let mut words = args.iter().peekable();
    while let Some(w) = words.next() {
        let (flag, joined) = w.split_once('=').map_or((w.as_str(), None), |(f, v)| (f, Some(v.to_string())));
        if !matches!(flag, "-arch" | "--gpu-architecture" | "-code" | "--gpu-code" | "-gencode" | "--generate-code") {
            continue;
        }
        let value = match joined {
            Some(v) => v,
            None => match words.next() {
                Some(v) => v.clone(),
                None => continue,
            },
        };
        if matches!(flag, "-gencode" | "--generate-code") {
            // arch=compute_90,code=[sm_90,compute_90] (or code=sm_90)
            if let Some(code) = value.split_once("code=").map(|(_, c)| c) {
                push(code);
            }
        } else {
            push(&value);
        }
    }
    archs
}

/// The target list of `--offload-arch=gfx90a[,gfx1100]` and its aliases.
fn arch_value<'a>(word: &'a str, value: Option<&'a str>) -> Option<&'a str> {
    for flag in ["--offload-arch", "--cuda-gpu-arch", "--amdgpu-target"] {
        if word == flag {
            return value;
        }
        if let Some(v) = word.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
    }
    None
}

fn resolve_path_flag(flag: &str, word: &str, value: Option<&str>, directory: &Path, args: &mut Vec<String>) {
    let resolve = |p: &str| {
        let path = absolute(directory, p);
        if SEARCHED_FILES.contains(&flag) && !path.exists() {
            p.to_string()
        } else {
            path.display().to_string()
        }
    };
    match value {
        // `-I dir`, `-include file`...
        Some(v) if word == flag.trim_end_matches('=') => {
            args.push(word.to_string());
            args.push(resolve(v));
        }
        _ => {
            let joined = &word[flag.len()..];
            if joined.is_empty() {
                args.push(word.to_string());
            } else {
                args.push(format!("{flag}{}", resolve(joined)));
            }
        }
    }
}

/// `@file` arguments replaced by the file's words (shell-quoted), as clang
/// reads them; relative to the entry's directory.
fn expand_response_files(argv: &[String], directory: &Path, depth: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for word in argv {
        let Some(name) = word.strip_prefix('@').filter(|n| !n.is_empty()) else {
            out.push(word.clone());
            continue;
        };
        if depth > 8 {
            return Err(format!("response file `{name}` nests too deep"));
        }
        let path = absolute(directory, name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read response file {}: {e}", path.display()))?;
        let words = shlex::split(&text).ok_or_else(|| format!("response file {} has an unbalanced quote", path.display()))?;
        out.extend(expand_response_files(&words, directory, depth + 1)?);
    }
    Ok(out)
}

#[cfg(test)]
mod nvcc_tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_nvcc_entry_keeps_nvccs_flags_and_its_real_architectures() {
        let dir = Path::new("/build");
        let argv = strings(&[
            "ccache",
            "/usr/local/cuda/bin/nvcc",
            "-Iinc",
            "-isystem",
            "/opt/x",
            "-O3",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90,code=[sm_90,compute_90]",
            "-c",
            "../src/k.cu",
            "-o",
            "k.o",
            "-MD",
            "-MF",
            "k.d",
        ]);
        let (nvcc, args, archs) = understand_nvcc(&argv, dir, Path::new("/src/k.cu")).unwrap();
        assert_eq!(nvcc, Path::new("/usr/local/cuda/bin/nvcc"));
        assert_eq!(
            args,
            strings(&[
                "-I/build/inc",
                "-isystem",
                "/opt/x",
                "-O3",
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode=arch=compute_90,code=[sm_90,compute_90]"
            ])
        );
        assert_eq!(archs, ["sm_80", "sm_90"]);
        assert_eq!(nvcc_archs(&strings(&["-arch=sm_90a"])), ["sm_90a"]);
        assert_eq!(nvcc_archs(&strings(&["-arch", "compute_90"])), Vec::<String>::new());
        assert!(understand_nvcc(&strings(&["clang++", "-c", "k.cu"]), dir, Path::new("/build/k.cu")).is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        shlex::split(s).expect("balanced")
    }

    fn hip(argv: &str) -> (Vec<String>, Vec<String>) {
        let dir = Path::new("/build");
        understand(&words(argv), dir, &absolute(dir, "../src/k.hip")).expect("understood").expect("HIP")
    }

    #[test]
    fn output_and_dependency_flags_are_dropped_and_the_rest_kept() {
        let (args, archs) = hip("/usr/bin/clang++ -DN=4 -I../include -isystem /opt/x -std=c++17 -O2 -ffast-math -x hip \
             --offload-arch=gfx90a -MD -MT k.o -MF k.o.d -o k.o -c ../src/k.hip");
        assert_eq!(args, ["-DN=4", "-I/build/../include", "-isystem", "/opt/x", "-std=c++17", "-O2", "-ffast-math"].map(String::from));
        assert_eq!(archs, ["gfx90a"]);
    }

    #[test]
    fn relocatable_device_code_is_kept_as_the_wrapper_keeps_it() {
        let (args, _) = hip("clang++ -O3 -x hip --offload-arch=gfx90a -fgpu-rdc -c ../src/k.hip -o k.o");
        assert_eq!(args, ["-O3", "-fgpu-rdc"]);
    }

    #[test]
    fn launchers_are_stripped() {
        for launcher in ["ccache", "/usr/bin/sccache", "distcc", "env CCACHE_DIR=/tmp ccache", "regtune cc"] {
            let (args, _) = hip(&format!("{launcher} clang++ -DA -c ../src/k.hip"));
            assert_eq!(args, ["-DA"], "{launcher}");
        }
        // The wrapper as the compiler itself.
        let (args, _) = hip("regtune cc -DA -c ../src/k.hip");
        assert_eq!(args, ["-DA"]);
    }

    #[test]
    fn targets_come_from_every_spelling_and_are_deduplicated() {
        let (_, archs) = hip("clang++ --offload-arch=gfx90a,gfx1100 --offload-arch gfx942 --cuda-gpu-arch=gfx90a -c ../src/k.hip");
        assert_eq!(archs, ["gfx90a", "gfx1100", "gfx942"]);
        let (_, archs) = hip("clang++ --offload-arch=gfx90a --offload-arch=gfx1100 --no-offload-arch=gfx90a -c ../src/k.hip");
        assert_eq!(archs, ["gfx1100"]);
    }

    #[test]
    fn quoted_defines_survive_the_command_form() {
        let (args, _) = hip(r#"clang++ "-DNAME=\"a b\"" -D'X=1 2' -c ../src/k.hip"#);
        assert_eq!(args, ["-DNAME=\"a b\"", "-DX=1 2"]);
    }

    #[test]
    fn only_hip_units_are_tuned() {
        let dir = Path::new("/b");
        let is_hip = |argv: &str, file: &str| understand(&words(argv), dir, &absolute(dir, file)).unwrap().is_some();
        assert!(is_hip("clang++ -c a.cu", "a.cu"));
        assert!(is_hip("clang++ -x hip -c a.cpp", "a.cpp"));
        assert!(is_hip("/opt/rocm/bin/hipcc -c a.cpp", "a.cpp"));
        assert!(!is_hip("clang++ -c a.cpp", "a.cpp"));
        assert!(!is_hip("gcc -x c -c a.hip", "a.hip"));
    }

    #[test]
    fn native_targets_and_dangling_flags_are_errors() {
        let dir = Path::new("/b");
        let e = understand(&words("clang++ --offload-arch=native -c a.hip"), dir, Path::new("/b/a.hip")).unwrap_err();
        assert!(e.contains("native"), "{e}");
        let e = understand(&words("clang++ -c a.hip -I"), dir, Path::new("/b/a.hip")).unwrap_err();
        assert_eq!(e, "`-I` at the end of the command has no value");
    }

    #[test]
    fn entries_name_what_is_missing() {
        let msg = |v: serde_json::Value| match parse_entry(3, v) {
            Parsed::Bad { message, .. } => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(msg(serde_json::json!({"file": "a.hip", "command": "c"})), "has no `directory`");
        assert_eq!(msg(serde_json::json!({"directory": "/b", "file": "a.hip"})), "has neither `arguments` nor `command`");
        assert!(msg(serde_json::json!({"directory": "/b", "file": "a.hip", "command": "clang 'x"})).contains("unbalanced"));
        assert!(msg(serde_json::json!(42)).starts_with("not an entry"));
    }
}
