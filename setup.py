"""Package discovery: every subpackage of kindex_olap, plus sql/ shipped as kindex_olap.sql.

pyproject's `packages.find` cannot also name a package mapped from another folder, so the list is
built here; everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["kindex_olap", "kindex_olap.*"]), "kindex_olap.sql"])
