"""Quiet PySpark's Python-side logging of failed queries (dbt reports them)."""

from __future__ import annotations

import logging


def quiet_pyspark_logs() -> None:
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.ERROR)
