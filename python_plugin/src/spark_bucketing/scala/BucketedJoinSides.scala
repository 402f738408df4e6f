package sparkbucketing

import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, ShuffleSpec}
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.joins.ShuffledJoin

/** The join sides the count rules (CoalesceBucketsInJoins, CloneBucketsInJoins)
 *  change: a bucketed scan read one task per bucket, under filters and
 *  projections, and its Hive-hash node when it has one; a foreign table's
 *  bucketed read (ForeignBucketedScanExec). */
object BucketedJoinSides {

  /** The bucket count of the scan a join side reads in one task per bucket. */
  def buckets(side: SparkPlan): Option[Int] = side match {
    case p: ProjectExec => buckets(p.child)
    case f: FilterExec => buckets(f.child)
    case h: HiveHashBucketedScanExec => h.child match {
      case s: FileSourceScanExec => perBucket(s)
      case _ => None
    }
    case s: FileSourceScanExec => perBucket(s)
    case f: ForeignBucketedScanExec if f.tasks == f.spec.numBuckets => Some(f.tasks)
    case _ => None
  }

  private def perBucket(s: FileSourceScanExec): Option[Int] =
    if (s.bucketedScan && s.optionalNumCoalescedBuckets.isEmpty) s.relation.bucketSpec.map(_.numBuckets) else None

  /** The side with `read` applied to its bucketed read: the Hive-hash node
   *  when there is one (it states the placement), else the scan. */
  def rewriteRead(side: SparkPlan)(read: SparkPlan => SparkPlan): SparkPlan = side match {
    case p: ProjectExec => p.withNewChildren(Seq(rewriteRead(p.child)(read)))
    case f: FilterExec => f.withNewChildren(Seq(rewriteRead(f.child)(read)))
    case h: HiveHashBucketedScanExec => read(h)
    case s: FileSourceScanExec => read(s)
    case f: ForeignBucketedScanExec => read(f)
    case other => other
  }

  /** Spark's own test (EnsureRequirements): both sides satisfy the join's
   *  distributions and their shuffle specs are compatible. Key positions that
   *  differ, or two hash families, keep the join as it was. */
  def coPartitioned(j: ShuffledJoin, left: SparkPlan, right: SparkPlan): Boolean =
    specs(j, left, right).exists { case (l, r) => l.isCompatibleWith(r) }

  /** coPartitioned, and EnsureRequirements keeps both sides as they are: one
   *  side's spec may place the other (every join key a bucket column, or
   *  spark.sql.requireAllClusterKeysForCoPartition off), or SupersetKeyJoins
   *  keeps them (`supersetKept`). */
  def keptAsRead(j: ShuffledJoin, left: SparkPlan, right: SparkPlan, supersetKept: Boolean): Boolean =
    specs(j, left, right).exists { case (l, r) =>
      l.isCompatibleWith(r) && (supersetKept || l.canCreatePartitioning || r.canCreatePartitioning)
    }

  /** Each side's shuffle spec for the join's distributions, when both satisfy them. */
  private def specs(j: ShuffledJoin, left: SparkPlan, right: SparkPlan): Option[(ShuffleSpec, ShuffleSpec)] =
    j.requiredChildDistribution match {
      case Seq(ld: ClusteredDistribution, rd: ClusteredDistribution)
          if left.outputPartitioning.satisfies(ld) && right.outputPartitioning.satisfies(rd) =>
        Some((left.outputPartitioning.createShuffleSpec(ld), right.outputPartitioning.createShuffleSpec(rd)))
      case _ => None
    }
}
