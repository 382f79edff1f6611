#!/usr/bin/env python3
"""Writes the seed corpus of the .npy fuzzer (tests/fuzz/corpus/npy/): valid files of every
dtype, version and dict form the reader takes, and files one detail away from valid (each
rejection path of host/npy.c). Deterministic; no numpy needed. Re-run after changing it:

    python3 tests/fuzz/make_corpus.py            # rewrites tests/fuzz/corpus/npy/
"""
import os
import shutil
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "npy")


def dict_text(descr="<f4", fortran="False", shape=(2, 3)):
    if isinstance(shape, str):
        s = shape
    else:
        s = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (
        descr if descr.startswith("[") else repr(descr), fortran, s)


def npy(header, data=b"", major=1, minor=0, align=64, hlen=None, end=b"\n"):
    """A .npy file: magic, version, header length, header padded with spaces to `align`."""
    h = header.encode("latin-1") if isinstance(header, str) else header
    pre = 10 if major == 1 else 12
    total = (pre + len(h) + len(end) + align - 1) // align * align
    body = h + b" " * (total - pre - len(h) - len(end)) + end
    n = len(body) if hlen is None else hlen
    length = struct.pack("<H", n) if major == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([major, minor]) + length + body + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def f64(*v):
    return struct.pack("<%dd" % len(v), *v)


def u16(*v):
    return struct.pack("<%dH" % len(v), *v)


INF, NAN = float("inf"), float("nan")

VALID = {
    "f4_2x3": npy(dict_text(), f32(1, 2, 3, 4, 5, 6)),
    "f8_3": npy(dict_text("<f8", shape=(3,)), f64(0.1, -2.5, 1e300)),
    "f2_4": npy(dict_text("<f2", shape=(4,)), u16(0x3C00, 0x7C00, 0x7E00, 0x0001)),
    "u2_2x2": npy(dict_text("<u2", shape=(2, 2)), u16(0x3F80, 0x4000, 0xFFFF, 0)),
    "f8_scalar": npy(dict_text("<f8", shape=()), f64(1.0)),
    "f4_empty_1d": npy(dict_text(shape=(0,))),
    "f4_empty_0x5": npy(dict_text(shape=(0, 5))),
    "f4_empty_2x0x3": npy(dict_text(shape=(2, 0, 3))),
    "f4_inf_nan": npy(dict_text(shape=(3,)), f32(INF, -INF, NAN)),
    "f8_fortran_1d": npy(dict_text("<f8", "True", (2,)), f64(1, 2)),
    "f4_fortran_scalar": npy(dict_text("<f4", "True", ()), f32(7)),
    "f4_fortran_2x3": npy(dict_text(fortran="True"), f32(1, 4, 2, 5, 3, 6)),
    "f4_big_endian": npy(dict_text(">f4", shape=(2,)), struct.pack(">2f", 1, -2.5)),
    "f8_big_endian_fortran_2x2": npy(dict_text(">f8", "True", (2, 2)),
                                     struct.pack(">4d", 1, 3, 2, 4)),
    "f8_fortran_2x3x2": npy(dict_text("<f8", "True", (2, 3, 2)), f64(*range(12))),
    "f4_fortran_empty_2x0": npy(dict_text(fortran="True", shape=(2, 0))),
    "f4_16_dims": npy(dict_text(shape=(1,) * 15 + (2,)), f32(1, 2)),
    "v2_f4": npy(dict_text(shape=(2,)), f32(1, 2), major=2),
    "v3_f4": npy(dict_text(shape=(2,)), f32(1, 2), major=3),
    "double_quotes": npy('{"descr": "<f4", "fortran_order": False, "shape": (2,)}', f32(1, 2)),
    "key_order": npy("{'shape': (1, 2), 'fortran_order': False, 'descr': '<f4'}", f32(1, 2)),
    "whitespace": npy("{ 'descr' :'<f4' ,\t'fortran_order':False ,'shape' :( 2 , ) , }",
                      f32(1, 2)),
    "py2_long": npy(dict_text(shape="(2L, 1L)"), f32(1, 2)),
    "trailing_data": npy(dict_text(shape=(1,)), f32(1, 2, 3)),
    "unaligned_header": npy(dict_text(shape=(1,)), f32(5), align=1),
    "no_newline": npy(dict_text(shape=(1,)), f32(5), end=b" "),
    "largest_empty_f4": npy(dict_text(shape=(0, 2305843009213693951))),
    "largest_empty_u2": npy(dict_text("<u2", shape=(4611686018427387903, 0))),
}

