//===- unroll_cap.cpp - bound LoopUnroll's own decision --------------------===//
//
// The other half of regtune-unroll-cap<N> (passes/src/unroll_cap.rs marks the
// capped functions with "regtune-unroll-cap"="N"):
//
//   opt-22 -load-pass-plugin=target/debug/libregtune_passes.so
//     -passes='regtune-unroll-cap<4>,default<O3>' in.ll -S -o out.ll
//
// LoopUnroll (LoopUnrollPass.cpp, gatherUnrollingPreferences) applies
// -unroll-max-count and -unroll-full-max-count as maxima on the factor it
// chose, after the target's preferences, but only when the option "occurred"
// (getNumOccurrences() > 0): assigning a value is not enough, so the value is
// given as an occurrence. -pragma-unroll-full-max-iterations bounds
// llvm.loop.unroll.full; a loop past it falls back to the cost model under
// the two maxima. A pass right before each unroll pass sets the three to the
// function's cap, or back to what the command line said:
//
//   - LateLoopOptimizationsEP: a loop pass in the same loop pipeline, just
//     before LoopDeletion and LoopFullUnroll, run for each loop;
//   - VectorizerStartEP: a function pass in the same function pipeline as
//     LoopUnroll, run for each function before it reaches LoopUnroll;
//   - OptimizerLastEP: back to the command line's values for the code
//     generator and anything after.
//
// One request the maxima miss: llvm.loop.unroll.enable (a bare
// `#pragma unroll`) on a loop with no known trip count but a small bound
// (<= -unroll-max-upperbound) is unrolled by that bound. There the loop's
// pragma becomes llvm.loop.unroll.count N when the bound exceeds N.
//
// And one decision they allow that O3's size does not: before LoopUnroll, a
// loop that still contains a loop is marked llvm.loop.unroll.disable unless
// it can be unrolled fully within N (keepOuterLoopWhole says why).
//
// Global state: cl::opt values are process-wide. clang and opt run one
// pipeline at a time on one thread, which is all this supports; never use
// the cap under a multi-threaded LTO backend.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <algorithm>

using namespace llvm;

namespace {

// passes/src/unroll_cap.rs: CAP_ATTRIBUTE.
constexpr const char *CapAttribute = "regtune-unroll-cap";

/// One of LoopUnroll's `cl::opt<unsigned>` maxima, and what the command
/// line gave it.
struct Maximum {
  cl::opt<unsigned> *Opt = nullptr;
  bool Given = false;
  unsigned Value = 0;

  explicit Maximum(StringRef Name) {
    auto &Options = cl::getRegisteredOptions();
    auto It = Options.find(Name);
    if (It == Options.end()) {
      errs() << "regtune: warning: LLVM has no -" << Name
             << "; unroll caps cannot bound it\n";
      return;
    }
    // LoopUnrollPass.cpp declares all three as cl::opt<unsigned> (LLVM 22).
    Opt = static_cast<cl::opt<unsigned> *>(It->second);
    Given = Opt->getNumOccurrences() > 0;
    Value = Opt->getValue();
  }

  /// At most `Cap` (0: as the command line said).
  void bound(unsigned Cap) {
    if (!Opt)
      return;
    Opt->reset();
    if (Cap != 0)
      Opt->addOccurrence(0, Opt->ArgStr, utostr(Given ? std::min(Value, Cap) : Cap));
    else if (Given)
      Opt->addOccurrence(0, Opt->ArgStr, utostr(Value));
  }
};

/// The three maxima, read once, before regtune changes any of them.
struct Maxima {
  Maximum MaxCount{"unroll-max-count"};
  Maximum FullMaxCount{"unroll-full-max-count"};
  Maximum PragmaFullMax{"pragma-unroll-full-max-iterations"};
  unsigned Current = 0;

