"""The sections of a cubin (an ELF64 object for EM_CUDA), for the bench
scripts that compare kernels' code: bench/search/rebuild.py (a kernel's
.text and .nv.info in a rebuilt object) and bench/nvcc/corpus.py (what of
a cubin is code, to tell the sweep's builds apart)."""

import struct

SHT_NOBITS = 8


def sections(data):
    """(name, sh_type, size, bytes) of each section; bytes are b"" for a
    SHT_NOBITS section, which has a size and no contents."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    out = []
    for h in headers:
        name = data[names + h[0]:data.index(b"\0", names + h[0])].decode()
        body = b"" if h[1] == SHT_NOBITS else data[h[4]:h[4] + h[5]]
        out.append((name, h[1], h[5], body))
    return out
