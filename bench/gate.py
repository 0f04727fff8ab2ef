"""The gate's acceptance experiment on Liger's real history (issue 20), printed as a table:
planted versions at x1.1, x1.2, x1.5 and x2.0 (cells flagged by `kindex check`, and how the
others read), a noisy null over five seeds, and the plain history's check.

    python bench/gate.py [--csv all_benchmark_data_history.csv] [--work DIR]

The planting is bench/planted.py (tests/test_gate.py asserts the same experiment).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

from planted import candidate_cells, plant, read_rows

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def main() -> None:
    from realdata import LIGER_HISTORY

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csv", type=Path, default=LIGER_HISTORY)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kindex-gate-"))
    base = build(args.csv, work / "base")
    from kindex_olap.query.run import run_check

    print("plain history:", run_check("", base).summary())
    for factor in (1.1, 1.2, 1.5, 2.0):
        result, _ = trial(args.csv, base, work / f"x{factor}", factor)
        flagged = {r[:5] for r in result.regressions}
        latency = [r for r in result.steps if r[5] == "latency"]
        others = [r[13] for r in latency if r[:5] not in flagged]
        print(
            f"x{factor}: {len(flagged)} of {len(latency)} cells flagged; the others: "
            f"{sorted(others)}"
        )
    cells = candidate_cells(read_rows(args.csv)[1])
    exact, keys = trial(args.csv, base, work / "zero", 1.0)
    sigma = {}
    for key in keys:
        value = float(cells[key]["liger"]["y_value_50"])
        row = next(
            r for r in exact.steps if r[5] == "latency" and math.isclose(r[9], value, rel_tol=1e-6)
        )
        sigma[key] = math.log(row[12] / row[10]) / 1.959964
    for seed in range(5):
        noisy, _ = trial(args.csv, base, work / f"null{seed}", 1.0, sigma=sigma, noise_seed=seed)
        moved = {r[:5] for r in noisy.steps if r[13] in ("regression", "improvement")}
        print(f"noisy null, seed {seed}: {len(moved)} of 20 cells flagged")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


def build(csv: Path, root: Path) -> Path:
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest

    import_liger(str(csv), raw_dir=root / "raw")
    ingest([root / "raw"], root / "lake")
    return root / "lake"


def trial(csv: Path, base: Path, root: Path, factor: float, **noise: object):  # type: ignore[no-untyped-def]
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.query.run import run_check

    shutil.copytree(base, root / "lake")
    text, keys = plant(csv, factor, **noise)  # type: ignore[arg-type]
    (root / "plant.csv").write_text(text, encoding="utf-8")
    import_liger(str(root / "plant.csv"), raw_dir=root / "raw")
    ingest([root / "raw"], root / "lake")
    return run_check("", root / "lake"), keys


if __name__ == "__main__":
    main()
