//! The `regtune` command line; the work is in the library (lib.rs).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};

use regtune::context::Context;
use regtune::gpu::resources;
use regtune::gpu::Arch;
use regtune::output::{self, Format};
use regtune::toolchain::Toolchain;
use regtune::{batch, explain, fix, gpu, names, report, search, tune};

#[derive(Parser)]
#[command(
    name = "regtune",
    version,
    about = "Tune GPU kernels (HIP; CUDA built by clang or nvcc) to need fewer registers: every candidate built by the real backend, timed inside your program"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile each file and list every kernel's registers, spills, scratch, LDS and occupancy.
    Report(ReportArgs),
    /// Build each kernel's candidates (rewrites, occupancy steps, register caps) with the real backend and record
    /// them in the db: what GPU evidence proved never loses is applied, the rest is for `measure` to decide.
    Tune(TuneArgs),
    /// Print the cost model's estimate for every variant tune compiles, as JSON (writes no db).
    Predict(PredictArgs),
    /// Tune every HIP or CUDA translation unit (clang or nvcc) in a compile_commands.json, each with its own flags and targets.
    ///
    /// Exit status: 0 when every unit was tuned or unchanged; N (at most 100) when N translation
    /// units failed, the rest being tuned and recorded; 2 when nothing could run (a missing or
    /// malformed compile_commands.json or db, no toolchain), as for any usage error.
    Batch(BatchArgs),
    /// Write the db's decisions as a source patch (a unified diff) that any compiler builds: hipcc, nvcc.
    ///
    /// The edits go where the code is: the kernel's file, the headers and `.cu` files it includes
    /// (under the inputs' directories and -I paths; never a system header). Every unit that reads a
    /// patched file is rebuilt plainly (no plugin) against the usage the tuner measured; a kernel
    /// that misses it is left out and named. Exit status: 0 when there was nothing to patch or
    /// every decision is in the patch; 1 when a decision could not be expressed; 2 on an error
    /// (nothing written).
    Fix(FixArgs),
    /// Join the decisions dbs (and batch records) of shards into one, and report on them.
    Merge(MergeArgs),
    /// Confirm a suggestion in the db (an assumption about the callers, a rounding change, a trade):
    /// the build uses it where `regtune measure` found it faster and identical, else the next tune
    /// applies it.
    Confirm(ConfirmArgs),
    /// Run your program and measure, on its GPU and inside it, the candidates `tune` kept for each kernel:
    /// time them, compare every byte with the plain build, and record it in the db.
    ///
    /// For the first N launches of each kernel the db has a decision or a suggestion for, the launch's
    /// memory is copied and every candidate (plain, decided, suggested) is replayed on the copy in a
    /// separate process; then the program's own launch runs on its untouched memory. A decision is then
    /// kept only if it is bit-identical and faster than plain beyond the noise. The report goes to stderr
    /// (or -o FILE); the program's output is its own. Exit status: the program's when it fails; 1 when
    /// nothing could be measured; 2 when measuring could not start (db, tools, nothing to measure).
    Measure(MeasureArgs),
    /// Why each kernel needs its registers: pressure along its machine code, the values live at
    /// the peak in source terms, and the register-pressure patterns found in it.
    Explain(ExplainArgs),
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
    /// use: apply the db's current decisions; tune: tune sources without any first; patch: build from
    /// copies patched with the current decisions (no plugin: any compiler); off: compile untouched
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

