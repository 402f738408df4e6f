package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.catalyst.plans.physical.ClusteredDistribution
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.joins.{ShuffledHashJoinExec, ShuffledJoin}

/** Joins two bucketed tables whose bucket counts share a divisor without
 *  shuffling either: a row's bucket id modulo g is its bucket id among g
 *  buckets whenever g divides the count (for Hive's `(h & MaxInt) % n` and
 *  Spark's `pmod(h, n)` alike), so both scans read their buckets grouped into
 *  g = gcd(n1, n2) tasks (Spark's optionalNumCoalescedBuckets). Spark's own
 *  CoalesceBucketsInJoin does this only when one count divides the other,
 *  only for Spark-hash scans, and only when switched on.
 *
 *  Runs after planning and before Exchanges are placed, which adaptive
 *  execution offers (injectQueryPostPlannerStrategyRule); with adaptive
 *  execution off such a join shuffles one side, as before. A scan is read in
 *  fewer tasks, so each side gives up at most
 *  spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio (Spark's limit,
 *  4 by default) of its parallelism; past it the smaller side is shuffled. */
case class CoalesceBucketsInJoins(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session)) plan
    else plan.transformUp { case j: ShuffledJoin => coalesced(j).getOrElse(j) }

  private def maxRatio: Int = session.conf.get("spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio", "4").toInt

  private def coalesced(j: ShuffledJoin): Option[SparkPlan] =
    for {
      l <- buckets(j.left)
      r <- buckets(j.right)
      g = gcd(l, r)
      if l != r && g > 1 && l / g <= maxRatio && r / g <= maxRatio && !coalescesBuildSide(j, l, r, g)
      left = coalesce(j.left, g)
      right = coalesce(j.right, g)
      if coPartitioned(j, left, right)
    } yield j.withNewChildren(Seq(left, right))

  /** The bucket count of the bucketed scan a join side reads, through filters and projections. */
  private def buckets(side: SparkPlan): Option[Int] = side match {
    case p: ProjectExec => buckets(p.child)
    case f: FilterExec => buckets(f.child)
    case h: HiveHashBucketedScanExec => h.child match {
      case s: FileSourceScanExec => spark(s)
      case _ => None
    }
    case s: FileSourceScanExec => spark(s)
    case _ => None
  }

  private def spark(s: FileSourceScanExec): Option[Int] =
    if (s.bucketedScan && s.optionalNumCoalescedBuckets.isEmpty) s.relation.bucketSpec.map(_.numBuckets) else None

  private def coalesce(side: SparkPlan, g: Int): SparkPlan = side match {
    case p: ProjectExec => p.withNewChildren(Seq(coalesce(p.child, g)))
    case f: FilterExec => f.withNewChildren(Seq(coalesce(f.child, g)))
    case h: HiveHashBucketedScanExec => h.withNewChildren(Seq(coalesce(h.child, g)))
    case s: FileSourceScanExec if s.relation.bucketSpec.exists(_.numBuckets != g) =>
      // A copy carries no tags: without the scan's logical link, adaptive execution fails an
      // assertion when the join still shuffles and an Exchange lands right above the scan.
      val copy = s.copy(optionalNumCoalescedBuckets = Some(g))
      copy.copyTagsFrom(s)
      copy
    case other => other
  }

  /** A shuffled hash join builds a hash table per task: a coalesced build side
   *  would hold several buckets in memory at once (Spark's rule declines it too). */
  private def coalescesBuildSide(j: ShuffledJoin, l: Int, r: Int, g: Int): Boolean = j match {
    case h: ShuffledHashJoinExec =>
      (h.buildSide == BuildLeft && l != g) || (h.buildSide == BuildRight && r != g)
    case _ => false
  }

  /** Spark's own test (EnsureRequirements): both sides satisfy the join's
   *  distributions and their shuffle specs are compatible. Key positions that
   *  differ, or two hash families, keep the join as it was. */
  private def coPartitioned(j: ShuffledJoin, left: SparkPlan, right: SparkPlan): Boolean =
    j.requiredChildDistribution match {
      case Seq(ld: ClusteredDistribution, rd: ClusteredDistribution) =>
        left.outputPartitioning.satisfies(ld) && right.outputPartitioning.satisfies(rd) &&
          left.outputPartitioning.createShuffleSpec(ld).isCompatibleWith(right.outputPartitioning.createShuffleSpec(rd))
      case _ => false
    }

  private def gcd(a: Int, b: Int): Int = if (b == 0) a else gcd(b, a % b)
}
