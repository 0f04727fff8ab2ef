"""pyspark's types as kindex's Spark modules name them. pyspark is an optional extra
(`kindex-olap[spark]`): no module of kindex imports it by name (tests/test_packaging.py checks
that every import is a declared dependency), so its objects are typed loosely here and the
package is loaded with importlib where a session is made (spark/session.py)."""

from __future__ import annotations

from typing import Any

SparkSession = Any
DataFrame = Any
