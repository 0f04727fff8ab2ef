"""How kindex names a GPU for people, in Python: the twin of sql/views/views.sql's
kindex_gpu_label, so that tables, history and pictures say the same."""

from __future__ import annotations


def gpu_label(gpu: object, form_factor: object) -> str:
    """The product and its form factor, "NVIDIA H100 PCIe" (either may be missing)."""
    return " ".join(str(part) for part in (gpu, form_factor) if part)
