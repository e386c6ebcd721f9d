#!/usr/bin/env python3
"""Seeds for the `registry_archive` fuzz target: small crafted archives,
each prefixed with the target's format byte (0 tar, 1 tar.gz, 2 tar.bz2,
3 zip). Run from fuzz/: python3 seeds/archives.py (writes seeds/archives/)."""
import bz2
import gzip
import io
import os
import tarfile
import zipfile

OUT = os.path.join(os.path.dirname(__file__), "archives")


def tar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for kind, name, arg in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(arg)
                info.mode = 0o755
                t.addfile(info, io.BytesIO(arg))
                continue
            if kind == "dir":
                info.type = tarfile.DIRTYPE
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, arg
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, arg
            t.addfile(info)
        end = t.offset
    # The end-of-archive blocks only, not tarfile's padding to 10 KB.
    return buf.getvalue()[: end + 1024]


def zipped(entries):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for kind, name, arg in entries:
            info = zipfile.ZipInfo(name + "/" if kind == "dir" else name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if kind == "sym":
                info.external_attr = (0o120777 << 16)
                z.writestr(info, arg)
            elif kind == "dir":
                info.external_attr = (0o40755 << 16) | 0x10
                z.writestr(info, b"")
            else:
                info.external_attr = (0o100755 << 16)
                z.writestr(info, arg)
    return buf.getvalue()


SETS = {
    "plain": [("dir", "bin", None), ("file", "bin/agent", b"#!/bin/sh\necho hi\n"),
              ("sym", "agent", "bin/agent"), ("hard", "copy", "bin/agent")],
    "chain": [("sym", "a", "."), ("sym", "a/b", ".."), ("sym", "a/b/c", ".."),
              ("file", "a/b/c/escaped", b"x")],
    "retarget": [("sym", "b", "a/.."), ("sym", "a", "."), ("file", "ok", b"1")],
    "hardout": [("dir", "d", None), ("sym", "d/up", ".."), ("sym", "d/up2", "up/.."),
                ("hard", "stolen", "d/up2/secret")],
    "climb": [("file", "../evil", b"x"), ("sym", "abs", "/etc/passwd")],
    "zeros": [("file", "big", bytes(200_000))],
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, entries in SETS.items():
        t = tar(entries)
        seeds = {
            f"{name}.tar": b"\x00" + t,
            f"{name}.tar.gz": b"\x01" + gzip.compress(t),
            f"{name}.tar.bz2": b"\x02" + bz2.compress(t),
        }
        z = [e for e in entries if e[0] != "hard"]
        seeds[f"{name}.zip"] = b"\x03" + zipped([(k, n, a if a is not None else b"") for k, n, a in z])
        if name == "zeros":
            del seeds[f"{name}.tar"]
        for file, data in seeds.items():
            with open(os.path.join(OUT, file), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
