#!/usr/bin/env python3
"""The shared libraries a program loads but never calls, replaced by one empty library.

Debian's LibTorch links libraries it never calls (libtorch_cpu names OpenCV, FFmpeg, ZeroMQ,
LevelDB, LMDB, ... and imports no symbol from any of them); loading them drags in some 230 more
(Qt, GStreamer, GDAL, codecs), whose relocation and initialisers were most of a LibTorch program's
start-up. This script finds them for a built program and writes DIR with the empty library and,
for each such library's file name, a link to it. The program's DT_RPATH names DIR
(cmake/torch_trim.cmake), and the dynamic loader, asked for libopencv_core.so.406, loads the empty
library once for all of them, and none of what they would have pulled in.

A library is "called" when a called object imports a symbol it defines (the program is called);
the rest of the loaded set is unused. Only unused libraries that a called object names directly are
linked in DIR: the others are no longer reached. The test is by import, not by the symbol the loader
would bind, so a library that merely could supply a symbol stays (conservative). LibTorch is
bound at load (BIND_NOW): were a needed symbol ever missing, the program would stop at start with
the loader's "undefined symbol" line, never later.

  unused_links.py --stub EMPTY_LIBRARY --dir DIR PROGRAM...
Writes DIR/<name> -> EMPTY_LIBRARY's copy for each, and DIR/unused.txt (one name a line).
"""
import argparse
import functools
import os
import re
import shutil
import subprocess
import sys

# The C library's own names and LibTorch's are never replaced, whatever the analysis says: the
# first are glibc's compatibility stubs (empty already), the second is what the program is about.
NEVER = re.compile(r"^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux.*|libtorch.*|libc10.*)\.so")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def library_cache():
    """name -> path, from ldconfig's cache (x86-64 entries first, as the loader takes them)."""
    paths = {}
    for line in run("ldconfig", "-p").splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
        if m and "x86-64" in m.group(2) and m.group(1) not in paths:
            paths[m.group(1)] = m.group(3)
    return paths


class Elf:
    def __init__(self, path):
        self.path = os.path.realpath(path)
        dynamic = run("readelf", "-dW", path)
        self.needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
        self.search = []
        for m in re.finditer(r"\((?:RPATH|RUNPATH)\)\s+Library (?:rpath|runpath): \[(.+?)\]", dynamic):
            origin = os.path.dirname(self.path)
            self.search += [d.replace("$ORIGIN", origin) for d in m.group(1).split(":")]
        self.defined, self.imported = set(), set()
        for line in run("readelf", "--dyn-syms", "-W", path).splitlines():
            f = line.split()
            # Num: Value Size Type Bind Vis Ndx Name
            if len(f) < 8 or not f[0].endswith(":") or f[3] in ("SECTION", "FILE"):
                continue
            name = f[7].split("@")[0]
            (self.imported if f[6] == "UND" else self.defined).add(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stub", required=True, help="the empty shared library")
    ap.add_argument("--dir", required=True, help="where the links go")
    ap.add_argument("programs", nargs="+")
    args = ap.parse_args()

    cache = library_cache()
    trim_dir = os.path.realpath(args.dir)

    def resolve(name, requester):
        for d in requester.search:
            if os.path.realpath(d) == trim_dir:
                continue  # this script's own output from an earlier build
            p = os.path.join(d, name)
            if os.path.exists(p):
                return p
        return cache.get(name)

    elf = functools.cache(Elf)

    @functools.cache
    def needs(path):  # (name, real path) of each library the object names
        out = []
        for n in elf(path).needed:
            p = resolve(n, elf(path))
            if p is None:
                sys.exit(f"unused_links.py: {path} needs {n}, which is nowhere the loader looks")
            out.append((n, os.path.realpath(p)))
        return out

    # Grown from the programs: a library a called object names is called when a called object
    # imports a symbol it defines. Libraries reached only through uncalled ones are never read.
    called = [os.path.realpath(p) for p in args.programs]
    imported = set().union(*(elf(p).imported for p in called))
    grew = True
    while grew:
        grew = False
        for c in list(called):
            for n, p in needs(c):
                if p not in called and imported & elf(p).defined:
                    called.append(p)
                    imported |= elf(p).imported
                    grew = True
    unused = {n for c in called for n, p in needs(c) if p not in called and not NEVER.match(n)}

    os.makedirs(trim_dir, exist_ok=True)
    stub = os.path.basename(args.stub)
    for entry in os.listdir(trim_dir):
        if entry != stub:
            os.remove(os.path.join(trim_dir, entry))
    shutil.copy2(args.stub, os.path.join(trim_dir, stub))
    for n in sorted(unused):
        os.symlink(stub, os.path.join(trim_dir, n))
    with open(os.path.join(trim_dir, "unused.txt"), "w") as f:
        f.write("".join(n + "\n" for n in sorted(unused)))
    print(f"unused_links.py: {len(unused)} libraries linked but never called, linked to an empty one "
          f"in {trim_dir}: {' '.join(sorted(unused))}")


if __name__ == "__main__":
    main()