  void bound(unsigned Cap) {
    if (Cap == Current)
      return;
    MaxCount.bound(Cap);
    FullMaxCount.bound(Cap);
    PragmaFullMax.bound(Cap);
    Current = Cap;
  }
};

Maxima &maxima() {
  static Maxima M;
  return M;
}

/// The function's cap; 0 when it has none.
unsigned capOf(const Function &F) {
  Attribute A = F.getFnAttribute(CapAttribute);
  unsigned Cap = 0;
  if (!A.isStringAttribute() || A.getValueAsString().getAsInteger(10, Cap))
    return 0;
  return Cap;
}

/// LoopUnroll's trip count: the smallest exact one over the exits.
unsigned tripCount(Loop &L, ScalarEvolution &SE) {
  SmallVector<BasicBlock *, 8> Exiting;
  L.getExitingBlocks(Exiting);
  unsigned Count = 0;
  for (BasicBlock *BB : Exiting)
    if (unsigned TC = SE.getSmallConstantTripCount(&L, BB))
      if (!Count || TC < Count)
        Count = TC;
  return Count;
}

/// `#pragma unroll` on a loop with an unknown trip count but a bound of at
/// most -unroll-max-upperbound: LoopUnroll unrolls it by the bound, past any
/// maximum. Ask for N instead when the bound is larger.
void capBoundedEnable(Loop &L, ScalarEvolution &SE, unsigned Cap) {
  if (hasUnrollTransformation(&L) & TM_Disable)
    return;
  if (!findOptionMDForLoop(&L, "llvm.loop.unroll.enable") ||
      findOptionMDForLoop(&L, "llvm.loop.unroll.count"))
    return;
  static unsigned UpperBound = [] {
    auto &Options = cl::getRegisteredOptions();
    auto It = Options.find("unroll-max-upperbound");
    // LoopUnrollPass.cpp: cl::opt<unsigned>, 8 by default.
    return It == Options.end()
               ? 8u
               : static_cast<cl::opt<unsigned> *>(It->second)->getValue();
  }();
  if (tripCount(L, SE) != 0)
    return;
  unsigned Bound = SE.getSmallConstantMaxTripCount(&L);
  if (Bound <= Cap || Bound > UpperBound)
    return;
  LLVMContext &Ctx = L.getHeader()->getContext();
  Metadata *Count[] = {
      MDString::get(Ctx, "llvm.loop.unroll.count"),
      ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(Ctx), Cap))};
  MDNode *ID = makePostTransformationMetadata(
      Ctx, L.getLoopID(), {"llvm.loop.unroll.enable"}, {MDNode::get(Ctx, Count)});
  L.setLoopID(ID);
}

/// A loop that still holds another loop when LoopUnroll reaches it is
/// unrolled fully (when its trip count is at most N) or not at all: a
/// partial unroll would copy the inner loops whole, remainders included,
/// where O3's full unroll of the nest folds them away (launch_bounds_spill:
/// twice O3's instructions at N = 4). An explicit count is left as asked.
void keepOuterLoopWhole(Loop &L, ScalarEvolution &SE, unsigned Cap) {
  if (L.isInnermost() || (hasUnrollTransformation(&L) & TM_Disable) ||
      findOptionMDForLoop(&L, "llvm.loop.unroll.count"))
    return;
  unsigned Trips = tripCount(L, SE);
  if (Trips == 0)
    Trips = SE.getSmallConstantMaxTripCount(&L);
  if (Trips != 0 && Trips <= Cap)
    return;
  L.setLoopAlreadyUnrolled();
}

/// Before LoopFullUnroll, for each loop.
struct CapBeforeFullUnroll : PassInfoMixin<CapBeforeFullUnroll> {
  PreservedAnalyses run(Loop &L, LoopAnalysisManager &,
                        LoopStandardAnalysisResults &AR, LPMUpdater &) {
    unsigned Cap = capOf(*L.getHeader()->getParent());
    maxima().bound(Cap);
    if (Cap != 0)
      capBoundedEnable(L, AR.SE, Cap);
    // Options and loop properties: no analysis depends on either.
    return PreservedAnalyses::all();
  }
};

/// Before LoopUnroll, for each function.
struct CapBeforeUnroll : PassInfoMixin<CapBeforeUnroll> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &FAM) {
    unsigned Cap = capOf(F);
    maxima().bound(Cap);
    if (Cap != 0) {
      auto &LI = FAM.getResult<LoopAnalysis>(F);
      auto &SE = FAM.getResult<ScalarEvolutionAnalysis>(F);
      for (Loop *L : LI.getLoopsInPreorder()) {
        capBoundedEnable(*L, SE, Cap);
        keepOuterLoopWhole(*L, SE, Cap);
      }
    }
    return PreservedAnalyses::all();
  }
};

/// After the optimizer: the command line's values again.
struct UncapAfterOptimizer : PassInfoMixin<UncapAfterOptimizer> {
  PreservedAnalyses run(Module &, ModuleAnalysisManager &) {
    maxima().bound(0);
    return PreservedAnalyses::all();
  }
};

} // namespace

void regtune_register_unroll_cap(PassBuilder &PB) {
  PB.registerLateLoopOptimizationsEPCallback(
      [](LoopPassManager &LPM, OptimizationLevel) {
        LPM.addPass(CapBeforeFullUnroll());
      });
  PB.registerVectorizerStartEPCallback(
      [](FunctionPassManager &FPM, OptimizationLevel) {
        FPM.addPass(CapBeforeUnroll());
      });
#if LLVM_VERSION_MAJOR >= 20
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
#else
  // Before LLVM 20 this callback had no LTO phase.
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) {
#endif
        MPM.addPass(UncapAfterOptimizer());
      });
}
