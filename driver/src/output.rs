//! Write results as an aligned table, JSON or CSV, to stdout or a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// Rows that can be shown as a table or CSV.
pub trait Tabular {
    fn header() -> Vec<&'static str>;
    fn cells(&self) -> Vec<String>;
}

/// A unit of work that failed, with the compiler's diagnostics if any.
#[derive(Debug, Clone)]
pub struct Failure {
    pub message: String,
    pub diagnostics: Option<String>,
}

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Failure { message: message.into(), diagnostics: None }
    }

    /// Diagnostics first (as clang printed them), then our one line.
    pub fn print(&self) {
        let stderr = std::io::stderr();
        let mut err = stderr.lock();
        if let Some(d) = &self.diagnostics {
            let _ = write!(err, "{d}");
        }
        let _ = writeln!(err, "error: {}", self.message);
    }
}

/// The rows of the jobs that worked, and the failures, in job order.
pub(crate) fn partition<T>(results: Vec<Result<Vec<T>, Failure>>) -> (Vec<T>, Vec<Failure>) {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(mut v) => rows.append(&mut v),
            Err(f) => failures.push(f),
        }
    }
    (rows, failures)
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    path: PathBuf,
    source: std::io::Error,
}

/// Render `rows` as `format`; JSON puts them under `key` ("kernels").
pub fn render<T: Tabular + Serialize>(rows: &[T], format: Format, key: &str) -> String {
    match format {
        Format::Table => table(rows),
        Format::Json => {
            let doc = serde_json::json!({ key: rows });
            serde_json::to_string_pretty(&doc).expect("rows serialize") + "\n"
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(T::header()).expect("csv to memory");
            for r in rows {
                w.write_record(r.cells()).expect("csv to memory");
            }
            String::from_utf8(w.into_inner().expect("csv flush")).expect("csv is utf-8")
        }
    }
}

fn table<T: Tabular>(rows: &[T]) -> String {
    use comfy_table::{presets::NOTHING, CellAlignment, Table};
    let mut t = Table::new();
    t.load_preset(NOTHING);
    t.set_header(T::header());
    for r in rows {
        t.add_row(r.cells());
    }
    // Numbers line up on the right, as a terminal user reads them.
    let numeric: Vec<bool> = (0..T::header().len())
        .map(|i| rows.iter().all(|r| r.cells()[i].chars().all(|c| c.is_ascii_digit() || c == '-' || c == '>' || c == ' ')))
        .collect();
    for (i, col) in t.column_iter_mut().enumerate() {
        if numeric.get(i).copied().unwrap_or(false) && !rows.is_empty() {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut s = t.trim_fmt();
    s.push('\n');
    s
}

/// Write to `path` (atomically, so a failed write leaves the old file) or stdout.
pub fn emit(text: &str, path: Option<&Path>) -> Result<(), WriteError> {
    let Some(path) = path else {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`regtune report | head`) is not an error worth a message.
        let _ = out.write_all(text.as_bytes());
        return Ok(());
    };
    let err = |source| WriteError { path: path.into(), source };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    tmp.write_all(text.as_bytes()).map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Text and attribute values, escaped for HTML.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}
