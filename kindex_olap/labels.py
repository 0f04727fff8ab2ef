"""How kindex names a GPU for people, in Python: the twin of sql/views/views.sql's
kindex_gpu_label, so that tables, history and pictures say the same."""

from __future__ import annotations


def gpu_label(gpu: object, form_factor: object) -> str:
    """The GPU's model: the product and its form factor, "NVIDIA H100 PCIe" (either may be
    missing). A `gpu` that ends with its form factor is a label already (the views' gpu
    column) and is kept as it is."""
    parts = [str(part) for part in (gpu, form_factor) if part]
    if len(parts) == 2 and parts[0].endswith(f" {parts[1]}"):
        return parts[0]
    return " ".join(parts)
