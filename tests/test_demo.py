"""The main job, on small data: two runs of the demo (the second one
incremental), each ending with one file per bucket, dbt test green and the
checker's verdicts matching Spark's plans."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from spark_bucketing.demo import run_demo

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_twice_with_one_file_per_bucket(spark, tmp_path):
    target = tmp_path / "target"
    args = [
        "--vars",
        json.dumps({"demo_users": 500, "demo_orders": 3000}),
        "--target-path",
        str(target),
        "--log-path",
        str(tmp_path / "logs"),
    ]
    try:
        for _ in range(2):
            out = io.StringIO()
            with redirect_stdout(out):
                code = run_demo(REPO_ROOT / "demo", tmp_path / "state", args, target_dir=str(target))
            text = out.getvalue()
            assert code == 0, text
        rows = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith("bucketing_demo.")}
        assert set(rows) == {
            f"bucketing_demo.{t}" for t in ("order_events", "order_lines", "orders", "user_order_totals", "users")
        }
        # table hash buckets partitions files "max" n rows
        events = rows["bucketing_demo.order_events"]
        assert events[3] == "7" and events[4] == "56" and events[6] == "1"
        assert spark.table("bucketing_demo.order_events").count() == 9000
        assert all(r[6] == "1" for r in rows.values())
        assert "[plan agrees]" in text and "PLAN DISAGREES" not in text
        assert "order_lines JOIN order_lines on order_id (Hive hash): 0 shuffle exchanges with the session" in text
        assert "2 with it off" in text
    finally:
        spark.sql("drop database if exists bucketing_demo cascade")
