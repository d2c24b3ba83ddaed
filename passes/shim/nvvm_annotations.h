//===- nvvm_annotations.h - LLVM 19: make new kernel limits reach the PTX -===//
//
// LLVM 19's NVPTX backend reads a kernel's launch limits (maxnreg,
// maxntidx) from !nvvm.annotations through a per-function cache that it
// never refreshes, and NVVMIntrRangePass fills that cache at PipelineStart,
// before any plugin pass runs: limits a regtune pass adds afterwards never
// reach the PTX under clang (opt | llc, two processes, sees them). A
// function the backend has not looked at yet has no cache entry, so each
// function whose annotations a pass changed is moved, body and all, into a
// fresh llvm::Function that takes its place, name and uses. LLVM 20 reads
// the limits from function attributes instead: there this is a no-op.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"

#if LLVM_VERSION_MAJOR < 20
#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Metadata.h"

#include <map>
#include <vector>
#endif

namespace regtune {

#if LLVM_VERSION_MAJOR < 20

/// The annotation operands (after the function) of every annotated function.
class KernelAnnotations {
  std::map<const llvm::Function *, std::vector<const llvm::Metadata *>> Of;

public:
  explicit KernelAnnotations(const llvm::Module &M) {
    const llvm::NamedMDNode *Nodes = M.getNamedMetadata("nvvm.annotations");
    if (!Nodes)
      return;
    for (const llvm::MDNode *N : Nodes->operands()) {
      if (N->getNumOperands() == 0)
        continue;
      auto *V = llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(N->getOperand(0));
      auto *F = V ? llvm::dyn_cast<llvm::Function>(V->getValue()) : nullptr;
      if (!F)
        continue;
      // Strings and constants are uniqued: equal operands, equal pointers.
      for (const llvm::MDOperand &Op : llvm::drop_begin(N->operands()))
        Of[F].push_back(Op.get());
    }
  }

  /// Renew every function whose annotations differ from this snapshot's.
  void renewChanged(llvm::Module &M, llvm::ModuleAnalysisManager &MAM) const {
    KernelAnnotations Now(M);
    for (const auto &[F, Ops] : Now.Of) {
      auto Before = Of.find(F);
      if (Before == Of.end() || Before->second != Ops)
        renew(const_cast<llvm::Function &>(*F), MAM);
    }
  }

private:
  static void renew(llvm::Function &F, llvm::ModuleAnalysisManager &MAM) {
    using namespace llvm;
    Function *NF = Function::Create(F.getFunctionType(), F.getLinkage(),
                                    F.getAddressSpace());
    F.getParent()->getFunctionList().insert(F.getIterator(), NF);
    NF->copyAttributesFrom(&F);
    NF->setComdat(F.getComdat());
    NF->copyMetadata(&F, 0);
    NF->splice(NF->begin(), &F);
    for (auto [Old, New] : zip(F.args(), NF->args())) {
      Old.replaceAllUsesWith(&New);
      New.takeName(&Old);
    }
    NF->takeName(&F);
    F.replaceAllUsesWith(NF);
    // As GlobalDCE does: no analysis result may outlive its function.
    MAM.getResult<FunctionAnalysisManagerModuleProxy>(*F.getParent())
        .getManager()
        .clear(F, F.getName());
    F.eraseFromParent();
  }
};

#else

struct KernelAnnotations {
  explicit KernelAnnotations(const llvm::Module &) {}
  void renewChanged(llvm::Module &, llvm::ModuleAnalysisManager &) const {}
};

#endif

} // namespace regtune
