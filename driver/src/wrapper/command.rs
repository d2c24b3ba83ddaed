//! Understand a hipcc / `clang++ -x hip` command line: what it compiles, in
//! which language, for which GPUs, with which flags, and what it produces.
//!
//! Nothing here changes the command. Response files are expanded to read
//! it; the wrapper still hands the compiler the original arguments. The
//! flags that decide device code (`device_args`) are what `regtune tune`
//! takes after `--`, so a tuner reading `compile_commands.json` that filters
//! each command through [`CompileCommand::parse`] records the same input
//! hashes a build through the wrapper looks up.

use std::path::Path;

/// Options whose value is the next argument (`-I dir`, `-MF file`...).
/// Their joined forms (`-Idir`, `-MFfile`) are single arguments anyway.
const SEPARATE_VALUE: &[&str] = &[
    "-o",
    "-x",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-isysroot",
    "--sysroot",
    "-ivfsoverlay",
    "-include-pch",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-Xclang",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xcuda-fatbinary",
    "-Xcuda-ptxas",
    "-Xoffload-linker",
    "-Xopenmp-target",
    "-mllvm",
    "-L",
    "-l",
    "-T",
    "-u",
    "-z",
    "-e",
    "-B",
    "-arch",
    "-target",
    "-rpath",
    "-framework",
    "-serialize-diagnostics",
    "-dependency-file",
    "-working-directory",
    "--offload-arch",
    "--rocm-path",
    "--hip-path",
    "--rocm-device-lib-path",
    "-Xarch_host",
    "-Xarch_device",
    "-F",
    "-cxx-isystem",
    "--param",
    "-dependency-dot",
    "--include-directory",
    "--cuda-gpu-arch",
    "--amdgpu-target",
];

/// Flags that never reach `device_args`, beyond outputs, dependency files,
/// targets and linking: regtune sets up the device compile itself. The same
/// set `regtune batch` drops from compile_commands.json, so both record and
/// look up the same input hashes for a CMake build.
const NOT_DEVICE: &[&str] = &["-nogpulib", "-nogpuinc", "--no-gpu-bundle-output", "--gpu-bundle-output", "-pipe"];
const NOT_DEVICE_PREFIXES: &[&str] =
    &["--rocm-path=", "--hip-path=", "--rocm-device-lib-path=", "--hip-device-lib-path=", "-fcrash-diagnostics-dir=", "-ftime-trace"];

/// The language an input is compiled as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Hip,
    /// `.cu` (or `-x cuda`): HIP to hipcc, CUDA to clang.
    Cuda,
    Cxx,
    C,
    /// Already preprocessed (`.i`, `.ii`, `.hipi`, `-x hip-cpp-output`).
    Preprocessed,
    Asm,
    /// Objects, archives, shared libraries: linker inputs.
    Object,
}

impl Lang {
    fn of_extension(path: &str) -> Lang {
        let ext = Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_default();
        match ext {
            "hip" => Lang::Hip,
            "cu" | "cuh" => Lang::Cuda,
            "c" => Lang::C,
            "C" | "cc" | "cp" | "cpp" | "CPP" | "cxx" | "c++" => Lang::Cxx,
            "i" | "ii" | "hipi" | "cui" => Lang::Preprocessed,
            "s" | "S" | "sx" | "asm" => Lang::Asm,
            _ => Lang::Object,
        }
    }

    /// The language `-x NAME` selects; `None` for `-x none` (by extension again).
    fn of_x(name: &str) -> Option<Lang> {
        Some(match name {
            "none" => return None,
            "hip" => Lang::Hip,
            "cuda" | "cu" => Lang::Cuda,
            "c++" | "c++-header" => Lang::Cxx,
            "c" | "c-header" => Lang::C,
            "assembler" | "assembler-with-cpp" => Lang::Asm,
            n if n.ends_with("cpp-output") => Lang::Preprocessed,
            _ => Lang::Object,
        })
    }
}

/// One input file of the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub path: String,
    pub lang: Lang,
    /// Its language was set by `-x`, not by its extension.
    pub explicit_lang: bool,
}

/// What the command produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Compile (if needed) and link: no `-c`, `-S`, `-E`...
    Link,
    /// `-c`: objects.
    Compile,
    /// `-S`: assembly.
    Assemble,
    /// `-E`, `-M`, `-MM`: preprocessor output or dependencies only.
    Preprocess,
    /// `-fsyntax-only`.
    SyntaxOnly,
    /// No inputs at all: `--version`, `-print-*`, `-dumpversion`...
    Info,
}

