"""dbt's parser warns, for every model with constraints, that "Constraint
types are not supported for <materialization> materializations and will be
ignored" unless the materialization is its own `table` or `incremental`
(ModelNode.materialization_enforces_constraints, a fixed list). The
package's bucketed_table and bucketed_incremental enforce `not_null` and
`check` on every row they write, as dbt-spark's table does, and warn of the
others at run time as it does: the plugin (dbt_spark_bucketing) adds them to
the list, so the parser's claim is not made for them."""

from __future__ import annotations

from dbt.contracts.graph.nodes import ModelNode

MATERIALIZATIONS = ("bucketed_table", "bucketed_incremental")


def install() -> None:
    """Counts the package's materializations as enforcing constraints; once per process."""
    current = getattr(ModelNode, "materialization_enforces_constraints", None)
    # A dbt without the property (or with another kind of attribute) is left as it is: the plugin runs at the start
    # of every dbt command, which must not fail for it.
    if not isinstance(current, property) or getattr(current.fget, "spark_bucketing", False):
        return

    def enforces(node: ModelNode) -> bool:
        return node.config.materialized in MATERIALIZATIONS or current.fget(node)

    enforces.spark_bucketing = True  # type: ignore[attr-defined]
    enforces.__wrapped__ = current  # type: ignore[attr-defined]
    ModelNode.materialization_enforces_constraints = property(enforces)  # type: ignore[method-assign]


def uninstall() -> None:
    """dbt's own list again (a process that runs dbt without the package's plugin)."""
    current = getattr(ModelNode, "materialization_enforces_constraints", None)
    if isinstance(current, property) and getattr(current.fget, "spark_bucketing", False):
        ModelNode.materialization_enforces_constraints = current.fget.__wrapped__  # type: ignore[method-assign]
