//! The compiler under the wrapper: which one, how to run it plainly, and
//! what Debian's clang-22 needs to be a HIP compiler at all.
//!
//! Which: `--compiler`, else `REGTUNE_COMPILER`, else the compiler named on
//! the `regtune cc` command line, else hipcc from a ROCm install, else
//! Debian's clang++-22 as regtune's stand-in for hipcc.
//!
//! Debian's clang-22 builds HIP only with help (see toolchain.rs): code
//! object v5, the device-library overlay, `hip.bc` and `oclc_daz_opt_*.bc`
//! linked into device code, and a prelude. The flags `regtune report` and
//! `regtune tune` use are device-only (`--cuda-device-only`); a build needs
//! host and device in one clang run, where `-Xclang` cannot be limited to
//! the device side. So the two bitcode files are linked into one
//! (`llvm-link`, once, cached) and handed to clang as the device-only
//! `--gpu-instrument-lib`, which clang links with `-mlink-builtin-bitcode`
//! right after the libraries it links itself, exactly where the tuner's
//! `-Xclang -mlink-builtin-bitcode` puts them; the prelude goes to each
//! device side with `-Xarch_<gfx> -include<prelude>` and, for the 64-wide
//! `warpSize` the HIP 5.2 headers expect on the host, `-Xarch_host`. The
//! code objects come out byte-for-byte what the tuner measures
//! (tests/wrapper.rs checks every example).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gpu::Arch;
use crate::toolchain::{Flavor, Toolchain};

use super::cache::{file_identity, Cache};
use super::command::{Action, CompileCommand, Lang};

/// Set on every compiler the wrapper runs, so a compiler that is itself a
/// regtune wrapper compiles plainly instead of applying decisions twice.
pub(crate) const WRAPPED_ENV: &str = "REGTUNE_WRAPPED";

#[derive(Debug, thiserror::Error)]
pub(crate) enum CompilerError {
    #[error("compiler `{name}` not found ({from})")]
    NotFound { name: String, from: &'static str },
    #[error("no HIP compiler found: {0}")]
    NoDefault(String),
}

/// User flags that set up device libraries themselves: then regtune adds none.
const OWN_DEVICE_LIBS: &[&str] = &["-nogpulib", "--hip-device-lib=", "--gpu-instrument-lib=", "--rocm-device-lib-path=", "--rocm-path="];

#[derive(Debug, Clone)]
pub struct Compiler {
    pub path: PathBuf,
    /// regtune's own hipcc stand-in (Debian's clang++-22, no ROCm): as
    /// hipcc does, it defaults to -O3, takes `.cu` as HIP and the separate
    /// `--offload-arch A`, and links the HIP runtime.
    pub stand_in: bool,
}

impl Compiler {
    /// `explicit` is what the user named (`--compiler`, `REGTUNE_COMPILER`,
    /// the `regtune cc` command), with where it came from. Returns the
    /// toolchain too when finding the default needed it.
    pub(crate) fn resolve(explicit: Option<(&OsStr, &'static str)>) -> Result<(Compiler, Option<Toolchain>), CompilerError> {
        if let Some((name, from)) = explicit {
            let path = find_program(name).ok_or_else(|| CompilerError::NotFound { name: name.to_string_lossy().into_owned(), from })?;
            return Ok((Compiler { path, stand_in: false }, None));
        }
        let toolchain = Toolchain::detect().map_err(|e| CompilerError::NoDefault(e.to_string()))?;
        let compiler = match &toolchain.flavor {
            Flavor::Rocm { root } if root.join("bin/hipcc").is_file() => Compiler { path: root.join("bin/hipcc"), stand_in: false },
            Flavor::Rocm { .. } => Compiler { path: toolchain.llvm_bin.join("clang++"), stand_in: false },
            Flavor::Debian => Compiler { path: toolchain.llvm_bin.join("clang++"), stand_in: true },
        };
        Ok((compiler, Some(toolchain)))
    }

    pub(crate) fn is_hipcc(&self) -> bool {
        self.path.file_name().is_some_and(|n| n.to_string_lossy().contains("hipcc"))
    }

    /// hipcc (and our stand-in) compile `.cu` as HIP; clang compiles it as CUDA.
    pub(crate) fn cu_is_hip(&self) -> bool {
        self.stand_in || self.is_hipcc()
    }

    /// Is this the clang regtune tunes with? (The same binary, or one that
    /// reports the same version.) hipcc runs its ROCm's clang: yes.
    pub(crate) fn is_toolchain_clang(&self, toolchain: &Toolchain) -> bool {
        if self.is_hipcc() {
            return matches!(toolchain.flavor, Flavor::Rocm { .. });
        }
        let canonical = |p: &Path| std::fs::canonicalize(p).ok();
        if canonical(&self.path).is_some_and(|c| Some(c) == canonical(&toolchain.clang)) {
            return true;
        }
        let out = Command::new(&self.path).arg("--version").output();
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::trim) == Some(toolchain.version.as_str()))
    }

