package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, HashPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeExec}
import org.apache.spark.sql.internal.SQLConf

/** Drops the shuffle a package write routes its rows by (the macros'
 *  REPARTITION on the route column, distributed_select_sql) where the rows
 *  already sit as it would place them. The shuffle is there only so that
 *  each (partition, bucket) is written by one task, and Spark's writer then
 *  writes one file per bucket per task. Rows that are
 *  - in one task (a one-split source, such as an hour's rows), and no more
 *    than adaptive execution puts in one task after a shuffle
 *    (spark.sql.adaptive.advisoryPartitionSizeInBytes, by the plan's size
 *    estimate): the shuffle would end in one task too, a stage later (about
 *    a fifth of a small append's write);
 *  - or clustered by some of its keys (each task holds whole partitions)
 *  are written as they are. Any other input is routed as before.
 *
 *  Runs after planning and before Exchanges are placed
 *  (injectQueryPostPlannerStrategyRule, adaptive execution); with adaptive
 *  execution off the rows are routed as before. */
case class OneTaskRoutes(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session)) plan
    else plan.transformUp {
      // A type pattern: the exchange's fields differ in number between Spark versions.
      case e: ShuffleExchangeExec if routed(e) => e.child
    }

  private def routed(e: ShuffleExchangeExec): Boolean = (e.outputPartitioning, e.shuffleOrigin) match {
    case (HashPartitioning(keys, _), REPARTITION_BY_COL | REPARTITION_BY_NUM) =>
      keys.exists(routeColumn) && placed(e, keys, e.child)
    case _ => false
  }

  private def placed(exchange: SparkPlan, keys: Seq[Expression], child: SparkPlan): Boolean =
    child.outputPartitioning.satisfies(ClusteredDistribution(keys)) &&
      (child.outputPartitioning.numPartitions > 1 || small(exchange))

  /** Whether the plan's estimate of the exchange's rows is at most one task's after a shuffle. */
  private def small(exchange: SparkPlan): Boolean = exchange.logicalLink.exists { l =>
    l.stats.sizeInBytes <= BigInt(session.sessionState.conf.getConf(SQLConf.ADVISORY_PARTITION_SIZE_IN_BYTES))
  }

  private def routeColumn(key: Expression): Boolean = key match {
    case a: Attribute => a.name == Contracts.RouteColumn
    case _ => false
  }
}
