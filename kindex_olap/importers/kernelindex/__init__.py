"""KernelIndex catalog exports -> bundles and dimension documents."""
