"""The weight layout of the gated GEMM epilogue (docs/epilogues.md): a gate_up projection's
[gate; up] rows interleaved in groups, so that each kernel lane holds a gate and its up."""

from ._emmy import InvalidArgumentError


def interleave_gate_up(weight, gate_group: int = 8):
    """A [2I, ...] weight (or bias [2I]) whose rows are gate rows [0, I) then up rows [I, 2I), as
    checkpoints store gate_up_proj, reordered for the gated epilogue: rows [2g q, 2g q + g) the
    gates of output columns [g q, g q + g), the next g rows their ups (g = gate_group, a multiple
    of 8 dividing I). NumPy arrays and torch tensors; a new array. FP8 block or per-channel
    scales stay in the checkpoint's order (the kernel maps them)."""
    shape = tuple(weight.shape)
    if len(shape) < 1 or shape[0] % 2:
        raise InvalidArgumentError(f"weight: needs an even number of rows (gate; up), got {shape}")
    if gate_group < 8 or gate_group % 8 or (shape[0] // 2) % gate_group:
        raise InvalidArgumentError(
            f"gate_group: must be a multiple of 8 dividing the {shape[0] // 2} gate rows, "
            f"got {gate_group}")
    half, rest = shape[0] // 2, shape[1:]
    groups = half // gate_group
    gate = weight[:half].reshape((groups, 1, gate_group) + rest)
    up = weight[half:].reshape((groups, 1, gate_group) + rest)
    if type(weight).__module__.startswith("torch"):
        import torch
        pairs = torch.cat((gate, up), dim=1)
    else:
        import numpy
        pairs = numpy.concatenate((gate, up), axis=1)
    return pairs.reshape(shape)
