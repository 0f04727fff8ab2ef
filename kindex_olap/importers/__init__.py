"""Importers that turn external benchmark sources into KernelIndex bundles for the lake."""
