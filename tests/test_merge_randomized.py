"""bucketed_incremental merge against an independent Python model of the
table: a randomized change feed of inserts, updates, deletes, re-inserts and
keys moving between partitions; the table and each rewritten partition's row
accounting equal the model's after every run. Every other run has the
session extension on (for the Spark hash it writes the merged partitions
into a folder with no side table and checks them from their footers). The
seed is printed (SB_SEED=...) and replayable."""

from __future__ import annotations

import os
import random

import pytest

from harness.spark import extension_on
from tests.test_merge import TableModel, _layout_and_metadata, recorded_accounting, run_batch, table_counter


def random_batch(rng: random.Random, model: TableModel, run: int, deleted_keys: set, days: int = 6) -> list[tuple]:
    """A change batch with one row per key: inserts, updates (moves between
    partitions where the key allows), deletes, deletes of missing keys and
    re-inserts of deleted keys; some amounts NULL."""
    batch: dict = {}
    moves = "day" not in model.key

    def amount():
        return None if rng.random() < 0.2 else float(rng.randint(0, 999))

    for _ in range(rng.randint(4, 14)):
        existing = list(model.rows.values())
        op = rng.random()
        if existing and op < 0.35:
            old = rng.choice(existing)
            day = rng.randrange(days) if moves and rng.random() < 0.4 else old[1]
            row = (old[0], day, f"u{run}", amount(), False)
        elif existing and op < 0.55:
            old = rng.choice(existing)
            row = (*old[:2], f"d{run}", None, True)
        elif op < 0.6:
            row = (rng.randint(1000, 1100), rng.randrange(days), f"x{run}", None, True)
        elif deleted_keys and op < 0.75:
            i, d = rng.choice(sorted(deleted_keys))
            row = (i, d if not moves else rng.randrange(days), f"r{run}", amount(), False)
        else:
            row = (rng.randint(0, 300), rng.randrange(days), f"i{run}", amount(), False)
        batch[model.key_of(row[:4])] = row
    for row in batch.values():
        if row[4]:
            deleted_keys.add((row[0], row[1]))
    return list(batch.values())


# The Spark-hash case, where rows move between partitions and every run's row
# accounting is checked, takes 26 runs; the Hive-hash ORC case, 13.
RUNS = {"key id, spark hash, rows move": 26, "key id+day, hive hash, orc": 13}
CASES = {
    "key id, spark hash, rows move": (
        ("id",),
        {"clustered_by": ["id"], "bucket_hash": "spark", "unique_key": ["id"], "merge_row_accounting": True},
    ),
    "key id+day, hive hash, orc": (
        ("id", "day"),
        {"clustered_by": ["id"], "bucket_hash": "hive", "unique_key": ["id", "day"], "file_format": "orc"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_randomized_change_feed_matches_a_python_model(spark, dbt_project, case):
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    key, config = CASES[case]
    config = {
        **config,
        "buckets": 4,
        "partition_by": ["day"],
        "sorted_by": ["payload"],
        "merge_delete_column": "is_deleted",
    }
    name = "merge_" + "_".join(key) + "_" + config["bucket_hash"]
    table = f"{dbt_project.schema}.{name}"
    model = TableModel(key=key)
    deleted: set = set()
    first = [(i, rng.randrange(6), "first", float(i), False) for i in range(0, 120, 3)]
    run_batch(dbt_project, name, first, config)
    model.merge(first, first=True)
    assert table_counter(spark, table) == model.counter(), f"SB_SEED={seed}"
    for run in range(1, RUNS[case] + 1):
        batch = random_batch(rng, model, run, deleted)
        with extension_on(spark, run % 2 == 1):
            run_batch(dbt_project, name, batch, config)
        expected = model.merge(batch)
        assert table_counter(spark, table) == model.counter(), f"SB_SEED={seed}, run {run}, batch {batch}"
        if config.get("merge_row_accounting"):
            # Each partition the run rewrote records what the merge did to it (an emptied one is dropped).
            recorded = recorded_accounting(spark, table)
            for day, counts in expected.items():
                assert recorded.get(day) == (counts if counts["rows_after"] else None), (
                    f"SB_SEED={seed}, run {run}, day {day}"
                )
        if run % 13 == 0:
            _layout_and_metadata(dbt_project, name)
    _layout_and_metadata(dbt_project, name)
