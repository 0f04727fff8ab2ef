"""Liger-Kernel's benchmark CSV -> KernelIndex bundles (convert, rules, the package index)."""
