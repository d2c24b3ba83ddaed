; A module with nothing for any pass to do.
target triple = "amdgcn-amd-amdhsa"

define void @f() {
  ret void
}