    /// Does this compiler need regtune's Debian flags to build HIP? (It is
    /// Debian's clang-22 itself, and the command sets up no device libraries.)
    pub(crate) fn needs_debian_flags(&self, toolchain: &Toolchain, cmd: &CompileCommand) -> bool {
        let canonical = |p: &Path| std::fs::canonicalize(p).ok();
        toolchain.flavor == Flavor::Debian
            && canonical(&self.path).is_some_and(|c| Some(c) == canonical(&toolchain.clang))
            && !cmd
                .args
                .iter()
                .any(|a| OWN_DEVICE_LIBS.iter().any(|f| a == f.trim_end_matches('=') || (f.ends_with('=') && a.starts_with(f))))
    }

    /// The compile without regtune: the user's arguments as given, plus for
    /// the stand-in what hipcc would add, plus `extra_front` (Debian flags).
    pub fn plain(&self, original: &[OsString], cmd: Option<&CompileCommand>, extra_front: &[OsString]) -> Command {
        let mut command = Command::new(&self.path);
        command.env(WRAPPED_ENV, "1");
        command.args(extra_front);
        match cmd.filter(|_| self.stand_in) {
            Some(cmd) => {
                // hipcc's default optimization level (clang's is -O0, device side included).
                if cmd.action() != Action::Info && !cmd.sets_optimization() {
                    command.arg("-O3");
                }
                command.args(stand_in_args(original, cmd));
                if cmd.action() == Action::Link {
                    // hipcc's link: the device link of -fgpu-rdc objects needs --hip-link.
                    if cmd.relocatable_device_code && !cmd.args.iter().any(|a| a == "--hip-link") {
                        command.arg("--hip-link");
                    }
                    command.arg("-lamdhip64");
                }
            }
            None => {
                command.args(original);
            }
        }
        command
    }
}

/// hipcc's reading of a command, for clang: `--offload-arch A` joined,
/// `.cu` sources marked as HIP. A response file passes through as it is,
/// unless it needs either: then its words take its place.
fn stand_in_args(original: &[OsString], cmd: &CompileCommand) -> Vec<OsString> {
    let mut lang = (false, false);
    stand_in_words(original, cmd, &mut lang, 0)
}

