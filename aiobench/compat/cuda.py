"""Whether this machine could do CUDA at all: what elbencho's GPU options would need; pure
look-ups (the library is found, never loaded)."""

from __future__ import annotations

import ctypes.util
import glob

# The device nodes the NVIDIA driver makes, one per GPU (/dev/nvidia0, ...).
NVIDIA_DEVICES = "/dev/nvidia[0-9]*"


def missing() -> list[str]:
    """What CUDA needs and this machine lacks: the CUDA runtime library, an NVIDIA device;
    empty when both are here."""
    out = []
    if ctypes.util.find_library("cudart") is None:
        out.append("no CUDA runtime library (libcudart)")
    if not glob.glob(NVIDIA_DEVICES):
        out.append(f"no NVIDIA device ({NVIDIA_DEVICES})")
    return out
