package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.joins.ShuffledJoin

/** Joins two of this package's bucketed tables on keys that contain both
 *  sides' bucket columns (bucketed on k, joined on k and x) with no Exchange:
 *  rows equal on every join key are equal on k, so they sit in the same
 *  bucket on both sides. Stock Spark shuffles both sides by all the keys
 *  (spark.sql.requireAllClusterKeysForCoPartition, on by default: when a few
 *  values of k hold most rows, a shuffle by all the keys spreads them). This
 *  rule lifts that for the join of two package tables read bucketed,
 *  co-partitioned as they are (same count, same hash, bucket columns at the
 *  same key positions), and for no other join: each side is wrapped in a
 *  node whose partitioning may be kept for this join's keys. Off with
 *  SET spark_bucketing.extension.supersetJoinKeys=false.
 *
 *  Runs after CoalesceBucketsInJoins and CloneBucketsInJoins (counts that
 *  share a divisor are read in g tasks first, counts past the ratio cloned),
 *  and as they only under adaptive execution. */
case class SupersetKeyJoins(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!SupersetKeyJoins.enabled(session)) plan
    else plan.transformUp { case j: ShuffledJoin => kept(j).getOrElse(j) }

  private def kept(j: ShuffledJoin): Option[SparkPlan] = j.requiredChildDistribution match {
    case Seq(ld: ClusteredDistribution, rd: ClusteredDistribution) if SupersetKeyJoins.bothPackage(j) =>
      val (left, right) = (BucketsKeptForJoinExec(j.left, ld.clustering), BucketsKeptForJoinExec(j.right, rd.clustering))
      val superset = Seq(j.left -> ld, j.right -> rd).exists { case (side, d) =>
        side.outputPartitioning match {
          case h: HashPartitioning => !d.areAllClusterKeysMatched(h.expressions)
          case _ => false
        }
      }
      if (superset && BucketedJoinSides.coPartitioned(j, left, right) && left.kept && right.kept) Some(j.withNewChildren(Seq(left, right))) else None
    case _ => None
  }
}

object SupersetKeyJoins {
  val Enabled = Contracts.SupersetKeysSwitch

  def enabled(session: SparkSession): Boolean =
    BucketingExtensions.enabled(session) && session.conf.get(Enabled, "true").toBoolean

  private def bothPackage(j: ShuffledJoin): Boolean =
    PackageBucketedSide.of(j.left).isDefined && PackageBucketedSide.of(j.right).isDefined

  /** Whether this rule keeps the join's sides when they are co-partitioned (the rules before it ask). */
  def keeps(session: SparkSession, j: ShuffledJoin): Boolean = enabled(session) && bothPackage(j)
}

/** The bucketed scan of a package table a join side reads, through filters and projections. */
object PackageBucketedSide {
  def of(side: SparkPlan): Option[FileSourceScanExec] = side match {
    case p: ProjectExec => of(p.child)
    case f: FilterExec => of(f.child)
    case h: HiveHashBucketedScanExec => of(h.child)
    case c: ClonedBucketsExec => of(c.child)
    case s: FileSourceScanExec if s.bucketedScan && builtByPackage(s) => Some(s)
    case _ => None
  }

  /** The scan's table, from the logical plan it was planned from: no catalog call. */
  def builtByPackage(s: FileSourceScanExec): Boolean =
    s.logicalLink.exists(_.collectLeaves().exists {
      case l: LogicalRelation => l.catalogTable.exists(_.properties.contains(BucketingExtensions.Marker))
      case _ => false
    })
}

/** A join side kept as it is (SupersetKeyJoins): its child's rows, order and
 *  placement, with the placement marked as one the join on `joinKeys` may
 *  keep although the keys are more than its columns. */
case class BucketsKeptForJoinExec(child: SparkPlan, joinKeys: Seq[Expression]) extends PassThroughExec {

  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case h: HiveHashPartitioning => h.keptFor(joinKeys)
    case h: HashPartitioning => new KeptHashPartitioning(h.expressions, h.numPartitions, joinKeys)
    case other => other
  }

  def kept: Boolean = outputPartitioning match {
    case _: KeptHashPartitioning => true
    case h: HiveHashPartitioning => h.kept.nonEmpty
    case _ => false
  }

  override protected def withNewChildInternal(newChild: SparkPlan): BucketsKeptForJoinExec = copy(child = newChild)
}

object KeptKeys {
  def same(a: Seq[Expression], b: Seq[Expression]): Boolean =
    a.length == b.length && a.zip(b).forall { case (x, y) => x.semanticEquals(y) }
}

/** Spark's Murmur3 placement, kept for a join on `joinKeys`: its shuffle spec
 *  for exactly those keys may be kept although they are more than its
 *  columns; for any other keys it is Spark's own. Equal to Spark's
 *  partitioning of the same columns and count: it places rows the same way. */
class KeptHashPartitioning(expressions: Seq[Expression], numPartitions: Int, val joinKeys: Seq[Expression])
    extends HashPartitioning(expressions, numPartitions) {

  override def createShuffleSpec(distribution: ClusteredDistribution): ShuffleSpec =
    if (KeptKeys.same(distribution.clustering, joinKeys)) new KeptHashShuffleSpec(this, distribution)
    else super.createShuffleSpec(distribution)

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): HashPartitioning =
    new KeptHashPartitioning(newChildren, numPartitions, joinKeys)

  override def copy(expressions: Seq[Expression] = expressions, numPartitions: Int = numPartitions): HashPartitioning =
    new KeptHashPartitioning(expressions, numPartitions, joinKeys)
}

/** Spark's HashShuffleSpec (its compatibility rules unchanged) that may be kept whatever
 *  spark.sql.requireAllClusterKeysForCoPartition says. */
class KeptHashShuffleSpec(partitioning: HashPartitioning, distribution: ClusteredDistribution)
    extends HashShuffleSpec(partitioning, distribution) {
  override def canCreatePartitioning: Boolean = true
}
