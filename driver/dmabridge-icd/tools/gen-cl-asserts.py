#!/usr/bin/env python3
"""Writes driver/dmabridge-icd/src/cl_constants.rs: one compile-time
assertion per OpenCL constant the core (driver/dmabridge/src) writes by
hand, that it equals opencl-sys's value of the same name.

A constant is an OpenCL one when the first line of its doc comment names it
(/// `CL_MEM_SIZE`. ...), or by its module where the docs do not: the error
codes (error.rs `code`: CL_<NAME>), `device_param` (CL_DEVICE_<NAME>) and
the USM and SVM capability bits. Constants of the vendor extensions whose
headers are the repository's own (names ending in _AMD or _DMABRIDGE) are
left to tests/host/cl_headers.rs, which checks them against include/CL.

Usage: gen-cl-asserts.py [--check]   (--check: fail if the file is stale;
make lint runs it)."""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
CORE = os.path.join(ROOT, "driver", "dmabridge", "src")
OUT = os.path.join(ROOT, "driver", "dmabridge-icd", "src", "cl_constants.rs")

# Constants whose doc comment does not name them, by (module, name).
BY_MODULE = {
    "usm_caps": {
        "ACCESS": "CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL",
        "ATOMIC_ACCESS": "CL_UNIFIED_SHARED_MEMORY_ATOMIC_ACCESS_INTEL",
        "CONCURRENT_ACCESS": "CL_UNIFIED_SHARED_MEMORY_CONCURRENT_ACCESS_INTEL",
        "CONCURRENT_ATOMIC_ACCESS": "CL_UNIFIED_SHARED_MEMORY_CONCURRENT_ATOMIC_ACCESS_INTEL",
    },
    "svm_caps": {
        "COARSE_GRAIN_BUFFER": "CL_DEVICE_SVM_COARSE_GRAIN_BUFFER",
        "FINE_GRAIN_BUFFER": "CL_DEVICE_SVM_FINE_GRAIN_BUFFER",
        "FINE_GRAIN_SYSTEM": "CL_DEVICE_SVM_FINE_GRAIN_SYSTEM",
        "ATOMICS": "CL_DEVICE_SVM_ATOMICS",
    },
    # CL_DEVICE_DRIVER_VERSION is spelled CL_DRIVER_VERSION.
    "device_param": {"DRIVER_VERSION": "CL_DRIVER_VERSION"},
}
BY_PREFIX = {"code": "CL_", "device_param": "CL_DEVICE_"}
OWN_HEADERS = ("_AMD", "_DMABRIDGE")
# Constants whose doc names the query they answer, not a constant.
ANSWERS = {
    "dmabridge::runtime::info::MAX_WORK_GROUP_SIZE",
    "dmabridge::runtime::info::MAX_WORK_ITEM_DIMENSIONS",
    "dmabridge::runtime::info::MAX_PARAMETER_SIZE",
}
# Where opencl-sys differs from the Khronos headers, which decide: the value
# the headers define, and why.
KHRONOS_NOT_OPENCL_SYS = {
    "CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM": (
        "usize::MAX",
        "Khronos CL/cl_ext.h: SIZE_MAX; opencl-sys 0.6.5: cl_import_properties_arm::MAX (isize::MAX)",
    ),
}

CONST = re.compile(r"\s*pub const ([A-Z0-9_]+): (?:u32|u64|i32|usize|i64) = ")
MOD = re.compile(r"\s*(pub )?mod (\w+)\s*(\{|;)")
DOC_NAME = re.compile(r"/// (?:Also )?`(CL_[A-Z0-9_]+)`")


def public_path(path):
    """The public Rust path of the module a file is, dropping private
    modules (their parent re-exports what they hold)."""
    rel = os.path.relpath(path, CORE)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    parts = ["dmabridge"]
    for i, name in enumerate(rel):
        parent = os.path.join(CORE, *rel[:i])
        parent_file = os.path.join(parent, "mod.rs") if i else os.path.join(CORE, "lib.rs")
        if not os.path.exists(parent_file):
            parent_file = parent + ".rs"
        text = open(parent_file).read()
        if re.search(r"^\s*pub mod %s;" % name, text, re.M):
            parts.append(name)
    return parts


def constants(path):
    lines = open(path).read().split("\n")
    mods, depth = [], 0
    for i, line in enumerate(lines):
        m = MOD.match(line)
        if m and m.group(3) == "{":
            mods.append((m.group(2), depth, bool(m.group(1))))
        c = CONST.match(line)
        if c and all(public for _, _, public in mods):
            name, module = c.group(1), (mods[-1][0] if mods else "")
            j = i - 1
            while j >= 0 and lines[j].strip().startswith("///"):
                j -= 1
            doc = lines[j + 1].strip() if j + 1 < i else ""
            d = DOC_NAME.match(doc)
            cl = d.group(1) if d else None
            cl = BY_MODULE.get(module, {}).get(name, cl)
            if cl is None and module in BY_PREFIX:
                cl = BY_PREFIX[module] + name
            if cl and not cl.endswith(OWN_HEADERS):
                yield "::".join(public_path(path) + [m for m, _, _ in mods] + [name]), cl
        depth += line.count("{") - line.count("}")
        while mods and depth <= mods[-1][1]:
            mods.pop()


def generate():
    rows = []
    for dirpath, _, files in sorted(os.walk(CORE)):
        if os.sep + "sys" in dirpath[len(CORE):] or dirpath.endswith(os.sep + "tests"):
            continue
        for f in sorted(files):
            if f.endswith(".rs"):
                rows.extend(constants(os.path.join(dirpath, f)))
    body, n = "", 0
    for rust, cl in rows:
        if rust in ANSWERS:
            continue
        if cl in KHRONOS_NOT_OPENCL_SYS:
            value, why = KHRONOS_NOT_OPENCL_SYS[cl]
            body += "    // %s.\n    assert!(%s as i128 == %s as i128, \"%s\");\n" % (why, rust, value, cl)
            n += 1
        else:
            body += "    assert!(%s as i128 == opencl_sys::%s as i128, \"%s\");\n" % (rust, cl, cl)
        n += 1
    return (
        "//! Generated by tools/gen-cl-asserts.py (make lint checks it is current): every\n"
        "//! OpenCL constant the core writes by hand equals opencl-sys's, at compile time.\n"
        "//! The vendor constants of include/CL are checked by tests/host/cl_headers.rs.\n"
        "\n"
        "#[rustfmt::skip]\n"
        "const _: () = {\n" + body + "};\n"
    ), n


def main():
    text, n = generate()
    if sys.argv[1:] == ["--check"]:
        old = open(OUT).read() if os.path.exists(OUT) else ""
        if old != text:
            sys.exit("%s is stale: run driver/dmabridge-icd/tools/gen-cl-asserts.py" % os.path.relpath(OUT, ROOT))
        return
    if sys.argv[1:]:
        sys.exit(__doc__)
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote %s: %d constants" % (os.path.relpath(OUT, ROOT), n))


if __name__ == "__main__":
    main()