/// A compiler command line, understood.
#[derive(Debug, Clone, Default)]
pub struct CompileCommand {
    /// The arguments with response files expanded (no compiler name).
    pub args: Vec<String>,
    pub inputs: Vec<Input>,
    pub action: Option<Action>,
    /// `--offload-arch` values in order, lists split, duplicates dropped.
    pub offload_archs: Vec<String>,
    /// The separate form `--offload-arch A` appears (clang knows only `=`).
    pub separate_offload_arch: bool,
    pub host_only: bool,
    pub device_only: bool,
    /// `-fgpu-rdc`: each source's device code is bitcode that the link
    /// step device-links; the flag stays in `device_args` (the tuner
    /// links, and the input hash covers it).
    pub relocatable_device_code: bool,
    pub emit_llvm: bool,
    pub save_temps: bool,
    /// `-###`: print the jobs only.
    pub dry_run: bool,
    /// The user's flags that decide device code: everything but inputs,
    /// outputs, the action, offload targets, dependency-file and link flags.
    pub device_args: Vec<String>,
    /// The command reads a source from stdin (`-`).
    pub reads_stdin: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("response file {path}: {detail}")]
    ResponseFile { path: String, detail: String },
}

impl CompileCommand {
    /// Understand `args` (the compiler's arguments, without its name).
    pub fn parse(args: &[String]) -> Result<CompileCommand, CommandError> {
        let mut expanded = Vec::new();
        expand_response_files(args, &mut expanded, 0)?;
        let mut cmd = CompileCommand { args: expanded.clone(), ..Default::default() };
        let mut lang: Option<Lang> = None;
        let mut action = None;
        let mut deps_only = false;
        let mut i = 0;
        let mut only_inputs = false;
        while i < expanded.len() {
            let a = expanded[i].as_str();
            let next = expanded.get(i + 1).map(String::as_str);
            if only_inputs || !a.starts_with('-') || a == "-" {
                cmd.push_input(a, lang);
                i += 1;
                continue;
            }
            // How many arguments this option takes, and whether they reach the device compile.
            let width = if takes_separate_value(a) && next.is_some() { 2 } else { 1 };
            let value = next.unwrap_or_default();
            let joined = |prefixes: &[&str]| prefixes.iter().any(|p| a.starts_with(p));
            let device = match a {
                "--" => {
                    only_inputs = true;
                    false
                }
                "-x" => {
                    lang = Lang::of_x(value);
                    false
                }
                _ if a.len() > 2 && a.starts_with("-x") => {
                    lang = Lang::of_x(&a[2..]);
                    false
                }
                "-c" | "-S" | "-E" | "-fsyntax-only" => {
                    action = Some(match a {
                        "-c" => Action::Compile,
                        "-S" => Action::Assemble,
                        "-E" => Action::Preprocess,
                        _ => Action::SyntaxOnly,
                    });
                    false
                }
                "-M" | "-MM" => {
                    deps_only = true;
                    false
                }
                // Dependency files and the output name.
                "-MD" | "-MMD" | "-MP" | "-MG" | "-MV" => false,
                _ if joined(&["-MF", "-MT", "-MQ", "-MJ", "-Wp,-M"]) => false,
                _ if a.starts_with("-o") && !a.starts_with("-objcmt") && a != "-object" => false,
                // Offload targets: the wrapper passes them one by one.
                "--offload-arch" | "--cuda-gpu-arch" | "--amdgpu-target" => {
                    cmd.separate_offload_arch = true;
                    cmd.add_archs(value);
                    false
                }
                _ if joined(&["--offload-arch=", "-offload-arch=", "--cuda-gpu-arch=", "--amdgpu-target="]) => {
                    cmd.add_archs(a.split_once('=').map(|(_, v)| v).unwrap_or_default());
                    false
                }
                _ if a.starts_with("--no-offload-arch=") => {
                    let gone = a.split_once('=').map(|(_, v)| v).unwrap_or_default();
                    cmd.offload_archs.retain(|x| gone != "all" && !gone.split(',').any(|g| g == x));
                    false
                }
                "--cuda-host-only" | "--offload-host-only" => {
                    cmd.host_only = true;
                    false
                }
                "--cuda-device-only" | "--offload-device-only" => {
                    cmd.device_only = true;
                    false
                }
                "--cuda-compile-host-device" | "--offload-host-device" => {
                    (cmd.host_only, cmd.device_only) = (false, false);
                    false
                }
                "-fgpu-rdc" | "-fno-gpu-rdc" => {
                    cmd.relocatable_device_code = a == "-fgpu-rdc";
                    true
                }
                _ if NOT_DEVICE.contains(&a) || joined(NOT_DEVICE_PREFIXES) => false,
                "-emit-llvm" => {
                    cmd.emit_llvm = true;
                    false
                }
                _ if joined(&["-save-temps", "--save-temps"]) => {
                    cmd.save_temps = true;
                    false
                }
                "-###" => {
                    cmd.dry_run = true;
                    false
                }
                "-v" | "--verbose" => false,
                // Link-only flags, and flags for the host side alone.
                "-Xlinker" | "-T" | "-u" | "-z" | "-e" | "-rpath" | "-framework" | "-shared" | "-static" | "-rdynamic" | "-pie"
                | "-no-pie" | "-nostdlib" | "-nodefaultlibs" | "-nostartfiles" | "--hip-link" | "-Xarch_host" => false,
                _ if joined(&["-l", "-L", "-Wl,", "-fuse-ld=", "-Xoffload-linker"]) => false,
                _ => true,
            };
            if device {
                cmd.device_args.extend(expanded[i..(i + width).min(expanded.len())].iter().cloned());
            }
            i += width;
        }
        cmd.action = Some(match action {
            _ if cmd.inputs.is_empty() => Action::Info,
            Some(a) => a,
            None if deps_only => Action::Preprocess,
            None => Action::Link,
        });
        Ok(cmd)
    }

