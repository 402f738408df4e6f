package sparkbucketing

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata
import org.apache.spark.sql.types.StringType

/** What differs between the Spark versions the extension is built for, Spark 4.0 to 4.3's side (the
 *  jar holds this file or spark35/'s, chosen by extension.py from the PySpark it compiles against);
 *  every rule is in the shared sources. */
object SparkCompat {
  /** The files of each partition the scan selects. */
  def selectedFiles(scan: FileSourceScanExec): Iterator[Iterator[FileStatusWithMetadata]] =
    scan.selectedPartitions.filePartitionIterator.map(_.files)

  /** Whether each bucket the scan selects is one file. */
  def bucketsInOneFile(scan: FileSourceScanExec): Boolean = scan.selectedPartitions.bucketsContainSingleFile

  /** A string type of Spark's default collation: its values hash and compare as plain strings. */
  def defaultCollation(s: StringType): Boolean = s.collationId == StringType.collationId
}

/** An expression whose result is null exactly when an input is (Spark 4: a method of Expression). */
trait NullIntolerantExpression extends Expression {
  override def nullIntolerant: Boolean = true
}
