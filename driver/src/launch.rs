//! Infer a kernel's block size from its launch sites in the same file, for
//! `--block-size auto`.
//!
//! Only a fact the source states counts: every launch of the kernel must use
//! a compile-time constant block size (a literal, `dim3(N)`, `dim3(N, M, K)`,
//! or a name bound by `#define`/`constexpr`/`const` to a literal). One launch
//! we cannot read makes the answer "unknown" rather than a guess.

use std::collections::HashMap;

/// The block size (threads per block) every launch of `kernel` in `source`
/// uses, if all launches agree on one constant; the largest if they differ
/// (the bound must admit every launch).
pub(crate) fn block_size(source: &str, kernel: &str) -> Option<u32> {
    let constants = constants(source);
    let mut sizes = Vec::new();
    for args in launches(source, kernel) {
        sizes.push(eval_block(args.get(1)?, &constants)?);
    }
    sizes.into_iter().max()
}

/// Argument lists of each launch: `k<<<grid, block, ...>>>` or
/// `hipLaunchKernelGGL(k, grid, block, ...)`; element 1 is the block.
fn launches<'a>(source: &'a str, kernel: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    for (pos, _) in source.match_indices(kernel) {
        let before = &source[..pos];
        let after = &source[pos + kernel.len()..];
        // A whole identifier, possibly with template arguments: k<T><<<...>>>.
        if before.chars().next_back().is_some_and(is_ident) || after.chars().next().is_some_and(is_ident) {
            continue;
        }
        let after = skip_template_args(after).trim_start();
        if let Some(inner) = after.strip_prefix("<<<") {
            if let Some(end) = inner.find(">>>") {
                out.push(split_args(&inner[..end]));
            }
            continue;
        }
        // hipLaunchKernelGGL(k, grid, block, ...): the same order after the kernel.
        let head = before.trim_end();
        let is_launch_call = head
            .strip_suffix('(')
            .map(str::trim_end)
            .is_some_and(|h| h.ends_with("hipLaunchKernelGGL") || h.ends_with("hipLaunchKernelEx"));
        if let (true, Some(list)) = (is_launch_call, after.strip_prefix(',')) {
            out.push(split_args(until_close(list)));
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn skip_template_args(s: &str) -> &str {
    let t = s.trim_start();
    if !t.starts_with('<') || t.starts_with("<<<") {
        return s;
    }
    let mut depth = 0;
    for (i, c) in t.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &t[i + 1..];
                }
            }
            _ => {}
        }
    }
    s
}

/// Text up to the parenthesis that closes an already-open one.
fn until_close(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return &s[..i],
            ')' => depth -= 1,
            _ => {}
        }
    }
    s
}

/// Split on top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// `#define NAME 256`, `constexpr int NAME = 256;`, `const unsigned NAME = 256;`.
fn constants(source: &str) -> HashMap<&str, u32> {
    let mut map = HashMap::new();
    for line in source.lines() {
        let line = line.trim();
        if let Some(def) = line.strip_prefix("#define") {
            let mut it = def.split_whitespace();
            if let (Some(name), Some(value), None) = (it.next(), it.next(), it.next()) {
                if let Some(v) = literal(value) {
                    map.insert(name, v);
                }
            }
        } else if line.contains("const") && line.contains('=') {
            let (lhs, rhs) = line.split_once('=').expect("checked");
            let name = lhs.split_whitespace().last().unwrap_or_default();
            if let Some(v) = literal(rhs.trim().trim_end_matches(';')) {
                map.insert(name, v);
            }
        }
    }
    map
}

fn literal(s: &str) -> Option<u32> {
    let s = s.trim().trim_start_matches('(').trim_end_matches(')');
    let digits = s.trim_end_matches(['u', 'U', 'l', 'L']);
    digits.parse().ok()
}

/// Threads per block of one block argument.
fn eval_block(arg: &str, constants: &HashMap<&str, u32>) -> Option<u32> {
    let arg = arg.trim();
    let value = |s: &str| literal(s).or_else(|| constants.get(s.trim()).copied());
    if let Some(inner) = arg.strip_prefix("dim3").map(str::trim_start).and_then(|s| s.strip_prefix('(')) {
        let inner = inner.strip_suffix(')')?;
        return split_args(inner).into_iter().try_fold(1u32, |acc, d| Some(acc * value(d)?));
    }
    value(arg)
}

#[cfg(test)]
mod tests {
    use super::block_size;

    #[test]
    fn triple_chevron_with_literal() {
        assert_eq!(block_size("k<<<n / 256, 256>>>(a, b);", "k"), Some(256));
    }

    #[test]
    fn hip_launch_kernel_ggl_with_dim3_and_define() {
        let src = "#define BLOCK 128\nhipLaunchKernelGGL(lbm, dim3(g), dim3(BLOCK), 0, 0, f);";
        assert_eq!(block_size(src, "lbm"), Some(128));
    }

    #[test]
    fn constexpr_and_three_dimensional_blocks() {
        let src = "constexpr int TX = 32;\nconst int TY = 8;\nstencil<<<grid, dim3(TX, TY, 1)>>>(u);";
        assert_eq!(block_size(src, "stencil"), Some(256));
    }

    #[test]
    fn template_kernels_are_found() {
        assert_eq!(block_size("k<float><<<g, 64>>>(x);", "k"), Some(64));
    }

    #[test]
    fn a_runtime_block_size_means_unknown() {
        assert_eq!(block_size("k<<<g, 256>>>(x);\nk<<<g, threads>>>(x);", "k"), None);
    }

    #[test]
    fn no_launch_means_unknown_and_other_identifiers_do_not_count() {
        assert_eq!(block_size("kk<<<g, 64>>>(x);", "k"), None);
    }

    #[test]
    fn differing_constant_launches_take_the_largest() {
        assert_eq!(block_size("k<<<g, 64>>>(x);\nk<<<g, 256>>>(x);", "k"), Some(256));
    }
}
