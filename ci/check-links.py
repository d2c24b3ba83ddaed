#!/usr/bin/env python3
"""Every relative link in README.md and docs/**/*.md points to a file or
directory that exists, and every #anchor to a heading of its target
(GitHub's spelling: lower case, punctuation dropped, spaces as hyphens,
-1, -2... for repeats). Prints each broken link; exit 1 if any.

    ci/check-links.py [FILE.md...]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        fenced = False
        for line in path.read_text().splitlines():
            if FENCE.match(line):
                fenced = not fenced
            if fenced or not line.startswith("#"):
                continue
            text = line.lstrip("#").strip()
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = out
    return cache[path]


def links(path):
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(re.sub(r"``[^`]*``", "", line)):
            yield number, m.group(1)


def broken(path):
    for number, target in links(path):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            yield f"{where}: no such file"
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            yield f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}"


def main():
    files = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = [b for f in files for b in broken(f)]
    print("\n".join(bad) if bad else f"{len(files)} files: every relative link resolves")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
