"""The Spark versions the package supports. The checker's model of one (`--spark-version`, or the live
session's `version()`): how it is read, its range, and the planner difference it follows, a union's
placement (kept from Spark 4.1); and the extension's sources per version. No JVM: the corpus's catalog
from its frozen file. The verdicts against each version's plans are
test_checker_corpus.py's, on the pinned Spark in the suite and on each cell of the version matrix."""

from __future__ import annotations

import json
import re

import pyspark
import pytest

from spark_bucketing import cli, extension
from spark_bucketing.checker import EngineSettings, analyze_sql
from spark_bucketing.checker.engines import SPARK_VERSION, UNION, spark_version
from spark_bucketing.checker.relations import catalog_from_json
from tests.support.checker_corpus import CORPUS, FROZEN, S, check_settings


def test_a_version_reads_as_major_and_minor_and_a_stated_one_is_in_range():
    assert spark_version("4.0.5") == (4, 0)
    assert spark_version("3.5.9 2a4bd9f") == (3, 5)  # as Spark's version() answers
    assert spark_version("4.1") == (4, 1)
    with pytest.raises(ValueError, match=r"outside the versions the checker models \(3.5 to 4.3\)"):
        spark_version("3.4.1")
    with pytest.raises(ValueError, match="major.minor"):
        spark_version("four")
    # A live session's version beyond the range is modelled as the nearest modelled one.
    assert spark_version("4.4.0", strict=False) == (4, 3)
    assert spark_version("3.3.2", strict=False) == (3, 5)
    assert EngineSettings("spark", {}).spark_version == (4, 3)
    assert EngineSettings("spark", {SPARK_VERSION: "4.0.5"}).spark_version == (4, 0)


def test_a_unions_placement_is_kept_from_spark_4_1():
    frozen = json.loads(FROZEN.read_text())
    catalog = catalog_from_json(frozen["catalog"])
    ((conf, sql),) = [(c, q) for name, c, q in CORPUS if name == "union of one placement, grouped"]

    def aggregate(version: str):
        settings = check_settings(conf, {**frozen["session"], SPARK_VERSION: version})
        (found,) = [f for f in analyze_sql(sql.format(S=S), catalog, settings) if f.kind == "aggregate"]
        return found.sides[0]

    for version in ("4.3.0", "4.2.1", "4.1.4"):
        assert (aggregate(version).shuffle, aggregate(version).reasons) == (False, []), version
    for version in ("4.0.5", "3.5.9"):
        assert aggregate(version).shuffle and UNION in aggregate(version).reasons, version


def test_the_cli_refuses_a_version_it_does_not_model_before_compiling(tmp_path, capsys):
    # tmp_path holds no dbt project: the version is refused before dbt would be asked to compile one.
    assert cli.main(["check", "--project-dir", str(tmp_path), "--spark-version", "3.4"]) == 2
    assert "Spark 3.4 is outside the versions the checker models (3.5 to 4.3)" in capsys.readouterr().err


def test_the_extension_is_built_from_the_shared_sources_and_one_version_layer():
    assert [extension.spark_line(v) for v in ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")] == [
        "spark35",
        *["spark4"] * 4,
    ]
    for version in ("3.4.4", "4.4.0"):
        with pytest.raises(ValueError, match=f"built for Spark 3.5 and 4.0 to 4.3; this PySpark is {version}"):
            extension.spark_line(version)
    # Each layer states the same names, so the shared sources compile against either.
    layers = {
        line: {
            name
            for path in (extension.SOURCES / line).glob("*.scala")
            for name in re.findall(r"^\s*(?:def|object|trait|class) (\w+)", path.read_text(), re.M)
        }
        for line in set(extension.SPARK_LINES.values())
    }
    assert layers["spark35"] == layers["spark4"] and "SparkCompat" in layers["spark4"], layers
    # The installed PySpark's build: the shared sources and its own layer, once.
    compat = [p for p in extension.sources() if p.name == "SparkCompat.scala"]
    assert [p.parent.name for p in compat] == [extension.spark_line(pyspark.__version__)]
