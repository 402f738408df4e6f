package sparkbucketing

import org.apache.spark.sql.catalyst.expressions.NullIntolerant
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.{BucketingUtils, FileStatusWithMetadata}
import org.apache.spark.sql.types.StringType

/** What differs between the Spark versions the extension is built for, Spark 3.5's side (see
 *  spark4/SparkCompat.scala): 3.5 lists a scan's partitions as an array, and has no collations. */
object SparkCompat {
  def selectedFiles(scan: FileSourceScanExec): Iterator[Iterator[FileStatusWithMetadata]] =
    scan.selectedPartitions.iterator.map(_.files.iterator)

  // As Spark 3.5's FileSourceScanExec decides it for its own sort-free bucketed reads.
  def bucketsInOneFile(scan: FileSourceScanExec): Boolean =
    scan.selectedPartitions.flatMap(_.files).map(f => BucketingUtils.getBucketId(f.getPath.getName))
      .groupBy(identity).forall(_._2.length <= 1)

  def defaultCollation(s: StringType): Boolean = true
}

/** See spark4/SparkCompat.scala; Spark 3.5 marks such an expression with a trait. */
trait NullIntolerantExpression extends NullIntolerant