/// `lang`: (the user's -x is in effect, ours — `-x hip` — is).
fn stand_in_words(original: &[OsString], cmd: &CompileCommand, lang: &mut (bool, bool), depth: usize) -> Vec<OsString> {
    let mut out = Vec::with_capacity(original.len());
    let mut i = 0;
    let (user_lang, our_hip) = lang;
    while i < original.len() {
        let a = original[i].to_string_lossy();
        let value = original.get(i + 1);
        if let Some(words) = a.strip_prefix('@').and_then(|f| std::fs::read_to_string(f).ok()).filter(|_| depth < 20) {
            let words: Vec<OsString> = super::command::split_gnu(&words).unwrap_or_default().into_iter().map(OsString::from).collect();
            let mut inner = (*user_lang, *our_hip);
            let rewritten = stand_in_words(&words, cmd, &mut inner, depth + 1);
            if rewritten == words {
                out.push(original[i].clone());
            } else {
                out.extend(rewritten);
            }
            (*user_lang, *our_hip) = inner;
            i += 1;
            continue;
        }
        if a == "--offload-arch" && value.is_some() {
            out.push(OsString::from(format!("--offload-arch={}", value.map(|v| v.to_string_lossy()).unwrap_or_default())));
            i += 2;
            continue;
        }
        if a == "-x" {
            *user_lang = value.is_some_and(|v| v != "none");
            *our_hip = false;
        } else if a.len() > 2 && a.starts_with("-x") {
            *user_lang = a != "-xnone";
            *our_hip = false;
        }
        let is_input = !a.starts_with('-') || a == "-";
        if is_input && !*user_lang {
            let cu = cmd.inputs.iter().any(|inp| inp.lang == Lang::Cuda && !inp.explicit_lang && inp.path == a);
            if cu != *our_hip {
                out.extend(["-x".into(), if cu { "hip" } else { "none" }.into()]);
                *our_hip = cu;
            }
        }
        out.push(original[i].clone());
        if super::command::takes_separate_value(&a) {
            out.extend(value.cloned());
            i += 1;
        }
        i += 1;
    }
    out
}

/// The flags that make Debian's clang-22 build HIP for `archs`, derived
/// from the device-only flags the tuner uses (the target's `device_args`),
/// so both always agree. `host_only`: for `--cuda-host-only`.
pub fn debian_flags(
    toolchain: &Toolchain,
    archs: &[Arch],
    device_args: &[String],
    host_only: bool,
    cache: &Cache,
) -> Result<Vec<OsString>, String> {
    let mut common: Vec<OsString> = Vec::new();
    let mut libs: Vec<PathBuf> = Vec::new();
    let mut preludes: Vec<(String, OsString)> = Vec::new();
    // The host wants HIP 5.2's 64-wide warpSize; any 64-wide target's prelude says so.
    let wave64 =
        archs.iter().find(|a| a.wave_size() == 64).cloned().map_or_else(|| Arch::parse("gfx906"), Ok).map_err(|e| e.to_string())?;
    let mut host_prelude = None;
    for (n, arch) in archs.iter().chain(std::iter::once(&wave64)).enumerate() {
        crate::gpu::of(arch).prepare(toolchain).map_err(|e| e.to_string())?;
        let args = crate::gpu::of(arch).device_args(toolchain, device_args).map_err(|e| e.to_string())?;
        let mut it = args.iter();
        let mut arch_libs = Vec::new();
        while let Some(a) = it.next() {
            let s = a.to_string_lossy();
            match s.as_ref() {
                "-x" => {
                    it.next();
                }
                "--cuda-device-only" | "--no-gpu-bundle-output" => {}
                _ if s.starts_with("--offload-arch=") => {}
                // -Xclang -mlink-builtin-bitcode -Xclang <lib>
                "-Xclang" if it.next().is_some_and(|f| f == "-mlink-builtin-bitcode") && it.next().is_some_and(|x| x == "-Xclang") => {
                    arch_libs.extend(it.next().map(PathBuf::from));
                }
                "-Xclang" => {}
                "-include" => {
                    if let Some(p) = it.next() {
                        let mut joined = OsString::from("-include");
                        joined.push(p);
                        if n < archs.len() {
                            preludes.push((arch.name().to_string(), joined));
                        } else {
                            host_prelude = Some(joined);
                        }
                    }
                }
                _ if n == 0 => common.push(a.clone()),
                _ => {}
            }
        }
        if n == 0 {
            libs = arch_libs;
        }
    }
    let mut flags = common;
    // (A host-only compile links no device code: clang would call the flag unused.)
    if !libs.is_empty() && !host_only {
        let linked = cache.linked_bitcode(toolchain, &libs)?;
        let mut flag = OsString::from("--gpu-instrument-lib=");
        flag.push(linked);
        flags.push(flag);
    }
    let same_prelude = preludes.windows(2).all(|w| w[0].1 == w[1].1);
    for (arch, include) in &preludes {
        flags.push(if same_prelude { "-Xarch_device".into() } else { format!("-Xarch_{arch}").into() });
        flags.push(include.clone());
        if same_prelude {
            break;
        }
    }
    if let Some(include) = host_prelude {
        flags.extend(["-Xarch_host".into(), include]);
    }
    Ok(flags)
}

