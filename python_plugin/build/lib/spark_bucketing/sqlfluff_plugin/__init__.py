"""sqlfluff plugin: rule SB01 (bucketing.shuffle) flags, at the JOIN's line, a
join between two bucketed relations that will shuffle."""

from __future__ import annotations

from typing import Any

from sqlfluff.core.config import load_config_resource
from sqlfluff.core.plugin import hookimpl


@hookimpl
def get_rules() -> list:
    from spark_bucketing.sqlfluff_plugin.rules import Rule_SB01  # imported late, as sqlfluff asks

    return [Rule_SB01]


@hookimpl
def load_default_config() -> dict[str, Any]:
    return load_config_resource(package="spark_bucketing.sqlfluff_plugin", file_name="default_config.cfg")


@hookimpl
def get_configs_info() -> dict[str, dict[str, Any]]:
    return {
        "manifest": {"definition": "Path to a dbt manifest.json with the bucket specs (default: nearest project's)"},
        "engine": {"validation": ["spark", "trino"], "definition": "The engine whose shuffles to report"},
        "spark_conf": {"definition": "Comma-separated key=value Spark settings the models run with"},
    }
