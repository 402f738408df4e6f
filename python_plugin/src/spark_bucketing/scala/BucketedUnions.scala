package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeMap}
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{SparkPlan, UnionExec}

/** A UNION ALL of this package's tables read bucketed with one placement (the
 *  same hash, count and bucket columns at the same output positions) keeps
 *  it, so a join or an aggregation on the bucket columns above it needs no
 *  Exchange. Spark 4.1+ keeps a union's placement when its children's are
 *  equal (spark.sql.unionOutputPartitioning), and reads the union bucket by
 *  bucket then; but it compares Spark's partitionings column by column with
 *  the columns' qualifiers, and a projection names its columns with the
 *  table's qualifier where the scan's placement names them without, so a
 *  union whose first child projects a partitioned table loses it. Each child
 *  is restated by its output's own columns (PlacedByOutputExec); a union
 *  Spark still does not keep is left as it was. (Hive's placement compares
 *  semantically, HiveHashPartitioning.) Runs where CoalesceBucketsInJoins
 *  does, under adaptive execution. */
case class BucketedUnions(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session)) plan
    else plan.transformUp {
      case u: UnionExec if u.children.forall(PackageBucketedSide.of(_).isDefined) && unknown(u) =>
        val restated = u.withNewChildren(u.children.map(PlacedByOutputExec(_)))
        if (unknown(restated)) u else restated
    }

  private def unknown(u: SparkPlan): Boolean = u.outputPartitioning.isInstanceOf[UnknownPartitioning]
}

/** Its child's rows, order and placement, the placement named by the child's
 *  output columns (the same columns, by expression id). */
case class PlacedByOutputExec(child: SparkPlan) extends PassThroughExec {

  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case h: HashPartitioning =>
      val byId = AttributeMap(child.output.map(a => a -> a))
      h.transform { case a: Attribute if byId.contains(a) => byId(a) }.asInstanceOf[Partitioning]
    case other => other
  }

  override protected def withNewChildInternal(newChild: SparkPlan): PlacedByOutputExec = copy(child = newChild)
}
