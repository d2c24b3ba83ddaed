//! What the input hash reads, written the same however a command spelled
//! its paths (issue 39): `-Iinc` from the source's directory, `-I/abs/inc`
//! from anywhere else and a checkout at another path give one hash, so a
//! re-tune finds the entries, and what a GPU timed, of the last one.
//!
//! As ccache does with `base_dir`, paths under a base directory are written
//! relative to it, and the others absolute, symbolic links resolved. The
//! base is the checkout the source is in (the nearest directory above it
//! holding `.git`, a file in a worktree or submodule), else the source's
//! own directory. Where a tree moves without its `.git`, headers beside
//! (not below) the source's directory keep their absolute names, and its
//! hash changes with the move.
//!
//! - The flags that only tell the preprocessor where to look (`-I`,
//!   `-isystem`, `-iquote`, `-idirafter`, `-include`, `-imacros`, ...) are
//!   left out: everything they do is in the preprocessed text, which is
//!   hashed (ccache's preprocessor mode leaves them out for the same reason).
//! - Flags naming a toolchain (`--cuda-path`, `--rocm-path`,
//!   `--rocm-device-lib-path`, `-resource-dir`, `--sysroot`, ...) are
//!   written absolute and resolved, never relative: the device libraries
//!   they hold are not in the text, and `/usr/local/cuda` pointed at
//!   another version is another toolchain. `-include-pch` (a file not
//!   in the text either) is a path like a header's.
//! - In the preprocessed text, the names of the preprocessor's line markers
//!   (`# 1 "../inc/k.h" 1`), and every string literal that is one of them
//!   (what `__FILE__` and `__BASE_FILE__` expand to), are written as paths
//!   are. Host code's `__FILE__` (error-checking macros) so changes nothing.
//!   Device code that keeps `__FILE__` (a device-side `assert`) keeps its
//!   hash too, but its code objects hold the name as spelled: a re-tune
//!   spelled otherwise finds them changed, and drops what a GPU timed of
//!   them (`measure::code::still_measured` compares the bytes).
//! - Everything else is hashed as written, `-D` values included.
//!
//! Relative names resolve against the directory regtune runs in, which is
//! where it runs the preprocessor.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// How a flag's path is written into the hash.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Left out with its value: its effect is in the preprocessed text.
    Search,
    /// Absolute and resolved: an installation, not part of the project.
    Toolchain,
    /// Like a header's name.
    File,
}

/// The flags with a path argument, by the forms clang accepts: a single
/// dash takes the value joined (`-Idir`) or as the next argument; a double
/// dash (and `-resource-dir`) after `=` or as the next argument. The
/// longest name that matches wins (`-include-pch` over `-include`).
const PATH_FLAGS: &[(&str, Kind)] = &[
    ("-I", Kind::Search),
    ("--include-directory", Kind::Search),
    ("--include-directory-after", Kind::Search),
    ("-isystem", Kind::Search),
    ("-isystem-after", Kind::Search),
    ("-iquote", Kind::Search),
    ("-idirafter", Kind::Search),
    ("-cxx-isystem", Kind::Search),
    ("-iwithsysroot", Kind::Search),
    ("-iprefix", Kind::Search),
    ("-iwithprefix", Kind::Search),
    ("-iwithprefixbefore", Kind::Search),
    ("-F", Kind::Search),
    ("-iframework", Kind::Search),
    ("-iframeworkwithsysroot", Kind::Search),
    ("-include", Kind::Search),
    ("-imacros", Kind::Search),
    ("-include-pch", Kind::File),
    ("--cuda-path", Kind::Toolchain),
    ("--rocm-path", Kind::Toolchain),
    ("--hip-path", Kind::Toolchain),
    ("--rocm-device-lib-path", Kind::Toolchain),
    ("--hip-device-lib-path", Kind::Toolchain),
    ("--libdevice-path", Kind::Toolchain),
    ("--gcc-toolchain", Kind::Toolchain),
    ("--gcc-install-dir", Kind::Toolchain),
    ("--sysroot", Kind::Toolchain),
    ("-isysroot", Kind::Toolchain),
    ("-resource-dir", Kind::Toolchain),
];

