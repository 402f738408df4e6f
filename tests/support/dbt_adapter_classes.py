"""What running dbt's own adapter test classes (dbt-tests-adapter) on the worker's Spark takes: dbt-spark's
session method for dbt's `run_dbt`, its runs in the calling thread, its logs in the test run's folders,
and the classes' own fixtures read with Parquet tables. A test module imports the fixtures by name."""

from __future__ import annotations

import os

import pytest
import yaml


@pytest.fixture(scope="class")
def dbt_profile_target(spark):
    """dbt-spark's session method: dbt's runs get this worker's Spark session (getOrCreate)."""
    return {"type": "spark", "method": "session", "host": "localhost", "threads": 1}


@pytest.fixture(scope="module", autouse=True)
def single_threaded():
    """dbt's runs in the calling thread, as DbtProject's (harness/dbt_project.py, SINGLE_THREADED says why):
    the profile has one thread, so the nodes run in the same order; dbt's `run_dbt` takes no extra flag, its
    environment variable does."""
    os.environ["DBT_SINGLE_THREADED"] = "true"
    yield
    del os.environ["DBT_SINGLE_THREADED"]


@pytest.fixture(scope="class")
def logs_dir(tmp_path_factory):
    """dbt's logs in a folder of the test run's (dbt's fixture writes them under the repository)."""
    folder = tmp_path_factory.mktemp("dbt_logs")
    os.environ["DBT_LOG_PATH"] = str(folder)
    yield str(folder)
    del os.environ["DBT_LOG_PATH"]


def base_fixture(cls: type, name: str, instance) -> dict:
    """What the dbt class's own fixture `name` returns (its first definition up the class's bases), or {}."""
    for base in cls.__mro__[1:]:
        fixture = base.__dict__.get(name)
        if fixture is not None and base.__module__.startswith("dbt."):
            return fixture._get_wrapped_function()(instance)
    return {}


def project_config(cls: type, instance, models: dict | None = None) -> dict:
    """The dbt class's project settings, with Parquet tables and `models` for every model."""
    own = base_fixture(cls, "project_config_update", instance)
    own = dict(yaml.safe_load(own) if isinstance(own, str) else own)
    own["models"] = {"+file_format": "parquet", **own.get("models", {}), **(models or {})}
    return own