/// Inputs shared by the commands that compile HIP or CUDA files.
#[derive(Args)]
struct Inputs {
    /// Targets, comma-separated: AMDGPU (gfx90a, gfx942, gfx950, gfx1100, ...) or NVIDIA (sm_70, sm_75,
    /// sm_80, sm_86, sm_89, sm_90, sm_100, sm_103, sm_120; an `a` suffix as in sm_90a, sm_100a is kept
    /// for clang) [default: gfx90a, or sm_90 with --target nvptx].
    #[arg(long = "offload-arch", value_name = "A[,B...]")]
    offload_arch: Option<String>,
    /// The GPU family, when --offload-arch does not name one: amdgpu (HIP) or nvptx (CUDA).
    #[arg(long, value_enum)]
    target: Option<TargetFamily>,
    /// HIP or CUDA source files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The compiler whose code is tuned: clang (the default), or nvcc (or a path to one), whose own PTX
    /// and cubins are then tuned and measured, with nvcc's flags after `--`.
    #[arg(long, value_name = "clang|nvcc|PATH")]
    compiler: Option<String>,
    /// Extra compiler arguments (-I, -D, -std, -O...), after `--`: clang's, or nvcc's with --compiler nvcc.
    #[arg(last = true, value_name = "COMPILER_ARGS")]
    clang_args: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TargetFamily {
    Amdgpu,
    Nvptx,
}

/// clap's spelling of a library enum: the same variants, mapped one to one
/// (the library knows nothing of the command line).
macro_rules! value_enum {
    ($(#[$m:meta])* $name:ident => $lib:ty { $($(#[$vm:meta])* $v:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
        enum $name { $($(#[$vm])* $v),+ }
        impl From<$name> for $lib {
            fn from(x: $name) -> $lib {
                match x { $($name::$v => <$lib>::$v),+ }
            }
        }
    };
}

value_enum!(FormatArg => Format { Table, Json, Csv });
value_enum!(ExplainFormat => explain::Format { Text, Json, Html });
value_enum!(ObjectiveArg => search::Objective {
    /// Highest occupancy with no more spills and scratch than the plain compile.
    Occupancy,
    /// First remove spills and scratch, then maximize occupancy.
    NoSpill,
});
value_enum!(NoaliasArg => tune::Noalias {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
});
value_enum!(Pow2Arg => tune::Pow2 {
    Off,
    /// Measure and report, never apply (the default).
    Suggest,
    Apply,
});

impl Inputs {
    /// The context of a command that compiles them: the targets, the
    /// toolchain they need, the user's clang flags.
    fn context(&self) -> Result<Context> {
        let ctx = Context::new(self.archs()?, self.clang_args.clone())?;
        Ok(match self.compiler.as_deref() {
            None | Some("clang") => ctx,
            Some("nvcc") => ctx.with_nvcc(None)?,
            Some(path) if path.rsplit('/').next().is_some_and(|name| name.contains("nvcc")) => ctx.with_nvcc(Some(path.as_ref()))?,
            Some(other) => anyhow::bail!("--compiler {other}: regtune tunes clang's code or nvcc's (clang, nvcc, or a path to nvcc)"),
        })
    }

    /// The targets to compile for: --offload-arch, else the family's default.
    fn archs(&self) -> Result<Vec<Arch>> {
        let list = match (&self.offload_arch, self.target) {
            (Some(list), _) => list.clone(),
            (None, Some(TargetFamily::Nvptx)) => gpu::DEFAULT_NVPTX_ARCH.to_string(),
            (None, _) => gpu::DEFAULT_AMDGPU_ARCH.to_string(),
        };
        let archs = Arch::parse_list(&list)?;
        if let Some(family) = self.target {
            let want = if family == TargetFamily::Nvptx { "nvptx" } else { "amdgpu" };
            if let Some(a) = archs.iter().find(|a| gpu::of(a).family() != want) {
                anyhow::bail!("--offload-arch {a} is not a target of --target {want}");
            }
        }
        Ok(archs)
    }
}

#[derive(Args)]
struct ReportArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// NVPTX: threads per block every launch uses, for occupancy [default: the kernel's launch bounds, else 256].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    block_size: Option<u32>,
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct TuneArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Write the results here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    search: SearchArgs,
    /// Show a unified diff of each tuned kernel's IR and assembly.
    #[arg(long)]
    diff: bool,
    /// Then write the decisions as a verified source patch here (as `regtune fix -o PATCH`).
    #[arg(long, value_name = "PATCH")]
    patch: Option<PathBuf>,
}

#[derive(Args)]
struct FixArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// The decisions db the patch expresses.
    #[arg(long, value_name = "PATH", default_value = ".regtune/decisions.json")]
    db: PathBuf,
    /// Also express the suggestions not yet confirmed (`__restrict__`, `__launch_bounds__`).
    #[arg(long)]
    with_suggestions: bool,
    /// Edit the files in place (all or none) instead of printing the patch.
    #[arg(long)]
    apply: bool,
    /// Write the patch here instead of stdout.
    #[arg(short, long, value_name = "PATCH")]
    output: Option<PathBuf>,
}

/// The search and objective options `tune` and `batch` share.
#[derive(Args)]
struct SearchArgs {
    /// What to optimize for.
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Occupancy)]
    objective: ObjectiveArg,
    /// noalias is an assumption about the caller: try and report it, apply it, or skip it.
    #[arg(long, value_enum, default_value_t = NoaliasArg::Suggest)]
    noalias: NoaliasArg,
    /// pow(x, 2.0) → x*x where the library pow is not correctly rounded (ocml's, libdevice's) and the
    /// call has no afn: results change in the last bit, so try and report it, apply it, or skip it.
    #[arg(long, value_enum, default_value_t = Pow2Arg::Suggest)]
    pow2: Pow2Arg,
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
    /// Stop a variant compile after this long, and go on with the next
    /// [default: max(5, 10× the file's plain compile)].
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    variant_timeout: Option<std::time::Duration>,
    /// End a file's search after this long (per target), keeping the best
    /// results so far [default: 8× the file's plain compile].
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    time_budget: Option<std::time::Duration>,
    /// Builds per kernel kept for `regtune measure` to time (the decision and suggestions count):
    /// each occupancy step's register cap with the rewrites found, spilling, and unroll caps,
    /// spread over the steps; 0: only the decision and suggestions. On NVIDIA every step's register
    /// cap alone is built besides (plain's PTX with `.maxnreg` edited: a ptxas run each), and with
    /// clang each step's cap on the rewrites found (their PTX edited so); with
    /// --compiler nvcc also nvcc's -maxrregcount at each step, and every build with a rewrite of the
    /// source (nvcc's build of the source as `regtune fix` writes it, then a ptxas run per cap on it)
    /// while time is left.
    #[arg(long, value_name = "N", default_value_t = 8)]
    candidates: usize,
    /// Do not build each CUDA file with the other compiler too (clang with --compiler nvcc; else nvcc,
    /// where one is installed) for `regtune measure` to time its code beside the candidates.
    #[arg(long)]
    no_other_compiler: bool,
    /// What GPUs showed of each class of transform (JSON, as regtune ships it): the default
    /// applies unasked only classes that never cost more than 2% there [default: the shipped table].
    #[arg(long, value_name = "FILE", env = "REGTUNE_EVIDENCE")]
    evidence: Option<PathBuf>,
}

/// `LABEL=PATH`, the label made of letters, digits, `-`, `_` and `.`.
fn labelled_path(s: &str) -> Result<(String, PathBuf), String> {
    let (label, path) = s.split_once('=').ok_or_else(|| format!("`{s}` is not LABEL=CODE_OBJECT"))?;
    if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(format!("`{label}` is not a label: use letters, digits, `-`, `_` and `.`"));
    }
    let path = PathBuf::from(path);
    if !path.is_file() {
        return Err(format!("{}: no such file", path.display()));
    }
    Ok((label.to_string(), path))
}

