//! The `regtune` command line; the work is in the library (lib.rs).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use regtune::output::{self, Format};
use regtune::target::Arch;
use regtune::toolchain::Toolchain;
use regtune::{plugin, report, search, tune};

#[derive(Parser)]
#[command(name = "regtune", version, about = "Rewrite HIP kernels to need fewer registers, verified by the real backend")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile each file and list every kernel's registers, spills, scratch, LDS and occupancy.
    Report(ReportArgs),
    /// Search rewrites and occupancy targets per kernel, keep what raises occupancy, record it in the db.
    Tune(TuneArgs),
    /// Show which toolchain regtune found, what is missing, and how to fix it.
    Doctor,
    /// Compile through regtune with the tuned decisions (also CMake's compiler launcher); never breaks a build.
    ///
    /// `regtune cc [OPTIONS] [--] [COMPILER] ARGS...`: COMPILER is the command's first word unless it is an
    /// argument or a file. Environment: REGTUNE_MODE, REGTUNE_COMPILER, REGTUNE_DB (the options win).
    Cc(CcArgs),
}

#[derive(Args)]
struct CcArgs {
    /// use: apply the db's current decisions; tune: tune sources without any first; off: compile untouched
    /// [default: $REGTUNE_MODE, else use].
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// The compiler to run [default: $REGTUNE_COMPILER, else COMPILER, else ROCm's hipcc, else clang++-22].
    #[arg(long, value_name = "PATH")]
    compiler: Option<PathBuf>,
    /// The decisions db [default: $REGTUNE_DB, else .regtune/decisions.json].
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// The compile command: [COMPILER] ARGS...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
    command: Vec<std::ffi::OsString>,
}

/// Inputs shared by the commands that compile HIP files.
#[derive(Args)]
struct Inputs {
    /// Targets, comma-separated (gfx90a, gfx942, gfx950, gfx1100, ...).
    #[arg(long = "offload-arch", value_name = "A[,B...]", default_value = "gfx90a")]
    offload_arch: String,
    /// HIP source files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Extra clang arguments (-I, -D, -std, -O...), after `--`.
    #[arg(last = true, value_name = "CLANG_ARGS")]
    clang_args: Vec<String>,
}

#[derive(Args)]
struct ReportArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct TuneArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write the results here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// What to optimize for.
    #[arg(long, value_enum, default_value_t = search::Objective::Occupancy)]
    objective: search::Objective,
    /// noalias is an assumption about the caller: try and report it, apply it, or skip it.
    #[arg(long, value_enum, default_value_t = tune::Noalias::Suggest)]
    noalias: tune::Noalias,
    /// Threads per block every launch uses (applied as launch bounds), or `auto` to infer and only suggest.
    #[arg(long, value_name = "N|auto")]
    block_size: Option<tune::BlockSize>,
    /// Accept scratch (a private array in memory) as long as spills do not grow.
    #[arg(long)]
    allow_scratch: bool,
    /// Parallel compiles (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// The decisions db the plugin and the wrapper apply.
    #[arg(long, value_name = "PATH", default_value = ".regtune/decisions.json")]
    db: PathBuf,
    /// Show a unified diff of each tuned kernel's IR and assembly.
    #[arg(long)]
    diff: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Report(args) => report(args),
        Command::Tune(args) => tune(args),
        Command::Doctor => doctor(),
        Command::Cc(args) => {
            let invocation = regtune::wrapper::Invocation::cc(args.mode, args.compiler.map(Into::into), args.db, args.command);
            return regtune::wrapper::run(invocation);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn report(args: ReportArgs) -> Result<ExitCode> {
    let archs = Arch::parse_list(&args.inputs.offload_arch)?;
    let toolchain = Toolchain::detect()?;
    let (rows, failures) = report::run(&toolchain, &args.inputs.files, &archs, &args.inputs.clang_args);
    for f in &failures {
        f.print();
    }
    if !rows.is_empty() {
        output::emit(&output::render(&rows, args.format, "kernels"), args.output.as_deref())?;
    }
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn tune(args: TuneArgs) -> Result<ExitCode> {
    let archs = Arch::parse_list(&args.inputs.offload_arch)?;
    let toolchain = Toolchain::detect()?;
    let plugin = plugin::find()?;
    if let Some(j) = args.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(j.max(1)).build_global()?;
    }
    let options = tune::Options {
        objective: args.objective,
        noalias: args.noalias,
        block_size: args.block_size.unwrap_or(tune::BlockSize::Unset),
        allow_scratch: args.allow_scratch,
        diff: args.diff,
        noalias_candidates: 4,
    };
    let (rows, failures) =
        tune::run(&toolchain, &plugin, &args.inputs.files, &archs, &args.inputs.clang_args, &options, &args.db);
    for f in &failures {
        f.print();
    }
    if !rows.is_empty() {
        let mut text = output::render(&rows, args.format, "kernels");
        if args.format == Format::Table {
            for r in &rows {
                for s in &r.suggestions {
                    text.push_str(&format!("suggestion for {} on {}: {s}\n", r.report.name, r.report.arch));
                }
            }
            if args.diff {
                for r in rows.iter().filter_map(|r| r.diff.as_ref()) {
                    text.push_str(r);
                }
            }
        }
        output::emit(&text, args.output.as_deref())?;
    }
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn doctor() -> Result<ExitCode> {
    let checks = Toolchain::doctor();
    let mut ok = true;
    for c in &checks {
        match &c.found {
            Some(found) => println!("ok       {:<40} {found}", c.what),
            None => {
                ok &= c.what.starts_with("ROCm install");
                println!("missing  {:<40} fix: {}", c.what, c.fix);
            }
        }
    }
    match Toolchain::detect() {
        Ok(tc) => println!("using    {} ({:?})", tc.version, tc.flavor),
        Err(e) => println!("error    {e}"),
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
