; RUN: opt -passes='default<O3>' -S %S/nested-no-growth.ll -o %t.plain.ll
; RUN: %opt -passes='default<O3>' -S %S/nested-no-growth.ll -o %t.plugin.ll
; RUN: diff %t.plain.ll %t.plugin.ll
; RUN: opt -passes='default<O3>' -S %S/o3-pragmas.ll -o %t.plain2.ll
; RUN: %opt -passes='default<O3>' -S %S/o3-pragmas.ll -o %t.plugin2.ll
; RUN: diff %t.plain2.ll %t.plugin2.ll
;
; Loaded into the pipeline with no function capped, the shim's passes
; change nothing: the output is plain O3's, byte for byte.