/// Where a unit's paths are written from.
#[derive(Debug, Clone)]
pub(crate) struct Spelling {
    /// Where the compiler ran: relative names resolve against it.
    cwd: PathBuf,
    /// Resolved; what is under it is written relative to it.
    base: PathBuf,
    /// Whether `base` is a checkout's root (not just the source's directory).
    checkout: bool,
    /// The source, resolved.
    source: PathBuf,
}

impl Spelling {
    /// For `source` compiled from the directory regtune runs in.
    pub(crate) fn of(source: &Path) -> Spelling {
        Spelling::from(&std::env::current_dir().unwrap_or_default(), source)
    }

    /// For `source` compiled from `cwd`.
    pub(crate) fn from(cwd: &Path, source: &Path) -> Spelling {
        let source = resolve(&cwd.join(source));
        let dir = source.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        let root = dir.ancestors().find(|d| d.join(".git").symlink_metadata().is_ok()).map(Path::to_path_buf);
        Spelling { cwd: cwd.to_path_buf(), checkout: root.is_some(), base: root.unwrap_or(dir), source }
    }

    /// The source's name inside its checkout, or its absolute name outside
    /// one: what names the compilation unit (`-cuid`), the same for a
    /// checkout at another path and distinct for two files of one program.
    pub(crate) fn unit_name(&self) -> &Path {
        match self.source.strip_prefix(&self.base) {
            Ok(rel) if self.checkout => rel,
            _ => &self.source,
        }
    }

    /// `name` relative to the base when under it, else absolute; resolved
    /// (symbolic links, `..`) where it exists, else as written.
    fn path(&self, name: &Path) -> PathBuf {
        let full = resolve(&self.cwd.join(name));
        match full.strip_prefix(&self.base) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => full,
        }
    }

    /// The user's flags as the hash reads them (see the module's comment).
    pub(crate) fn args(&self, args: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(args.len());
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let Some((flag, kind, joined)) = path_flag(arg) else {
                out.push(arg.clone());
                continue;
            };
            let value = match joined {
                Some(v) => Some(v.to_string()),
                None => rest.next().cloned(),
            };
            let Some(value) = value else {
                out.push(arg.clone());
                continue;
            };
            let written = match kind {
                Kind::Search => continue,
                Kind::Toolchain => resolve(&self.cwd.join(&value)),
                Kind::File => self.path(Path::new(&value)),
            };
            let separator = if flag.starts_with("--") || flag == "-resource-dir" { "=" } else { "" };
            out.push(format!("{flag}{separator}{}", written.display()));
        }
        out
    }

    /// The preprocessed text as the hash reads it: line markers' names, and
    /// string literals equal to one of them, written as paths are.
    pub(crate) fn preprocessed(&self, text: &[u8]) -> Vec<u8> {
        let mut names: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut out = Vec::with_capacity(text.len());
        let mut lines = text.split(|&b| b == b'\n').peekable();
        while let Some(line) = lines.next() {
            match line_marker(line) {
                Some((head, name, tail)) => {
                    out.extend_from_slice(head);
                    out.extend_from_slice(self.respelled(&mut names, &name));
                    out.extend_from_slice(tail);
                }
                None if line.contains(&b'"') && !names.is_empty() => literals(line, &names, &mut out),
                None => out.extend_from_slice(line),
            }
            if lines.peek().is_some() {
                out.push(b'\n');
            }
        }
        out
    }

    /// A marker's name, quoted, as written into the hash (remembered).
    fn respelled<'a>(&self, names: &'a mut HashMap<Vec<u8>, Vec<u8>>, name: &[u8]) -> &'a [u8] {
        names.entry(name.to_vec()).or_insert_with(|| {
            // `<built-in>`, `<command line>`: not files.
            if name.starts_with(b"<") || name.is_empty() {
                return quoted(name);
            }
            let path = self.path(Path::new(&*String::from_utf8_lossy(name)));
            quoted(path.as_os_str().as_encoded_bytes())
        })
    }
}

