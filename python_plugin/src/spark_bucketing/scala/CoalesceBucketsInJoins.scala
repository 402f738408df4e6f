package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
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
 *  4 by default) of its parallelism. Past it, counts of which one divides
 *  the other are read at the larger count (CloneBucketsInJoins); any others
 *  shuffle the smaller side. */
case class CoalesceBucketsInJoins(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session)) plan
    else plan.transformUp { case j: ShuffledJoin => coalesced(j).getOrElse(j) }

  private def maxRatio: Int = session.conf.get("spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio", "4").toInt

  private def coalesced(j: ShuffledJoin): Option[SparkPlan] =
    for {
      l <- BucketedJoinSides.buckets(j.left)
      r <- BucketedJoinSides.buckets(j.right)
      g = gcd(l, r)
      if l != r && g > 1 && l / g <= maxRatio && r / g <= maxRatio && !coalescesBuildSide(j, l, r, g)
      left = coalesce(j.left, g)
      right = coalesce(j.right, g)
      if BucketedJoinSides.coPartitioned(j, left, right)
    } yield j.withNewChildren(Seq(left, right))

  private def coalesce(side: SparkPlan, g: Int): SparkPlan = BucketedJoinSides.rewriteRead(side)(coalesceRead(_, g))

  private def coalesceRead(read: SparkPlan, g: Int): SparkPlan = read match {
    case h: HiveHashBucketedScanExec => h.withNewChildren(Seq(coalesceRead(h.child, g)))
    case f: ForeignBucketedScanExec =>
      val copy = f.copy(tasks = g)
      copy.copyTagsFrom(f)
      copy
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

  private def gcd(a: Int, b: Int): Int = if (b == 0) a else gcd(b, a % b)
}
