//! `--format html`: one self-contained page per kernel.

use super::KernelExplain;

pub fn page(_k: &KernelExplain, _source: Option<&str>) -> String {
    String::new()
}
