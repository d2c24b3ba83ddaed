// A multi-kernel CUDA program made of the examples' own hosts: each
// examples/*.hip is compiled as CUDA with its main() renamed (build.py),
// and this main runs them in turn, as one application would run its
// phases. Built plainly: no regtune anywhere in it.
//
//   app                   run all five
//   app NAME...           run these (laplacian3d, launch_bounds_spill, lbm_d3q19, long_lived, private_array)
//   app --exit-early      run laplacian3d, then exit with status 3 before the rest
#include <cstdio>
#include <cstdlib>
#include <cstring>

int example_laplacian3d();
int example_launch_bounds_spill();
int example_lbm_d3q19();
int example_long_lived();
int example_private_array();

static const struct {
    const char* name;
    int (*run)();
} examples[] = {
    {"laplacian3d", example_laplacian3d},
    {"launch_bounds_spill", example_launch_bounds_spill},
    {"lbm_d3q19", example_lbm_d3q19},
    {"long_lived", example_long_lived},
    {"private_array", example_private_array},
};

int main(int argc, char** argv)
{
    if (argc == 2 && strcmp(argv[1], "--exit-early") == 0) {
        example_laplacian3d();
        fflush(stdout);
        exit(3);
    }
    for (const auto& e : examples) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; ++i)
            wanted |= strcmp(argv[i], e.name) == 0;
        if (!wanted)
            continue;
        printf("== %s\n", e.name);
        if (int rc = e.run())
            return rc;
    }
    return 0;
}