/// A positive number of seconds.
fn seconds(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(std::time::Duration::from_secs_f64(x)),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// Seconds, 0 included (none).
fn seconds_or_none(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a number of seconds (0: none)")),
    }
}

#[derive(Args)]
struct PredictArgs {
    #[command(flatten)]
    inputs: Inputs,
    #[command(flatten)]
    search: SearchArgs,
    /// Write the JSON here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Keep every candidate's code object here (as `tune` names them), to time them on a GPU.
    #[arg(long, value_name = "DIR")]
    code_dir: Option<PathBuf>,
}

#[derive(Args)]
struct BatchArgs {
    /// The build directory holding compile_commands.json, or the file itself.
    #[arg(short = 'p', value_name = "BUILD_DIR|compile_commands.json")]
    compile_db: PathBuf,
    /// Only units whose path (absolute, or relative to the current directory) matches; repeatable.
    #[arg(long, value_name = "GLOB")]
    filter: Vec<String>,
    /// Tune only the I-th of N parts of the units (1 <= I <= N), for a job array; join the dbs with `merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<batch::Shard>,
    /// Targets for every unit, comma-separated [default: each entry's own --offload-arch, else gfx90a].
    #[arg(long = "offload-arch", value_name = "A[,B...]")]
    offload_arch: Option<String>,
    #[command(flatten)]
    search: SearchArgs,
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Append every variant compiled (unit, kernel, target, transforms, usage, compile time) as JSON lines.
    #[arg(long, value_name = "FILE")]
    record_all: Option<PathBuf>,
}

