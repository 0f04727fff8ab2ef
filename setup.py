"""Package discovery: every subpackage of kindex_olap, plus sql/ shipped as kindex_olap.sql with
one subpackage per folder of it (schema, ingest, views, queries).

pyproject's `packages.find` cannot also name a package mapped from another folder, so the list is
built here; everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

SQL_FOLDERS = [f"kindex_olap.sql.{name}" for name in find_namespace_packages(where="sql")]

setup(
    packages=[
        *find_packages(include=["kindex_olap", "kindex_olap.*"]),
        "kindex_olap.sql",
        *SQL_FOLDERS,
    ]
)
