package sparkbucketing

import scala.jdk.CollectionConverters._
import scala.reflect.ClassTag

import org.apache.spark.{NarrowDependency, Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, SortOrder, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarToRowTransition, SparkPlan}
import org.apache.spark.sql.execution.joins.ShuffledJoin

/** Joins two bucketed tables whose counts are past the coalescing limit (4
 *  and 64 buckets) at the larger count without shuffling either side, as
 *  ByteDance's "bucket clone" does: when n divides m, a row's bucket among m
 *  modulo n is its bucket among n (Hive's `(h & MaxInt) % n` and Spark's
 *  `pmod(h, n)` alike), so bucket j of the larger side can only meet rows of
 *  bucket j % n of the smaller. Task j reads that bucket of the smaller side
 *  and keeps the rows whose bucket among m is j (ClonedBucketsExec): every
 *  row of the smaller side lands in exactly one task, so outer, semi and
 *  anti joins see each row once, and the stated placement is true.
 *
 *  The smaller side is read m / n times, so a ratio past
 *  spark_bucketing.extension.maxCloneRatio (16 by default; 1 turns this off)
 *  shuffles the smaller side as stock Spark does. Counts within the
 *  coalescing ratio are read in fewer tasks first (CoalesceBucketsInJoins);
 *  this rule runs after it, under adaptive execution as it does. */
case class CloneBucketsInJoins(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session) || maxRatio < 2) plan
    else plan.transformUp { case j: ShuffledJoin => cloned(j).getOrElse(j) }

  private def maxRatio: Int = session.conf.get(CloneBucketsInJoins.MaxRatio, Contracts.CloneRatioDefault).toInt

  private def cloned(j: ShuffledJoin): Option[SparkPlan] =
    for {
      l <- BucketedJoinSides.buckets(j.left)
      r <- BucketedJoinSides.buckets(j.right)
      (lo, hi) = (l min r, l max r)
      if lo != hi && hi % lo == 0 && hi / lo <= maxRatio
      left = if (l == lo) clone(j.left, hi) else j.left
      right = if (r == lo) clone(j.right, hi) else j.right
      // Read m / n times and then shuffled anyway would cost more than the shuffle alone.
      if BucketedJoinSides.keptAsRead(j, left, right, SupersetKeyJoins.keeps(session, j))
    } yield j.withNewChildren(Seq(left, right))

  private def clone(side: SparkPlan, m: Int): SparkPlan =
    BucketedJoinSides.rewriteRead(side)(read => ClonedBucketsExec(read, m))
}

object CloneBucketsInJoins {
  val MaxRatio = Contracts.CloneRatioSetting
}

/** A bucketed read (n tasks, one per bucket) read in `numBuckets` tasks, a
 *  multiple of n: task j reads bucket j % n and keeps the rows whose bucket
 *  among `numBuckets`, by the read's own hash, is j. Rows keep their order.
 *  A columnar read's batches are filtered before rows are made of them (the
 *  node takes the place of Spark's ColumnarToRow), so only the rows kept,
 *  one in m / n, are copied. */
case class ClonedBucketsExec(child: SparkPlan, numBuckets: Int) extends ColumnarToRowTransition {

  private def read: HashPartitioning = child.outputPartitioning match {
    case h: HashPartitioning => h
    case other => throw new IllegalStateException(s"a cloned read must be placed by a hash, not $other")
  }

  // HiveHashPartitioning's copy keeps Hive's hash.
  private def placed: HashPartitioning = read.copy(numPartitions = numBuckets)

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = placed
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  // Keeps the bucketed read below (DisableUnnecessaryBucketedScan) and anything from between.
  override def requiredChildDistribution: Seq[Distribution] =
    ClusteredDistribution(read.expressions, requiredNumPartitions = Some(read.numPartitions)) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    val bucketId = BindReferences.bindReference(placed.partitionIdExpression, child.output)
    val columns = output
    def inBucket(task: Int): InternalRow => Boolean = {
      val id = UnsafeProjection.create(Seq(bucketId))
      row => id(row).getInt(0) == task
    }
    if (child.supportsColumnar) {
      new ClonedPartitionsRDD(child.executeColumnar(), numBuckets).mapPartitionsWithIndex { (task, batches) =>
        val (keep, toRow) = (inBucket(task), UnsafeProjection.create(columns, columns))
        batches.flatMap(_.rowIterator().asScala.filter(keep)).map(toRow)
      }
    } else {
      new ClonedPartitionsRDD(child.execute(), numBuckets).mapPartitionsWithIndex((task, rows) => rows.filter(inBucket(task)))
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ClonedBucketsExec = copy(child = newChild)
}

/** `prev`'s partitions, each read again in every partition whose index modulo prev's count is its own. */
class ClonedPartitionsRDD[T: ClassTag](prev: RDD[T], numPartitions: Int)
    extends RDD[T](prev.context, Seq(new NarrowDependency(prev) {
      override def getParents(partitionId: Int): Seq[Int] = Seq(partitionId % prev.partitions.length)
    })) {

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](numPartitions)(i => ClonedPartition(i, prev.partitions(i % prev.partitions.length)))

  override def compute(split: Partition, context: TaskContext): Iterator[T] =
    prev.iterator(split.asInstanceOf[ClonedPartition].parent, context)

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    prev.preferredLocations(split.asInstanceOf[ClonedPartition].parent)
}

case class ClonedPartition(index: Int, parent: Partition) extends Partition