#[derive(Args)]
struct MeasureArgs {
    /// The decisions db; the candidates are in the `.code` directory beside it.
    #[arg(long, value_name = "PATH", default_value = ".regtune/decisions.json")]
    db: PathBuf,
    /// Launches of each kernel to measure (the first N).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    launches: u32,
    /// The most timed runs of each candidate per launch, interleaved (after one untimed run whose
    /// bytes are compared). A candidate stops once its time over plain's is known to ±0.5 % or
    /// it is slower beyond the noise: steady kernels take 20 runs, short noisy ones many.
    #[arg(long, value_name = "K", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=10000))]
    runs: u32,
    /// Seconds of replay per kernel, over its launches: fewer runs (at least three) when its
    /// candidates would take longer.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "5")]
    budget: Option<std::time::Duration>,
    /// Also time your own build of the kernels, e.g. one compiled with -maxrregcount=64: reported
    /// beside the candidates as `compare:LABEL`, never chosen. Repeatable.
    #[arg(long, value_name = "LABEL=CODE_OBJECT", value_parser = labelled_path)]
    compare: Vec<(String, PathBuf)>,
    /// Copy every allocation the program has live at a measured launch, not only those its
    /// arguments point into and the pointers stored in them (or in the module's variables) lead to.
    #[arg(long)]
    capture_all: bool,
    /// The most a measured launch's copy takes beyond its arguments' allocations: those reached
    /// through pointers stored in device memory (or --capture-all's). Over it they are left out,
    /// said in one line.
    #[arg(long, value_name = "MIB", default_value_t = regtune_runtime::plan::DEFAULT_CAPTURE_BUDGET >> 20)]
    capture_budget: u64,
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Write the report here instead of stderr.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Check the db, the candidates and the tools, and say what would be measured; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Keep the plan, the interposer's events and the replayer's log in DIR (for diagnosis).
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Decide again from a run kept with --keep DIR (its events), running nothing: after a new
    /// regtune, or to read its report again. The db's candidates must be the ones that run timed.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["keep", "dry_run"])]
    from: Option<PathBuf>,
    /// Where a kernel is launched too few times after its replay to time its choice on the
    /// program's own launches (one launch, say), run the program again, whole, plain's code and the
    /// choice's in turn (40 runs), for at most this long; 0: never.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_or_none, default_value_t = 300.0)]
    whole_run_budget: f64,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "from", value_name = "PROGRAM")]
    program: Vec<std::ffi::OsString>,
}

