package sparkbucketing

import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{FilePartition, FileScanRDD, PartitionedFile}
import org.apache.spark.sql.vectorized.ColumnarBatch

/** One file's rows, read through a scan's own reader (its FileScanRDD, with
 *  the scan's pushed filters and partition values) as a partition of that
 *  file alone: the extension's reads that go file by file (a bucket's sorted
 *  files merged, a foreign table's files by bucket). A columnar scan's
 *  batches are returned row by row; the rows are the batches' own, valid
 *  until the next one is taken. */
object FileRows {
  def of(files: FileScanRDD, index: Int, file: PartitionedFile, columnar: Boolean, context: TaskContext): Iterator[InternalRow] = {
    val read = files.compute(FilePartition(index, Array(file)), context).asInstanceOf[Iterator[AnyRef]]
    if (columnar) read.flatMap(_.asInstanceOf[ColumnarBatch].rowIterator().asScala) else read.map(_.asInstanceOf[InternalRow])
  }
}
