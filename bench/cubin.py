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


EIATTR_PARAM_CBANK = 0x0A  # [the kernel's .nv.constant0 section's symbol index, offset and size]
EIATTR_EXTERNS = 0x0F  # the symbol indices of the external functions it calls


def symbol_names(data):
    """Each symbol's name, by index (the .symtab's order)."""
    parts = {name: body for name, _, _, body in sections(data)}
    symtab, strtab = parts.get(".symtab", b""), parts.get(".strtab", b"")
    names = []
    for i in range(len(symtab) // 24):
        at, = struct.unpack_from("<I", symtab, i * 24)
        names.append(strtab[at:strtab.index(b"\0", at)] if at < len(strtab) else b"")
    return names


def by_name(info, names):
    """An .nv.info section with the symbol indices its records name
    (EIATTR_PARAM_CBANK's first word, EIATTR_EXTERNS's every word) written
    as the symbols' names: the same kernel built alone (`ptxas -e`) numbers
    its symbols otherwise (driver/src/gpu/nvptx/cubin.rs's rule)."""
    out, p = bytearray(), 0
    while p + 2 <= len(info):
        fmt, attr = info[p], info[p + 1]
        n = 2 if fmt == 1 else 4 + struct.unpack_from("<H", info, p + 2)[0] if fmt == 4 else 4
        record = info[p:p + n]
        named = {EIATTR_PARAM_CBANK: 1, EIATTR_EXTERNS: (len(record) - 4) // 4}.get(attr, 0) if fmt == 4 else 0
        out += record[:4]
        for i in range(named):
            index, = struct.unpack_from("<I", record, 4 + 4 * i)
            out += names[index] + b"\0"
        out += record[4 + 4 * named:]
        p += n
    return bytes(out + info[p:])


def kernel_code(data, symbol):
    """.text.<symbol> + .nv.info.<symbol> (its symbols by name): what runs
    of the kernel, wherever the cubin numbers its symbols; None where the
    cubin has no such kernel."""
    parts = {name: body for name, _, _, body in sections(data)}
    text, info = parts.get(f".text.{symbol}"), parts.get(f".nv.info.{symbol}")
    if text is None or info is None:
        return None
    return text + by_name(info, symbol_names(data))
