//===- plugin.cpp - PassBuilder glue for the regtune passes ---------------===//
//
// The passes themselves are Rust (passes/src). This file only bridges:
//
//   1. a pipeline-parsing callback, so `opt -passes=regtune-pow2` etc. work;
//      Rust decides which names (and parameters) are valid,
//   2. extension-point callbacks, so `clang -fpass-plugin=...` runs
//      `regtune-apply<early>` at PipelineStartEP and `regtune-apply<late>` at
//      OptimizerLastEP (Rust checks the triple and the decisions db),
//   3. the `-regtune-decisions=<file>` option, handed to Rust on every run,
//   4. the unroll cap's maxima before the unroll passes (unroll_cap.cpp),
//   5. Function::deleteBody for one-kernel builds, which LLVM-C lacks.
//
// `llvmGetPassPluginInfo` is defined in Rust (src/ffi/mod.rs) so that the
// cdylib exports it; its registration callback is regtune_shim_register.
//
//===----------------------------------------------------------------------===//

#include "llvm-c/Types.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CBindingWrapping.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

#include <cstddef>
#include <string>

#include "nvvm_annotations.h"

using namespace llvm;

// build.rs passes the LLVM the Rust half (inkwell, llvm-sys) was built for;
// the C++ half must see that LLVM's headers, or the two disagree on ABI.
static_assert(LLVM_VERSION_MAJOR == REGTUNE_LLVM_MAJOR,
              "LLVM headers differ from the LLVM the plugin is built for");

// Implemented in Rust (src/ffi/mod.rs).
extern "C" bool regtune_pass_is_known(const char *Name, size_t Len);
extern "C" bool regtune_run_pass(LLVMModuleRef M, const char *Name,
                                 size_t NameLen, const char *Decisions,
                                 size_t DecisionsLen);
// unroll_cap.cpp.
void regtune_register_unroll_cap(PassBuilder &PB);

namespace {

cl::opt<std::string> DecisionsPath(
    "regtune-decisions",
    cl::desc("regtune decisions db for regtune-apply (default: the "
             "REGTUNE_DECISIONS environment variable)"),
    cl::value_desc("file"), cl::init(""));

/// One regtune pass, named by its full pipeline text
/// (`regtune-unroll-cap<4>`); Rust parses the text again when it runs.
struct RegtunePass : PassInfoMixin<RegtunePass> {
  std::string Name;

  explicit RegtunePass(std::string Name) : Name(std::move(Name)) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    const std::string &D = DecisionsPath.getValue();
    regtune::KernelAnnotations Before(M);
    bool Changed = regtune_run_pass(wrap(&M), Name.data(), Name.size(),
                                    D.data(), D.size());
    if (Changed)
      Before.renewChanged(M, MAM);
    // Nothing changed: every analysis still holds.
    return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }

  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)>) const {
    OS << Name;
  }

  // Decisions (occupancy attributes, unroll caps) must apply at -O0 and on
  // optnone functions too: they are what the tuner measured.
  static bool isRequired() { return true; }
};

} // namespace

// Called from Rust (src/ffi/ir.rs): what LLVM-C cannot do.
extern "C" void regtune_delete_body(LLVMValueRef F) {
  unwrap<Function>(F)->deleteBody();
}

extern "C" void regtune_shim_register(PassBuilder &PB) {
  // 1. `opt -passes=regtune-...`
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM,
         ArrayRef<PassBuilder::PipelineElement>) {
        // Skip names that are not ours before asking Rust.
        if (!Name.starts_with("regtune-"))
          return false;
        if (!regtune_pass_is_known(Name.data(), Name.size()))
          return false;
        MPM.addPass(RegtunePass(Name.str()));
        return true;
      });

  // 2. clang -fpass-plugin: decisions before anything else runs ...
  PB.registerPipelineStartEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) {
        MPM.addPass(RegtunePass("regtune-apply<early>"));
      });
  // ... and the sink after the optimizer, right before codegen.
#if LLVM_VERSION_MAJOR >= 20
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
#else
  // Before LLVM 20 this callback had no LTO phase.
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) {
#endif
        MPM.addPass(RegtunePass("regtune-apply<late>"));
      });
  // 4. unroll caps bound LoopUnroll's own decisions.
  regtune_register_unroll_cap(PB);
}
