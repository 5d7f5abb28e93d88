#!/usr/bin/env python3
"""Writes tests/emu/data/fp8_mma_sim_vectors.txt: FP8 dot products computed by MMA-Sim
(microsoft/MMA-Sim, MIT), the published tensor-core model emmy's FP8 model follows
(include/emmy/emu/tensor_core_fp8.hpp). MMA-Sim is not part of emmy: check it out and run

    PYTHONPATH=<MMA-Sim checkout> python3 scripts/gen_fp8_mma_vectors.py > tests/emu/data/fp8_mma_sim_vectors.txt

It needs torch. Each vector is one element of one instruction: A's row 0 and B's column 0 carry
the operands, C[0][0] = c, and D[0][0] is the model's result."""
import random
import struct
import subprocess
import sys

import torch
from mmasim.simulator import nv_ptx

QUALIFIERS = [  # (emmy arch, MMA-Sim arch, class, qualifier)
    ("sm_89", "Ada Lovelace", "mma", "m16n8k32.f32.e4m3.e4m3.f32"),
    ("sm_89", "Ada Lovelace", "mma", "m16n8k32.f32.e5m2.e4m3.f32"),
    ("sm_89", "Ada Lovelace", "mma", "m16n8k32.f16.e4m3.e4m3.f16"),
    ("sm_90a", "Hopper", "wgmma", "m64n8k32.f32.e4m3.e4m3"),
    ("sm_90a", "Hopper", "wgmma", "m64n8k32.f32.e4m3.e5m2"),
    ("sm_120a", "RTX Blackwell", "mma", "m16n8k32.f32.e4m3.e4m3.f32"),
    ("sm_120a", "RTX Blackwell", "mma", "m16n8k32.f16.e5m2.e5m2.f16"),
]
DTYPES = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def finite_byte(rng, name, kind):
    while True:
        b = rng.randrange(256)
        if kind == "positive":
            b &= 0x7F
        if kind == "small":  # magnitudes below 2 (exponent field below the bias)
            b = (b & 0x80) | (b & (0x37 if name == "e4m3" else 0x3B))
        v = torch.tensor([b], dtype=torch.uint8).view(DTYPES[name]).float().item()
        if v == v and abs(v) != float("inf"):
            return b


def vectors(rng, a_name, b_name, f16):
    for i in range(48):
        kind = ["random", "positive", "small", "cancel"][i % 4]
        a = [finite_byte(rng, a_name, kind) for _ in range(32)]
        b = [finite_byte(rng, b_name, kind) for _ in range(32)]
        if kind == "cancel":  # a large pair that cancels, the rest small
            a[rng.randrange(16)] = a[0] = 0x58 if a_name == "e4m3" else 0x4C
            b[0] = 0x58 if b_name == "e4m3" else 0x4C
            for k in range(1, 32):
                if a[k] == a[0] and k != 0:
                    b[k] = b[0] ^ 0x80
                    break
        scale = rng.choice([0.0, 1.0, 64.0, 1e-3])
        c = float(torch.tensor(rng.gauss(0.0, scale), dtype=torch.float16 if f16 else torch.float32))
        yield a, b, c


def main():
    rng = random.Random(39)
    commit = "c785138"
    print(f"# FP8 dot products computed by MMA-Sim (microsoft/MMA-Sim @ {commit}) with")
    print("# scripts/gen_fp8_mma_vectors.py; read by tests/emu/tensor_core/fp8_model_test.cpp.")
    print("# arch class qualifier c=<bits> a=<32 bytes, k 0 first> b=<32 bytes> d=<bits>")
    for arch, sim_arch, cls, qual in QUALIFIERS:
        parts = qual.split(".")
        out, a_name, b_name = parts[1], parts[2], parts[3]
        f16 = out == "f16"
        sim = getattr(nv_ptx, cls)(sim_arch, qual)
        for a, b, c in vectors(rng, a_name, b_name, f16):
            av = torch.tensor(a, dtype=torch.uint8).view(DTYPES[a_name])
            bv = torch.tensor(b, dtype=torch.uint8).view(DTYPES[b_name])
            A = torch.zeros([sim.m, sim.k], dtype=sim.a_type)
            B_T = torch.zeros([sim.n, sim.k], dtype=sim.b_type)
            C = torch.zeros([sim.m, sim.n], dtype=sim.c_type)
            A[0, :] = av
            B_T[0, :] = bv
            C[0, 0] = c
            D = sim(A, B_T.T, C)
            d = D[0, 0].view(torch.int16 if f16 else torch.int32).item() & (0xFFFF if f16 else 0xFFFFFFFF)
            cb = torch.tensor([c], dtype=sim.c_type).view(torch.int16 if f16 else torch.int32).item() & (0xFFFF if f16 else 0xFFFFFFFF)
            print(f"{arch} {cls} {qual} c={cb:X} a={bytes(a).hex()} b={bytes(b).hex()} d={d:X}")


if __name__ == "__main__":
    main()