INVALID = {
    "bad_magic": b"\x93NUMPZ\x01\x00" + npy(dict_text())[8:],
    "empty": b"",
    "magic_only": b"\x93NUMPY",
    "no_length": b"\x93NUMPY\x01\x00\x40",
    "truncated_header": npy(dict_text(), f32(1, 2, 3, 4, 5, 6))[:40],
    "truncated_data": npy(dict_text(), f32(1, 2, 3, 4, 5)),
    "header_len_past_end": npy(dict_text(shape=(1,)), f32(1), hlen=4000),
    "header_len_zero": npy(dict_text(shape=(1,)), f32(1), hlen=0),
    "v1_1": npy(dict_text(shape=(1,)), f32(1), minor=1),
    "v2_255": npy(dict_text(shape=(1,)), f32(1), major=2, minor=255),
    "v4_0": npy(dict_text(shape=(1,)), f32(1), major=4),
    "v0_0": b"\x93NUMPY\x00\x00" + npy(dict_text(shape=(1,)), f32(1))[8:],
    "big_endian_int": npy(dict_text(">i4", shape=(1,)), f32(1)),
    "int32": npy(dict_text("<i4", shape=(1,)), f32(1)),
    "native_order": npy(dict_text("=f4", shape=(1,)), f32(1)),
    "structured": npy(dict_text("[('a', '<f4'), ('b', [('c', '<f4')])]", shape=(1,)), f32(1, 2)),
    "fortran_2d_truncated": npy(dict_text(fortran="True"), f32(1, 2, 3, 4, 5)),
    "fortran_maybe": npy(dict_text(fortran="Maybe", shape=(1,)), f32(1)),
    "duplicate_key": npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                         "'shape': (1,)}", f32(1)),
    "missing_shape": npy("{'descr': '<f4', 'fortran_order': False}", f32(1)),
    "extra_key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", f32(1)),
    "control_bytes_key": npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
                             b"'\x1b]0;t\x07\x1b[2J\r\x9b': 1}", f32(1)),
    "control_bytes_descr": npy(dict_text("\x1b[31m<f4\x07"), f32(1)),
    "long_key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '%s': 1}"
                    % ("k" * 200), f32(1)),
    "long_descr": npy(dict_text("<" + "f" * 100, shape=(1,)), f32(1)),
    "negative_dim": npy(dict_text(shape="(-2,)"), f32(1, 2)),
    "leading_zero_dim": npy(dict_text(shape="(02,)"), f32(1, 2)),
    "dim_2_64_minus_1": npy(dict_text(shape=(0, 18446744073709551615))),
    "dim_2_63": npy(dict_text("<u2", shape=(0, 9223372036854775808))),
    "dim_past_f4_limit": npy(dict_text(shape=(0, 2305843009213693952))),
    "dims_product_2_64": npy(dict_text(shape=(4294967296, 0, 4294967296))),
    "dim_overflows_u64": npy(dict_text(shape=(0, 99999999999999999999999))),
    "dims_17": npy(dict_text(shape=(1,) * 17), f32(1)),
    "huge_data_claim": npy(dict_text("<f8", shape=(1000000000,)), f64(1)),
    "nul_in_header": npy(b"{'descr': '<f4',\0'fortran_order': False, 'shape': (1,)}", f32(1)),
    "unterminated_string": npy("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", f32(1)),
    "backslash_in_string": npy("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}",
                               f32(1)),
    "junk_after_dict": npy(dict_text(shape=(1,)) + " junk", f32(1)),
    "not_a_dict": npy("['descr', '<f4']", f32(1)),
    "unclosed_shape": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, ", f32(1)),
    "shape_not_tuple": npy("{'descr': '<f4', 'fortran_order': False, 'shape': 1}", f32(1)),
}


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for prefix, table in (("valid_", VALID), ("invalid_", INVALID)):
        for name, data in sorted(table.items()):
            with open(os.path.join(OUT, prefix + name + ".npy"), "wb") as f:
                f.write(data)
    print("%d valid, %d invalid seeds in %s" % (len(VALID), len(INVALID), OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
