package sparkbucketing

import java.time.ZoneId
import java.util.concurrent.{ExecutionException, Executors, ThreadFactory}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.orc.OrcFile
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Cast, Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.datasources.PartitioningUtils
import org.apache.spark.sql.types.{ArrayType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/** The data files of a bucketed folder (BucketedFolder: what
 *  WriteBucketedFolder wrote), one row each, with the rows its footer states:
 *
 *    SELECT file, partition_values, rows FROM spark_bucketing_files('<json>')
 *
 *  `file` is the URI input_file_name() gives, `partition_values` the file's
 *  partition values as a scan of a table over the folder reads them, cast to
 *  strings (in the folder's partition column order), `rows` the Parquet or
 *  ORC footer's row count. The files are those such a scan reads
 *  (FolderListing). All of it runs in the driver while the query is
 *  analyzed, the footers read by a few threads: the check of a Spark-hash
 *  write, which reads no data column, needs no Spark job (a scan counting
 *  rows per input_file_name() is one: a second or more of a one-day run in a
 *  fresh JVM). */
object TableFiles {
  val Name = Contracts.TableFilesFunction
  private val Threads = 16

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    BucketedFolder.tableFunction(this, Name, of)

  def of(session: SparkSession, folder: BucketedFolder): LogicalPlan = {
    val resolver = session.sessionState.conf.resolver
    val fields = folder.partitionFields(resolver)
    val partitions = FolderListing.partitions(session, new Path(folder.location), fields.size)
    val zone = ZoneId.of(session.sessionState.conf.sessionLocalTimeZone)
    val files = partitions.flatMap { part =>
      // Folder names as written (escaped): Spark's own cast unescapes what needs it.
      val names = part.path.split("/").toSeq.filter(_.nonEmpty).map { kv => val i = kv.indexOf('='); (kv.take(i), kv.drop(i + 1)) }
      val values = fields.zip(names).map { case (field, (column, raw)) =>
        if (!resolver(ExternalCatalogUtils.unescapePathName(column), field.name)) {
          throw new IllegalStateException(s"$Name: folder ${part.path} of ${folder.location} names " +
            s"$column where the partition column ${field.name} belongs")
        }
        val value = PartitioningUtils.castPartValueToDesiredType(field.dataType, raw, zone)
        Cast(Literal(value, field.dataType), StringType, Some(zone.getId)).eval()
      }
      part.files.map(f => (f, values))
    }
    val counts = footerRows(session.sessionState.newHadoopConf(), files.map(_._1), folder.format)
    val output = Seq(
      AttributeReference("file", StringType, nullable = false)(),
      AttributeReference("partition_values", ArrayType(StringType))(),
      AttributeReference("rows", LongType, nullable = false)())
    val rows = files.zip(counts).map { case ((file, values), count) =>
      InternalRow(UTF8String.fromString(file.getPath.toUri.toString), new GenericArrayData(values.toArray[Any]), count)
    }
    LocalRelation(output, rows)
  }

  /** Each file's rows from its footer, in order, read by up to `Threads`
   *  daemon threads (one file's footer is a few small reads: the threads
   *  overlap their waits). */
  private def footerRows(conf: Configuration, files: Seq[FileStatus], format: String): Seq[Long] = {
    // Built once: Parquet's reader, given no options, builds a Configuration
    // per file, which parses Hadoop's XML defaults (10 ms a file).
    val count: FileStatus => Long = if (format == "parquet") {
      val options = HadoopReadOptions.builder(conf).build()
      file => {
        val reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf), options)
        try reader.getRecordCount finally reader.close()
      }
    } else {
      file => {
        val reader = OrcFile.createReader(file.getPath, OrcFile.readerOptions(conf).filesystem(
          file.getPath.getFileSystem(conf)).maxLength(file.getLen))
        try reader.getNumberOfRows finally reader.close()
      }
    }
    if (files.size <= 1) return files.map(count)
    val factory: ThreadFactory = r => { val t = new Thread(r, s"$Name-footers"); t.setDaemon(true); t }
    val pool = Executors.newFixedThreadPool(math.min(files.size, Threads), factory)
    try {
      val pending = files.map(f => pool.submit(() => count(f)))
      pending.map { f =>
        try f.get() catch { case e: ExecutionException => throw e.getCause }
      }
    } finally pool.shutdownNow()
  }
}