/// Can `clang` load `plugin`? A plugin built against another LLVM cannot
/// (plugin.rs says why). The answer is remembered per (compiler, plugin)
/// file version.
pub(crate) fn check_plugin(clang: &Path, plugin: &Path, cache: &Cache) -> Result<(), String> {
    let key = crate::hash::of_parts([file_identity(clang), file_identity(plugin)]);
    if cache.has_mark("plugin-ok", &key) {
        return Ok(());
    }
    crate::plugin::check_loads(plugin, clang).map_err(|e| e.to_string())?;
    cache.set_mark("plugin-ok", &key);
    Ok(())
}

/// The device targets the compiler picks when the command names none.
pub(crate) fn default_archs(plain: &mut Command) -> Vec<String> {
    let Ok(out) = plain.arg("-###").output() else { return vec![] };
    let mut archs: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains("\"-fcuda-is-device\"")) {
        if let Some((_, rest)) = line.split_once("\"-target-cpu\" \"") {
            let cpu = rest.split('"').next().unwrap_or_default().to_string();
            if !archs.contains(&cpu) {
                archs.push(cpu);
            }
        }
    }
    archs
}

/// `name` as given when it has a slash, else the first match on PATH.
fn find_program(name: &OsStr) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_stand_in_reads_commands_as_hipcc_does() {
        let original = os(&["--offload-arch", "gfx90a,gfx1100", "-c", "k.cu", "-MF", "k.cu", "-x", "hip", "m.cu"]);
        let strings: Vec<String> = original.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let cmd = CompileCommand::parse(&strings).unwrap();
        let args = stand_in_args(&original, &cmd);
        assert_eq!(args, os(&["--offload-arch=gfx90a,gfx1100", "-c", "-x", "hip", "k.cu", "-MF", "k.cu", "-x", "hip", "m.cu"]));
        let original = os(&["a.cu", "b.o", "c.cu", "-o", "app"]);
        let strings: Vec<String> = original.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let args = stand_in_args(&original, &CompileCommand::parse(&strings).unwrap());
        assert_eq!(args, os(&["-x", "hip", "a.cu", "-x", "none", "b.o", "-x", "hip", "c.cu", "-o", "app"]));
    }

    #[test]
    fn response_files_reach_the_stand_in_as_they_are_unless_hipcc_reads_them_differently() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.rsp");
        std::fs::write(&plain, "-O3 --offload-arch=gfx90a -c k.hip").unwrap();
        let separate = dir.path().join("separate.rsp");
        std::fs::write(&separate, "-O3 --offload-arch gfx90a -c k.hip").unwrap();
        for (rsp, expected) in [
            (&plain, vec![format!("@{}", plain.display())]),
            (&separate, ["-O3", "--offload-arch=gfx90a", "-c", "k.hip"].map(String::from).to_vec()),
        ] {
            let original = vec![OsString::from(format!("@{}", rsp.display()))];
            let cmd = CompileCommand::parse(&[format!("@{}", rsp.display())]).unwrap();
            assert_eq!(stand_in_args(&original, &cmd), expected.iter().map(OsString::from).collect::<Vec<_>>());
        }
    }

    #[test]
    fn missing_compilers_are_named() {
        let e = Compiler::resolve(Some((OsStr::new("/no/such/hipcc"), "REGTUNE_COMPILER"))).unwrap_err();
        assert_eq!(e.to_string(), "compiler `/no/such/hipcc` not found (REGTUNE_COMPILER)");
        let e = Compiler::resolve(Some((OsStr::new("no-such-compiler-xyz"), "--compiler"))).unwrap_err();
        assert_eq!(e.to_string(), "compiler `no-such-compiler-xyz` not found (--compiler)");
    }
}