/// The flag `arg` is (or starts with): its name, kind and joined value.
fn path_flag(arg: &str) -> Option<(&'static str, Kind, Option<&str>)> {
    let mut best: Option<(&'static str, Kind, Option<&str>)> = None;
    for &(flag, kind) in PATH_FLAGS {
        let Some(rest) = arg.strip_prefix(flag) else { continue };
        let joined = if rest.is_empty() {
            None
        } else if flag.starts_with("--") || flag == "-resource-dir" {
            // `--cuda-path-ignore-env` is another flag.
            match rest.strip_prefix('=') {
                Some(v) => Some(v),
                None => continue,
            }
        } else {
            Some(rest)
        };
        if best.is_none_or(|(b, _, _)| flag.len() > b.len()) {
            best = Some((flag, kind, joined));
        }
    }
    best
}

/// `path` with symbolic links and `..` resolved where it exists; else with
/// `.` and `..` taken lexically.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// A preprocessor line marker, `# 12 "name" 1 3` (or `#line 12 "name"`):
/// what comes before the quoted name, the name unescaped, and what follows.
fn line_marker(line: &[u8]) -> Option<(&[u8], Vec<u8>, &[u8])> {
    let rest = line.strip_prefix(b"#line ").or_else(|| line.strip_prefix(b"# "))?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits..digits + 2) != Some(&b" \""[..]) {
        return None;
    }
    let start = line.len() - rest.len() + digits + 1;
    let end = closing_quote(line, start + 1)?;
    Some((&line[..start], unescape(&line[start + 1..end]), &line[end + 1..]))
}

/// The index of the quote that ends the string starting at `from`.
fn closing_quote(line: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A string's contents with `\\`, `\"`, `\t`, `\n` and octal escapes
/// (clang's, in line markers and `__FILE__`) undone.
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' || i + 1 == s.len() {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let octal = s[i + 1..].iter().take(3).take_while(|b| (b'0'..=b'7').contains(b)).count();
        if octal > 0 {
            let value = s[i + 1..i + 1 + octal].iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
            out.push(value as u8);
            i += 1 + octal;
            continue;
        }
        out.push(match s[i + 1] {
            b't' => b'\t',
            b'n' => b'\n',
            other => other,
        });
        i += 2;
    }
    out
}