    fn push_input(&mut self, path: &str, lang: Option<Lang>) {
        if path == "-" {
            self.reads_stdin = true;
        }
        self.inputs.push(Input {
            path: path.to_string(),
            lang: lang.unwrap_or_else(|| Lang::of_extension(path)),
            explicit_lang: lang.is_some(),
        });
    }

    fn add_archs(&mut self, list: &str) {
        for a in list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            if !self.offload_archs.iter().any(|x| x == a) {
                self.offload_archs.push(a.to_string());
            }
        }
    }

    /// Does the command choose an optimization level (`-O2`, `-Os`, `-O`...)?
    pub(crate) fn sets_optimization(&self) -> bool {
        self.device_args.iter().any(|a| a.starts_with("-O") && a.len() <= 6)
    }

    pub(crate) fn action(&self) -> Action {
        self.action.unwrap_or(Action::Info)
    }

    /// The HIP sources, given whether the compiler takes `.cu` as HIP (hipcc does).
    pub(crate) fn hip_sources(&self, cu_is_hip: bool) -> Vec<&Input> {
        self.inputs.iter().filter(|i| i.lang == Lang::Hip || (cu_is_hip && i.lang == Lang::Cuda && !i.explicit_lang)).collect()
    }

    /// Why regtune leaves this command to the compiler as it is; `None`
    /// when it builds device code regtune can tune.
    pub(crate) fn untouched_because(&self, cu_is_hip: bool) -> Option<&'static str> {
        Some(match self.action() {
            Action::Info => "no input files",
            Action::Assemble | Action::Preprocess | Action::SyntaxOnly => "no object is built",
            _ if self.hip_sources(cu_is_hip).is_empty() => "no HIP source",
            _ if self.host_only => "host-only compile",
            _ if self.emit_llvm => "-emit-llvm builds no code object",
            _ if self.save_temps => "-save-temps",
            _ if self.dry_run => "-###",
            _ if self.reads_stdin => "source on stdin",
            _ => return None,
        })
    }
}

/// Does option `a` take the next argument as its value (`-I dir`)?
pub(crate) fn takes_separate_value(a: &str) -> bool {
    SEPARATE_VALUE.contains(&a) || (a.starts_with("-Xarch_") && a.len() > "-Xarch_".len())
}

/// Replace every `@file` with the arguments it holds (GNU quoting, as
/// clang reads them on Linux), recursively. A file that cannot be read
/// stays as it is, as clang leaves it.
fn expand_response_files(args: &[String], out: &mut Vec<String>, depth: usize) -> Result<(), CommandError> {
    for a in args {
        let Some(path) = a.strip_prefix('@').filter(|p| !p.is_empty()) else {
            out.push(a.clone());
            continue;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            out.push(a.clone());
            continue;
        };
        if depth > 20 {
            return Err(CommandError::ResponseFile { path: path.into(), detail: "nested more than 20 deep".into() });
        }
        let words = split_gnu(&text).map_err(|detail| CommandError::ResponseFile { path: path.into(), detail: detail.to_string() })?;
        expand_response_files(&words, out, depth + 1)?;
    }
    Ok(())
}

