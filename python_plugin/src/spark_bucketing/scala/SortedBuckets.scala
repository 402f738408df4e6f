package sparkbucketing

import org.apache.spark.{OneToOneDependency, Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, BindReferences, InputFileBlockLength, InputFileBlockStart, InputFileName, SortOrder, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.GenerateOrdering
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarToRowTransition, FileSourceScanExec, FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.{BucketingUtils, FilePartition, FileScanRDD}

/** A bucketed scan of a package table declared `sorted_by` returns each
 *  bucket's rows in that order: the package writes each bucket of a
 *  partition as one file sorted by those columns (ascending, NULLs first, as
 *  Spark's writer sorts). Stated, a sort-merge join or a sort aggregation on
 *  a prefix of them skips its Sort.
 *  - Where every bucket the scan selects is one file (one partition), the
 *    scan's own reads are in that order (SortedBucketsExec). Spark's own
 *    spark.sql.legacy.bucketedTableScan.outputOrdering does the same for any
 *    table, off by default; the scan has listed its files while planning
 *    anyway (BucketFileNames).
 *  - Where a bucket spans several files (several partitions), at most
 *    spark_bucketing.extension.maxMergedFiles of them (1 by default: off,
 *    as the Sort measured faster where a bucket fits in memory), each task
 *    reads its bucket's files side by side and merges them
 *    (MergedSortedBucketsExec), in place of the Sort. Past that count the
 *    Sort stays: every file of a task is open at once.
 *  Not for a scan read in fewer tasks than buckets (CoalesceBucketsInJoins),
 *  whose tasks hold several buckets; merged only where an operator above
 *  asks for an order (a sort-merge join, a sort aggregation) through nodes
 *  that keep it, since a merge gives up the scan's columnar batches, and
 *  never in a plan that asks which file a row came from. Runs after the
 *  other post-planning rules, before Spark places its Sorts. */
case class SortedBuckets(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan =
    if (!BucketingExtensions.enabled(session)) plan
    // The walk for input_file_name() only where merging is on (it is off by default).
    else stated(plan, asked = false, allowed = maxMerged > 1 && !SortedBuckets.readsFileNames(plan))

  private def maxMerged: Int = session.conf.get(SortedBuckets.MaxMergedFiles, Contracts.MergedFilesDefault).toInt

  /** `asked`: an operator above asks for the order of `plan`'s rows, through
   *  nodes that keep it; `allowed`: the plan may merge a bucket's files. */
  private def stated(plan: SparkPlan, asked: Boolean, allowed: Boolean): SparkPlan = plan match {
    case done @ (_: SortedBucketsExec | _: MergedSortedBucketsExec) => done
    case h @ HiveHashBucketedScanExec(s: FileSourceScanExec, _) => ordered(h, s, asked && allowed)
    case s: FileSourceScanExec => ordered(s, s, asked && allowed)
    case other =>
      val orders = other.requiredChildOrdering
      other.withNewChildren(other.children.zipWithIndex.map { case (child, i) =>
        stated(child, orders.lift(i).exists(_.nonEmpty) || asked && SortedBuckets.keepsOrder(other), allowed)
      })
  }

  private def ordered(read: SparkPlan, s: FileSourceScanExec, merge: Boolean): SparkPlan = order(s) match {
    case Some(ordering) if SparkCompat.bucketsInOneFile(s) => SortedBucketsExec(read, ordering)
    case Some(ordering) if merge && SortedBuckets.filesPerBucket(s) <= maxMerged => MergedSortedBucketsExec(read, ordering)
    case _ => read
  }

  private def order(s: FileSourceScanExec): Option[Seq[SortOrder]] =
    for {
      spec <- s.relation.bucketSpec
      if s.bucketedScan && s.optionalNumCoalescedBuckets.isEmpty && s.outputOrdering.isEmpty
      if spec.sortColumnNames.nonEmpty && PackageBucketedSide.builtByPackage(s)
      columns = spec.sortColumnNames.map(n => s.output.find(_.name == n)).takeWhile(_.isDefined).flatten
      if columns.nonEmpty
    } yield columns.map(SortOrder(_, Ascending))
}

object SortedBuckets {
  val MaxMergedFiles = Contracts.MergedFilesSetting

  /** The most files any bucket spans among those the scan selects. */
  def filesPerBucket(s: FileSourceScanExec): Int = {
    val ids = SparkCompat.selectedFiles(s).flatMap(_.map(f => BucketingUtils.getBucketId(f.getPath.getName)))
    ids.toSeq.groupBy(identity).values.map(_.size).foldLeft(0)(math.max)
  }

  /** Nodes whose rows are their child's, in its order. */
  def keepsOrder(node: SparkPlan): Boolean = node match {
    case _: ProjectExec | _: FilterExec | _: PassThroughExec | _: ClonedBucketsExec => true
    case _ => false
  }

  /** input_file_name() and its kin name the file a task read last: with a
   *  bucket's files read side by side, another row's. */
  def readsFileNames(plan: SparkPlan): Boolean = plan.exists(_.expressions.exists(_.exists {
    case _: InputFileName | _: InputFileBlockStart | _: InputFileBlockLength => true
    case _ => false
  }))
}

/** A package scan (or its Hive-hash node) whose buckets are each one sorted
 *  file: its child's rows and placement, in `ordering` (SortedBuckets). */
case class SortedBucketsExec(child: SparkPlan, ordering: Seq[SortOrder]) extends PassThroughExec {
  override def outputOrdering: Seq[SortOrder] = ordering
  override protected def withNewChildInternal(newChild: SparkPlan): SortedBucketsExec = copy(child = newChild)
}

/** A package scan (or its Hive-hash node) whose buckets span several files,
 *  each sorted by `ordering`: task j opens each file of bucket j on its own
 *  (the scan's own reader, one FilePartition per file) and returns their
 *  rows merged in `ordering`, one row per step from the file whose next row
 *  is least. The scan's placement is unchanged. The node takes the place of
 *  Spark's ColumnarToRow above a columnar scan, and makes rows of its
 *  batches as the merge takes them. */
case class MergedSortedBucketsExec(child: SparkPlan, ordering: Seq[SortOrder]) extends ColumnarToRowTransition {

  private def scan: FileSourceScanExec = child match {
    case s: FileSourceScanExec => s
    case HiveHashBucketedScanExec(s: FileSourceScanExec, _) => s
    case other => throw new IllegalStateException(s"a merged read is of a file scan, not $other")
  }

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = ordering

  // Keeps the bucketed read below (DisableUnnecessaryBucketedScan) and anything from between.
  override def requiredChildDistribution: Seq[Distribution] = child.outputPartitioning match {
    case h: HashPartitioning => ClusteredDistribution(h.expressions, requiredNumPartitions = Some(h.numPartitions)) :: Nil
    case _ => UnspecifiedDistribution :: Nil
  }

  override protected def doExecute(): RDD[InternalRow] = scan.inputRDD match {
    case files: FileScanRDD => new MergedFilesRDD(files, scan.supportsColumnar, output, BindReferences.bindReferences(ordering, output))
    case other => throw new IllegalStateException(s"a bucketed scan reads through a FileScanRDD, not $other")
  }

  override protected def withNewChildInternal(newChild: SparkPlan): MergedSortedBucketsExec = copy(child = newChild)
}

/** `files`' partitions (one per bucket), each file of a partition read as a
 *  run of its own and the runs merged by `ordering`. */
class MergedFilesRDD(files: FileScanRDD, columnar: Boolean, output: Seq[Attribute], ordering: Seq[SortOrder])
    extends RDD[InternalRow](files.context, Seq(new OneToOneDependency(files))) {

  override protected def getPartitions: Array[Partition] = files.partitions

  override protected def getPreferredLocations(split: Partition): Seq[String] = files.preferredLocations(split)

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val bucket = split.asInstanceOf[FilePartition]
    val runs = bucket.files.toSeq.map { f =>
      new MergedFilesRDD.Run(FileRows.of(files, bucket.index, f, columnar, context), UnsafeProjection.create(output, output))
    }
    new MergedFilesRDD.Merge(runs, GenerateOrdering.generate(ordering, output))
  }
}

object MergedFilesRDD {
  /** A file's rows; `head` its current row, copied into the run's own buffer. */
  final class Run(rows: Iterator[InternalRow], copy: UnsafeProjection) {
    var head: InternalRow = _
    def advance(): Boolean = rows.hasNext && { head = copy(rows.next()); true }
  }

  /** The runs' rows in `order`. A row returned stays valid until the next
   *  call, as Spark's operators expect: its run advances only then. */
  final class Merge(runs: Seq[Run], order: Ordering[InternalRow]) extends Iterator[InternalRow] {
    private val queue = new java.util.PriorityQueue[Run](math.max(runs.size, 1), (a: Run, b: Run) => order.compare(a.head, b.head))
    runs.foreach(r => if (r.advance()) queue.add(r))
    private var taken: Run = _

    private def restore(): Unit = if (taken != null) {
      if (taken.advance()) queue.add(taken)
      taken = null
    }

    override def hasNext: Boolean = { restore(); !queue.isEmpty }

    override def next(): InternalRow = {
      restore()
      taken = queue.poll()
      taken.head
    }
  }
}
