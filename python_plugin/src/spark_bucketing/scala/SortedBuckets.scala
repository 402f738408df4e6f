package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Ascending, SortOrder}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}

/** A bucketed scan of a package table declared `sorted_by` returns each
 *  bucket's rows in that order when every bucket it selects is one file: the
 *  package writes each bucket of a partition as one file sorted by those
 *  columns (ascending, NULLs first, as Spark's writer sorts). Stated, a
 *  sort-merge join or a sort aggregation on a prefix of them skips its Sort.
 *  Spark's own spark.sql.legacy.bucketedTableScan.outputOrdering does the
 *  same for any table, off by default; the scan has listed its files while
 *  planning anyway (BucketFileNames). A scan that selects several partitions
 *  has several files per bucket and keeps its Sort; so does a scan read in
 *  fewer tasks than buckets (CoalesceBucketsInJoins), whose tasks hold
 *  several buckets. Runs after the other post-planning rules. */
case class SortedBuckets(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = if (!BucketingExtensions.enabled(session)) plan else stated(plan)

  private def stated(plan: SparkPlan): SparkPlan = plan match {
    case done: SortedBucketsExec => done
    case h @ HiveHashBucketedScanExec(s: FileSourceScanExec, _) => order(s).map(SortedBucketsExec(h, _)).getOrElse(h)
    case s: FileSourceScanExec => order(s).map(SortedBucketsExec(s, _)).getOrElse(s)
    case other => other.mapChildren(stated)
  }

  private def order(s: FileSourceScanExec): Option[Seq[SortOrder]] =
    for {
      spec <- s.relation.bucketSpec
      if s.bucketedScan && s.optionalNumCoalescedBuckets.isEmpty && s.outputOrdering.isEmpty
      if spec.sortColumnNames.nonEmpty && PackageBucketedSide.builtByPackage(s)
      // Spark's own test for its setting: no bucket id appears twice among the selected files.
      if s.selectedPartitions.bucketsContainSingleFile
      columns = spec.sortColumnNames.map(n => s.output.find(_.name == n)).takeWhile(_.isDefined).flatten
      if columns.nonEmpty
    } yield columns.map(SortOrder(_, Ascending))

}

/** A package scan (or its Hive-hash node) whose buckets are each one sorted
 *  file: its child's rows and placement, in `ordering` (SortedBuckets). */
case class SortedBucketsExec(child: SparkPlan, ordering: Seq[SortOrder]) extends PassThroughExec {
  override def outputOrdering: Seq[SortOrder] = ordering
  override protected def withNewChildInternal(newChild: SparkPlan): SortedBucketsExec = copy(child = newChild)
}