/// Split a response file the way GNU tools do: whitespace separates,
/// single quotes are literal, double quotes and backslashes escape.
pub(crate) fn split_gnu(text: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(n) => word.push(n),
                        None => return Err("unterminated single quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(n) => word.push(n),
                            None => return Err("unterminated double quote"),
                        },
                        Some(n) => word.push(n),
                        None => return Err("unterminated double quote"),
                    }
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> CompileCommand {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        CompileCommand::parse(&args).unwrap()
    }

    #[test]
    fn cmake_style_compile_keeps_only_device_flags() {
        let c =
            parse("-DNDEBUG -I/inc -isystem /sys -O3 -std=gnu++17 -x hip --offload-arch=gfx90a -MD -MT k.o -MF k.o.d -o k.o -c /src/k.hip");
        assert_eq!(c.action(), Action::Compile);
        assert_eq!(c.offload_archs, ["gfx90a"]);
        assert_eq!(c.device_args, ["-DNDEBUG", "-I/inc", "-isystem", "/sys", "-O3", "-std=gnu++17"]);
        assert_eq!(c.inputs, [Input { path: "/src/k.hip".into(), lang: Lang::Hip, explicit_lang: true }]);
        assert_eq!(c.untouched_because(true), None);
    }

    #[test]
    fn offload_arch_forms_are_all_understood() {
        let c = parse("--offload-arch=gfx90a --offload-arch gfx1100,gfx942 --offload-arch=gfx90a -c k.hip");
        assert_eq!(c.offload_archs, ["gfx90a", "gfx1100", "gfx942"]);
        assert!(c.separate_offload_arch);
        assert!(c.device_args.is_empty(), "{:?}", c.device_args);
    }

    #[test]
    fn languages_follow_x_and_extensions() {
        let c = parse("-c a.hip b.cu c.cpp -x hip d.cpp -x none e.c f.o");
        let langs: Vec<Lang> = c.inputs.iter().map(|i| i.lang).collect();
        assert_eq!(langs, [Lang::Hip, Lang::Cuda, Lang::Cxx, Lang::Hip, Lang::C, Lang::Object]);
        let hip: Vec<&str> = c.hip_sources(true).iter().map(|i| i.path.as_str()).collect();
        assert_eq!(hip, ["a.hip", "b.cu", "d.cpp"]);
        assert_eq!(c.hip_sources(false).len(), 2, "clang compiles .cu as CUDA");
    }

    #[test]
    fn what_regtune_leaves_alone() {
        assert_eq!(parse("-c k.cpp").untouched_because(true), Some("no HIP source"));
        assert_eq!(parse("k.o m.o -o app").untouched_because(true), Some("no HIP source"));
        assert_eq!(parse("--cuda-host-only -c k.hip").untouched_because(true), Some("host-only compile"));
        assert_eq!(parse("-E k.hip").untouched_because(true), Some("no object is built"));
        assert_eq!(parse("-M k.hip").untouched_because(true), Some("no object is built"));
        assert_eq!(parse("--version").untouched_because(true), Some("no input files"));
        // Relocatable device code: the plugin runs in each source's device compile.
        assert_eq!(parse("-fgpu-rdc -c k.hip").untouched_because(true), None);
        assert_eq!(parse("-fgpu-rdc -O3 -c k.hip").device_args, ["-fgpu-rdc", "-O3"]);
        assert_eq!(parse("-fgpu-rdc --hip-link a.o b.o -o app").untouched_because(true), Some("no HIP source"));
        assert_eq!(parse("k.hip -o app -lm").action(), Action::Link);
        assert!(parse("-O2 -c k.hip").sets_optimization() && parse("-Ofast -c k.hip").sets_optimization());
        assert!(!parse("-c k.hip -o k.o").sets_optimization());
    }

    #[test]
    fn link_and_dependency_flags_never_reach_the_device_args() {
        let c = parse("-O2 -Wl,-rpath,/x -L/lib -lfoo -l bar -Xlinker --gc -MMD -MFdeps.d -oapp -Xarch_host -O0 k.hip");
        assert_eq!(c.device_args, ["-O2"]);
        let c = parse("-mllvm -amdgpu-x -Xclang -foo -Xarch_gfx90a -O1 -c k.hip");
        assert_eq!(c.device_args, ["-mllvm", "-amdgpu-x", "-Xclang", "-foo", "-Xarch_gfx90a", "-O1"]);
    }

    #[test]
    fn response_files_are_expanded_recursively() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.rsp");
        std::fs::write(&inner, "-DB=\"two words\" 'k one.hip'").unwrap();
        let outer = dir.path().join("outer.rsp");
        std::fs::write(&outer, format!("-DA=1\n--offload-arch=gfx1100 @{}", inner.display())).unwrap();
        let c = CompileCommand::parse(&["-c".into(), format!("@{}", outer.display())]).unwrap();
        assert_eq!(c.device_args, ["-DA=1", "-DB=two words"]);
        assert_eq!(c.offload_archs, ["gfx1100"]);
        assert_eq!(c.inputs[0].path, "k one.hip");
        let missing = CompileCommand::parse(&["@/no/such.rsp".into()]).unwrap();
        assert_eq!(missing.inputs[0].path, "@/no/such.rsp", "kept as clang keeps it");
    }

    #[test]
    fn gnu_quoting() {
        assert_eq!(split_gnu(r#"a "b c" 'd "e"' f\ g "h\"i""#).unwrap(), ["a", "b c", "d \"e\"", "f g", "h\"i"]);
        assert!(split_gnu("'open").is_err());
    }
}