#[derive(Args)]
struct ExplainArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Only this kernel (its name, as in `report`, or its symbol).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    format: ExplainFormat,
    /// text and json: write here instead of stdout; html: the directory for the pages [default: .].
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// The decisions db, for what `tune` measured.
    #[arg(long, value_name = "PATH", default_value = ".regtune/decisions.json")]
    db: PathBuf,
}

#[derive(Args)]
struct ConfirmArgs {
    /// The kernel: its name as the reports show it, or its symbol.
    kernel: String,
    /// The suggestion, as `regtune measure` names it (`suggested`, `suggested-2`, ...); may be left
    /// out where the kernel has one.
    suggestion: Option<String>,
    #[arg(long, default_value = ".regtune/decisions.json")]
    db: PathBuf,
}

#[derive(Args)]
struct MergeArgs {
    /// The dbs to join (each with its batch records beside it, if any).
    #[arg(required = true, value_name = "DB")]
    dbs: Vec<PathBuf>,
    /// The db to join them into (entries already there are kept).
    #[arg(short, long, value_name = "DB", default_value = ".regtune/decisions.json")]
    output: PathBuf,
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

impl SearchArgs {
    /// The tune options; sizes the thread pool for `-j`.
    fn tune_options(&self, diff: bool) -> Result<tune::Options> {
        if let Some(j) = self.jobs {
            rayon::ThreadPoolBuilder::new().num_threads(j.max(1)).build_global()?;
        }
        Ok(tune::Options {
            objective: self.objective.into(),
            noalias: self.noalias.into(),
            pow2: self.pow2.into(),
            block_size: self.block_size.unwrap_or(tune::BlockSize::Unset),
            allow_scratch: self.allow_scratch,
            diff,
            noalias_candidates: 4,
            variant_timeout: self.variant_timeout,
            time_budget: self.time_budget,
            code_dir: Some(regtune::measure::code::dir(&self.db)),
            other_compiler: !self.no_other_compiler,
            candidates: self.candidates,
            evidence: match &self.evidence {
                Some(path) => regtune::evidence::Evidence::load(path).map_err(|e| anyhow::anyhow!(e))?,
                None => regtune::evidence::Evidence::shipped(),
            },
        })
    }
}

/// `batch`'s exit status when nothing could run: a usage error's, as clap's
/// own (101 is Rust's panic status, which scripts read as a crash).
const BATCH_FATAL: u8 = 2;
/// `measure`'s exit status when measuring could not start.
const MEASURE_FATAL: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Report(args) => report(args),
        Command::Tune(args) => tune(args),
        Command::Predict(args) => predict(args),
        Command::Batch(args) => batch(args).or_else(|e| {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(BATCH_FATAL))
        }),
        Command::Fix(args) => fix(args),
        Command::Merge(args) => merge(args),
        Command::Confirm(args) => confirm(args),
        Command::Measure(args) => {
            let options = regtune::measure::Options {
                db: args.db,
                launches: args.launches,
                runs: args.runs,
                budget: args.budget.map_or(0.0, |d| d.as_secs_f64()),
                compare: args.compare,
                capture: regtune_runtime::plan::Capture {
                    all: args.capture_all,
                    budget_bytes: args.capture_budget.saturating_mul(1 << 20),
                },
                format: args.format.into(),
                output: args.output,
                dry_run: args.dry_run,
                keep: args.keep,
                from: args.from,
                whole_run_budget: args.whole_run_budget,
                program: args.program,
            };
            return regtune::measure::run(&options).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                ExitCode::from(MEASURE_FATAL)
            });
        }
        Command::Explain(args) => explain(args),
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
    let ctx = args.inputs.context()?;
    let options = resources::Options { block_size: args.block_size };
    let (rows, failures) = report::run(&ctx, &args.inputs.files, &options);
    for f in &failures {
        f.print();
    }
    if !rows.is_empty() {
        output::emit(&output::render(&rows, args.format.into(), "kernels"), args.output.as_deref())?;
    }
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn tune(args: TuneArgs) -> Result<ExitCode> {
    if args.patch.is_some() {
        regtune::rdc::unsupported("tune --patch", &args.inputs.clang_args).map_err(anyhow::Error::msg)?;
    }
    args.inputs.archs()?;
    // A db that cannot be read, parsed or saved stops the run before any compile.
    // One line naming the db and the cause; no cause chain after it.
    let known = regtune_decisions::Db::load_for_update(&args.search.db).map_err(|e| anyhow::anyhow!("{e}"))?;
    // nvcc's builds run no pass plugin; it finds the rewrites of the
    // source they try (without it, none are).
    let ctx = args.inputs.context()?;
    let ctx = if ctx.nvcc.is_some() { ctx.with_plugin_if_found().0 } else { ctx.with_plugin()? };
    let options = args.search.tune_options(args.diff)?;
    let (rows, mut failures) = tune::run(&ctx, &args.inputs.files, &options, &known, &args.search.db);
    if let Some(path) = &args.patch {
        let options = fix::Options { db: args.search.db.clone(), with_suggestions: false };
        match fix::run(&ctx, &args.inputs.files, &options) {
            Ok((patch, fix_failures)) => {
                failures.extend(fix_failures);
                eprint!("{}", patch.summary());
                output::emit(&patch.text(), Some(path))?;
            }
            Err(f) => failures.push(f),
        }
    }
    for f in &failures {
        f.print();
    }
    if !rows.is_empty() {
        let format = args.format.into();
        let mut text = output::render(&rows, format, "kernels");
        if format == Format::Table {
            for r in &rows {
                for s in &r.suggestions {
                    text.push_str(&format!("suggestion for {} on {}: {s}\n", names::short_name(&r.report.name), r.report.arch));
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

fn predict(args: PredictArgs) -> Result<ExitCode> {
    regtune::rdc::unsupported("predict", &args.inputs.clang_args).map_err(anyhow::Error::msg)?;
    let ctx = args.inputs.context()?.with_plugin()?;
    let options = args.search.tune_options(false)?;
    let (doc, failures) = regtune::predict::run(&ctx, &args.inputs.files, &options, args.code_dir.as_deref());
    for f in &failures {
        f.print();
    }
    output::emit(&(serde_json::to_string_pretty(&doc)? + "\n"), args.output.as_deref())?;
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `regtune fix`'s exit status: 0 when there was nothing to patch or every
/// decision is in the patch, 1 when a decision could not be expressed, 2
/// when something failed (a file, the db, the toolchain).
const FIX_INCOMPLETE: u8 = 1;
const FIX_FAILED: u8 = 2;

fn fix(args: FixArgs) -> Result<ExitCode> {
    let failed = |e: anyhow::Error| {
        eprintln!("error: {e:#}");
        ExitCode::from(FIX_FAILED)
    };
    let ctx = match args.inputs.context().and_then(|c| Ok(c.with_plugin()?)) {
        Ok(c) => c,
        Err(e) => return Ok(failed(e)),
    };
    let options = fix::Options { db: args.db, with_suggestions: args.with_suggestions };
    let (patch, failures) = match fix::run(&ctx, &args.inputs.files, &options) {
        Ok(r) => r,
        Err(f) => return Ok(failed(anyhow::anyhow!(f.message))),
    };
    for f in &failures {
        f.print();
    }
    eprint!("{}", patch.summary());
    if args.apply {
        if !failures.is_empty() {
            return Ok(failed(anyhow::anyhow!("nothing was written: {} file(s) failed", failures.len())));
        }
        if let Err(e) = fix::write::apply(&patch.files) {
            return Ok(failed(e.into()));
        }
    } else if let Err(e) = output::emit(&patch.text(), args.output.as_deref()) {
        return Ok(failed(e.into()));
    }
    if !failures.is_empty() {
        eprintln!("regtune fix: {} file(s) failed; {}", failures.len(), patch.verdict(false).trim_start_matches("regtune fix: "));
        return Ok(ExitCode::from(FIX_FAILED));
    }
    eprintln!("{}", patch.verdict(args.apply));
    Ok(if patch.complete() { ExitCode::SUCCESS } else { ExitCode::from(FIX_INCOMPLETE) })
}

fn batch(args: BatchArgs) -> Result<ExitCode> {
    let archs = args.offload_arch.as_deref().map(Arch::parse_list).transpose()?;
    let filters = args
        .filter
        .iter()
        .map(|f| glob::Pattern::new(f).map_err(|e| anyhow::anyhow!("--filter `{f}` is not a glob: {e}")))
        .collect::<Result<Vec<_>>>()?;
    // Each compile command names its own targets and flags.
    let ctx = Context::with_toolchain(Toolchain::detect()?, vec![], vec![]).with_plugin()?;
    let options = batch::Options {
        tune: args.search.tune_options(false)?,
        archs,
        filters,
        shard: args.shard,
        db: args.search.db,
        record_all: args.record_all,
    };
    // The errors name their file and cause in one line; no cause chain after it.
    let result = batch::run(&ctx, &args.compile_db, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
    for u in &result.units {
        u.print_failure();
    }
    if let Some(path) = &args.html {
        output::emit(&batch::html::page(&result), Some(path))?;
    }
    output::emit(&batch::render::render(&result, args.format.into()), args.output.as_deref())?;
    // The exit status counts failed translation units; BATCH_FATAL says "nothing ran".
    Ok(ExitCode::from(result.failed_units().min(100) as u8))
}

fn merge(args: MergeArgs) -> Result<ExitCode> {
    let (result, conflicts) = batch::merge(&args.dbs, &args.output).map_err(|e| anyhow::anyhow!("{e}"))?;
    if conflicts > 0 {
        eprintln!("warning: {conflicts} db entries differed between the inputs; the later input's were kept");
    }
    if let Some(path) = &args.html {
        output::emit(&batch::html::page(&result), Some(path))?;
    }
    output::emit(&batch::render::render(&result, args.format.into()), None)?;
    Ok(ExitCode::SUCCESS)
}

fn confirm(args: ConfirmArgs) -> Result<ExitCode> {
    let mut db = regtune_decisions::Db::load_for_update(&args.db)?;
    let lines = regtune::confirm::confirm(&mut db, &args.kernel, args.suggestion.as_deref())
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.db.display()))?;
    db.save(&args.db)?;
    for line in lines {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn explain(args: ExplainArgs) -> Result<ExitCode> {
    regtune::rdc::unsupported("explain", &args.inputs.clang_args).map_err(anyhow::Error::msg)?;
    let archs = args.inputs.archs()?;
    let db = regtune_decisions::Db::load(&args.db)?;
    let ctx = Context::new(archs, args.inputs.clang_args.clone())?;
    let options = explain::Options { kernel: args.kernel.as_deref(), db: &db };
    let (kernels, failures) = explain::run(&ctx, &args.inputs.files, &options);
    for f in &failures {
        f.print();
    }
    for path in explain::emit(&kernels, args.format.into(), args.output.as_deref())? {
        println!("wrote {}", path.display());
    }
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn doctor() -> Result<ExitCode> {
    let checks = Toolchain::doctor();
    let mut ok = true;
    for c in &checks {
        match &c.found {
            Some(found) => println!("ok       {:<48} {found}", c.what),
            None => {
                ok &= !c.required;
                println!("missing  {:<48} fix: {}", c.what, c.fix);
            }
        }
    }
    match Toolchain::detect() {
        Ok(tc) => println!("using    {} ({:?})", tc.version, tc.flavor),
        Err(e) => println!("error    {e}"),
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