/// `name` in quotes, `\` and `"` escaped.
fn quoted(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    out.push(b'"');
    for &b in name {
        if b == b'\\' || b == b'"' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
    out
}

/// `line` into `out`, each string literal that is a marker's name
/// respelled. Literals are told by their quotes alone (a quote after an
/// odd run of backslashes is escaped); a `'"'` may pair quotes wrongly,
/// which at worst leaves a name as written.
fn literals(line: &[u8], names: &HashMap<Vec<u8>, Vec<u8>>, out: &mut Vec<u8>) {
    let mut quotes = Vec::new();
    let mut backslashes = 0;
    for (i, &b) in line.iter().enumerate() {
        if b == b'"' && backslashes % 2 == 0 {
            quotes.push(i);
        }
        backslashes = if b == b'\\' { backslashes + 1 } else { 0 };
    }
    let mut copied = 0;
    let mut q = 0;
    while q + 1 < quotes.len() {
        let (open, close) = (quotes[q], quotes[q + 1]);
        match names.get(&unescape(&line[open + 1..close])) {
            Some(respelled) => {
                out.extend_from_slice(&line[copied..open]);
                out.extend_from_slice(respelled);
                copied = close + 1;
                q += 2;
            }
            None => q += 1,
        }
    }
    out.extend_from_slice(&line[copied..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkout: `root/.git`, `root/src/k.hip`, `root/inc/k.h`.
    fn checkout(at: &Path) -> PathBuf {
        let root = at.join("proj");
        for d in [".git", "src", "inc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("src/k.hip"), "#include \"k.h\"\n").unwrap();
        std::fs::write(root.join("inc/k.h"), "int k;\n").unwrap();
        root
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_base_is_the_checkout_else_the_sources_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = checkout(dir.path());
        let real = std::fs::canonicalize(&root).unwrap();
        let s = Spelling::from(&root.join("src"), Path::new("k.hip"));
        assert_eq!((s.base.as_path(), s.checkout), (real.as_path(), true));
        assert_eq!(s.unit_name(), Path::new("src/k.hip"));
        std::fs::remove_dir(root.join(".git")).unwrap();
        let s = Spelling::from(dir.path(), Path::new("proj/src/k.hip"));
        assert_eq!((s.base.as_path(), s.checkout), (real.join("src").as_path(), false));
        assert_eq!(s.unit_name(), real.join("src/k.hip"), "outside a checkout, its absolute name");
    }

    #[test]
    fn flags_read_the_same_however_their_paths_are_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let root = checkout(dir.path());
        let cuda = dir.path().join("cuda");
        std::fs::create_dir(&cuda).unwrap();
        std::fs::write(root.join("inc/k.pch"), "").unwrap();
        let real_cuda = std::fs::canonicalize(&cuda).unwrap();

        let from_src = Spelling::from(&root.join("src"), Path::new("k.hip"));
        let relative = strings(&[
            "-O3",
            "-I../inc",
            "-isystem",
            "../inc",
            "-include",
            "k.h",
            "-include-pch",
            "../inc/k.pch",
            "--cuda-path=../../cuda",
        ]);
        let elsewhere = Spelling::from(dir.path(), &root.join("src/k.hip"));
        let inc = root.join("inc").display().to_string();
        let pch = format!("-include-pch{inc}/k.pch");
        let absolute =
            strings(&["-O3", "-I", &inc, &format!("-isystem{inc}"), "-include", "k.h", &pch, "--cuda-path", cuda.to_str().unwrap()]);
        let expected = strings(&["-O3", "-include-pchinc/k.pch", &format!("--cuda-path={}", real_cuda.display())]);
        assert_eq!(from_src.args(&relative), expected);
        assert_eq!(elsewhere.args(&absolute), expected);

        // What is no path flag stays as written; `--cuda-path-ignore-env` is not `--cuda-path`.
        let others = strings(&["-DDIR=\"/abs\"", "-Wall", "--cuda-path-ignore-env", "-std=c++17", "-I"]);
        assert_eq!(from_src.args(&others), others);
    }

    #[test]
    fn line_markers_and_file_names_read_the_same_from_another_directory_or_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let root = checkout(dir.path());
        let abs = root.display().to_string();
        let text = |main: &str, header: &str| {
            format!(
                "# 1 \"{main}\"\n# 1 \"<built-in>\" 1\n# 1 \"{header}\" 1\nint k;\nconst char* f = \"{header}\", *g = __x(\"{main}\");\n# 2 \"{main}\" 2\nchar c = '\"'; const char* s = \"{header}x\";\n"
            )
        };
        let from_src = Spelling::from(&root.join("src"), Path::new("k.hip")).preprocessed(text("k.hip", "../inc/k.h").as_bytes());
        let expected = text("src/k.hip", "inc/k.h").replace("\"inc/k.hx\"", "\"../inc/k.hx\"");
        assert_eq!(String::from_utf8(from_src.clone()).unwrap(), expected);

        let main = format!("{abs}/src/k.hip");
        let elsewhere = Spelling::from(Path::new("/"), Path::new(&main)).preprocessed(text(&main, &format!("{abs}/inc/k.h")).as_bytes());
        let expected_abs = expected.replace("\"../inc/k.hx\"", &format!("\"{abs}/inc/k.hx\""));
        assert_eq!(String::from_utf8(elsewhere).unwrap(), expected_abs, "a literal that is no file's name stays");

        // The same tree at another path, without moving anything else.
        let moved = dir.path().join("moved");
        std::fs::rename(&root, &moved).unwrap();
        let again = Spelling::from(&moved.join("src"), Path::new("k.hip")).preprocessed(text("k.hip", "../inc/k.h").as_bytes());
        assert_eq!(again, from_src);
    }

    #[test]
    fn names_outside_the_base_stay_absolute_and_escapes_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = checkout(dir.path());
        let odd = root.join("inc/a \"b\\c.h");
        std::fs::write(&odd, "").unwrap();
        let s = Spelling::from(&root.join("src"), Path::new("k.hip"));
        let text = b"# 1 \"../inc/a \\\"b\\\\c.h\" 1\n# 1 \"/usr/include/stdio.h\" 1 3 4\nx = \"/usr/include/stdio.h\";\n# 1 \"../inc/a \\\"b\\\\c.h\"";
        let want =
            b"# 1 \"inc/a \\\"b\\\\c.h\" 1\n# 1 \"/usr/include/stdio.h\" 1 3 4\nx = \"/usr/include/stdio.h\";\n# 1 \"inc/a \\\"b\\\\c.h\"";
        assert_eq!(String::from_utf8_lossy(&s.preprocessed(text)), String::from_utf8_lossy(want));
        assert_eq!(unescape(b"a\\303\\251\\tb"), "aé\tb".as_bytes());
    }
}
