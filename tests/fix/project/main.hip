// A program laid out as real ones are (tests/fix.rs): the unit includes its
// kernels from a `.cu` file and from headers, one header's device function
// is inlined into a kernel of another, a macro in a header defines kernels
// this file expands, and a vendor's header comes through -isystem.
#include <hip/hip_runtime.h>
#include <vendor_math.h>

#include "kernels.cu"
#include "inc/dslash.h"
#include "inc/macros.h"

SQUARE_ADD(square_add_a, double)
SQUARE_ADD(square_add_b, double)

// Its square is in the vendor's header, which fix may not edit.
__global__ void norms(const double* v, double* out, int n)
{
    out[threadIdx.x] = norm2(v + threadIdx.x * n, n);
}
