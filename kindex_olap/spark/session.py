"""The SparkSession side: a local session for kindex's own doors, and `register`, which gives
any session (a cluster's too) every table and view of one lake commit as temporary views."""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from kindex_olap.errors import ConfigError
from kindex_olap.spark.types import SparkSession

if TYPE_CHECKING:
    from kindex_olap.lake.store import Snapshot

# kindex's SQL reads timestamps without a time zone; ANSI mode is Spark 4's default, kept
SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def import_pyspark() -> None:
    """pyspark and pandas (pyspark refuses applyInArrow, history's tests, without it), or a
    ConfigError saying how to install them: a pyspark installed on its own raised pyspark's
    PySparkImportError from the middle of a history question."""
    for module in ("pyspark", "pandas"):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ConfigError(
                f"the Spark engine needs {module}",
                hint="pip install 'kindex-olap[spark]' (pyspark 4.3 and pandas; Java 17: "
                "apt-get install openjdk-17-jre-headless)",
            ) from e


def local_session(cores: int = 2) -> SparkSession:
    """A local SparkSession (`local[cores]`), quiet on stderr; the one kindex's doors and tests
    use. Its start costs 10-30 s (a JVM), paid once per process."""
    import_pyspark()
    sql = importlib.import_module("pyspark.sql")
    builder = sql.SparkSession.builder.master(f"local[{cores}]").appName("kindex")
    for key, value in SETTINGS.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", os.environ.get("KINDEX_SPARK_MEMORY", "2g"))
    # the history's tests run kindex's numpy code in Python workers (spark/steps.py): this
    # interpreter, which has kindex, numpy and pyarrow (else pyspark starts `python3` from
    # PATH; it reads only the environment variable)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with pandas_warning_ignored(), jvm_output_to(jvm_log()):  # the first call warns
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # pyspark logs each failed query's error as a JSON record of some 10 kB on stderr, before
    # kindex says it in one line (created as pyspark's own loggers: it logs with their fields)
    loggers = importlib.import_module("pyspark.logger").PySparkLogger
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        loggers.getLogger(name).disabled = True
    return session


def jvm_log() -> Path:
    """Where the JVM that pyspark starts writes its output (kindex's cache folder)."""
    from kindex_olap.cache import cache_folder

    return cache_folder() / "spark" / "jvm.log"


@contextmanager
def jvm_output_to(path: Path) -> Iterator[None]:
    """The JVM pyspark starts inherits this process's stderr (file descriptor 2), and wrote
    eight lines there before any answer (log4j's profile twice, the loopback address, the
    native-Hadoop warning, incubator modules) and every failed query's analysis error as a
    JSON record of some 10 kB, between kindex's own lines. While it starts, descriptor 2 is
    `path` (appended to), which the JVM and its Python workers keep for their whole life;
    kindex's own messages still reach stderr. Where `path` cannot be written, nothing moves."""
    sys.stderr.flush()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        yield
        return
    saved = os.dup(2)
    os.dup2(log, 2)
    os.close(log)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def pandas_warning_ignored() -> Iterator[None]:
    """Without pyspark's FutureWarning that it "does not yet fully support pandas >= 3.0.0":
    pyspark 4.3 checks pandas' version wherever it might convert data with pandas, and warns
    at a process's first call into the JVM and at every applyInArrow. kindex converts nothing
    with pandas (history's tests take and give Arrow tables, answers come back through collect
    and toArrow; pandas is only what pyspark requires for applyInArrow), so the warning says
    nothing of its answers, which the Spark tests compare with DuckDB's under pandas 3. Ignored
    in those two calls only."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _PANDAS_3_WARNING, FutureWarning)
        yield


_PANDAS_3_WARNING = "PySpark does not yet fully support pandas >= 3"


def register(
    spark: SparkSession,
    lake: str | os.PathLike[str] | None = None,
    as_of: str | None = None,
    *,
    only_for: str | None = None,
) -> Snapshot:
    """Register every table of one lake commit (the newest, or the one `as_of` names) and
    every view of sql/views/views.sql, generated as Spark SQL, as temporary views of `spark`;
    returns the lake commit read. Read-only: nothing is written to the lake.

    The views compute everything from the base tables (pairs, noise model, speedups, history);
    the layers the lake commit stored are registered as tables (layer_*) but not read by them.
    Generation errors (a construct with no rule) are raised before any view is created.
    only_for: a Spark query; only the views it reads are created (Spark analyses each view as it
    is created: 2-5 s apiece on 2 cores), for one question in a fresh session.
    A session that holds every view already (another lake commit registered before) gets the
    new lake commit's tables only: the views read them by name (_holds_views).
    """
    from kindex_olap.lake.store import check_files
    from kindex_olap.lake.tables import stored_view
    from kindex_olap.query.engine import snapshot_of
    from kindex_olap.spark.generate import spark_views
    from kindex_olap.spark.lake import read_tables

    snapshot = snapshot_of(lake, as_of)
    check_files(snapshot)  # Spark's PATH_NOT_FOUND came out of a view's creation as a traceback
    key = f"{snapshot.lake}@{snapshot.id}"
    if spark.conf.get(_REGISTERED, None) == key:
        return snapshot  # this session holds that lake commit's views already
    views = spark_views()
    if only_for is not None:
        views = read_by(views, only_for)
    for table, frame in read_tables(spark, snapshot).items():
        frame.createOrReplaceTempView(stored_view(table))
    if only_for is not None or not _holds_views(spark, views):
        for name, select in views:
            spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {select}")
    if only_for is None:
        spark.conf.set(_REGISTERED, key)
        spark.conf.set(_VIEWS, _digest(views))
    else:  # the tables are another lake commit's now, and not every view is there
        spark.conf.unset(_REGISTERED)
    return snapshot


def read_by(views: list[tuple[str, str]], sql: str) -> list[tuple[str, str]]:
    """The views `sql` reads, directly or through other views, in their defining order (a view
    named anywhere in the text counts: one too many is only slower)."""
    bodies = dict(views)
    wanted = {name for name in bodies if re.search(rf"\b{name}\b", sql)}
    while (
        more := {
            name for name in bodies for other in wanted if re.search(rf"\b{name}\b", bodies[other])
        }
        - wanted
    ):
        wanted |= more
    return [(name, select) for name, select in views if name in wanted]


def _holds_views(spark: SparkSession, views: list[tuple[str, str]]) -> bool:
    """Whether `spark` holds every one of `views` as register created them, and they read the
    tables by name at each query: then another lake commit needs its tables only (a second
    lake in the tests' session: 4 s, not 30-50 s). Spark 3.1+ keeps a temporary view's SQL
    text and resolves the names in it when a query reads the view; with
    spark.sql.legacy.storeAnalyzedPlanForView set, a view keeps the tables it was created
    over, so they are created again."""
    if spark.conf.get(_STORES_PLANS, "false").lower() == "true":
        return False
    return bool(spark.conf.get(_VIEWS, None) == _digest(views))


def _digest(views: list[tuple[str, str]]) -> str:
    text = "\n".join(f"{name}\n{select}" for name, select in views)
    return hashlib.sha256(text.encode()).hexdigest()


# the lake commit whose views a session holds (creating them costs 15-40 s on 2 cores), and a
# digest of those views' Spark SQL (another lake commit reuses them: _holds_views)
_REGISTERED = "kindex.registered"
_VIEWS = "kindex.views"
_STORES_PLANS = "spark.sql.legacy.storeAnalyzedPlanForView"
