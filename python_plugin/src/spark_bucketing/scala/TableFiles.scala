package sparkbucketing

import java.util.Locale

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.orc.OrcFile
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Cast, Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.{ArrayType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.util.SerializableConfiguration

/** A table's data files, one row each, with the rows each holds as its
 *  footer states them:
 *
 *    SELECT file, partition_values, rows FROM spark_bucketing_files('<table>')
 *
 *  `file` is the URI input_file_name() gives, `partition_values` the file's
 *  partition values cast to strings (in the table's partition column
 *  order), `rows` the Parquet or ORC footer's row count. The files are those
 *  a scan of the table reads (Spark's own listing of it). The check of a
 *  Spark-hash write reads no data column: a scan that counts rows per
 *  input_file_name() runs one task per small file (each file costs
 *  spark.sql.files.openCostInBytes of a split) and aggregates every row,
 *  where this reads each footer in a job of a few tasks. The listing and
 *  the job run while the query is analyzed. */
object TableFiles {
  val Name = Contracts.TableFilesFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(Name), new ExpressionInfo(getClass.getName, Name), build)

  private def build(args: Seq[Expression]): LogicalPlan = args match {
    case Seq(arg) if arg.foldable && arg.dataType == StringType && arg.eval() != null =>
      of(SparkSession.active, arg.eval().toString)
    case _ => throw new IllegalArgumentException(s"$Name takes one argument, a table's name as a string literal")
  }

  def of(session: SparkSession, name: String): LogicalPlan = {
    val ident = session.sessionState.sqlParser.parseTableIdentifier(name)
    val meta = session.sessionState.catalog.getTableMetadata(ident)
    val format = meta.provider.map(_.toLowerCase(Locale.ROOT)).getOrElse("")
    if (format != "parquet" && format != "orc") {
      throw new IllegalArgumentException(
        s"$Name: ${meta.identifier.quotedString} is a '$format' table; footers are read of Parquet and ORC datasource tables")
    }
    val relation = session.table(meta.identifier.quotedString).queryExecution.analyzed.collectFirst {
      case LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => fs
    }.getOrElse(throw new IllegalStateException(s"$Name: ${meta.identifier.quotedString} is not read from files"))
    val partitionTypes = relation.partitionSchema.fields.map(_.dataType)
    val timeZone = Some(session.sessionState.conf.sessionLocalTimeZone)
    val files = relation.location.listFiles(Nil, Nil).flatMap { dir =>
      val values = partitionTypes.zipWithIndex.map { case (dataType, i) =>
        Cast(Literal(dir.values.get(i, dataType), dataType), StringType, timeZone).eval()
      }
      dir.files.map(f => (f.getPath.toUri.toString, values))
    }
    val counts = footerRows(session, files.map(_._1), format)
    val output = Seq(
      AttributeReference("file", StringType, nullable = false)(),
      AttributeReference("partition_values", ArrayType(StringType))(),
      AttributeReference("rows", LongType, nullable = false)())
    val rows = files.zip(counts).map { case ((file, values), count) =>
      InternalRow(UTF8String.fromString(file), new GenericArrayData(values.toArray[Any]), count)
    }
    LocalRelation(output, rows)
  }

  /** Each file's rows from its footer, in order: a job of at most two tasks per core. */
  private def footerRows(session: SparkSession, files: Seq[String], format: String): Seq[Long] = {
    if (files.isEmpty) return Nil
    val conf = new SerializableConfiguration(session.sessionState.newHadoopConf())
    val slices = math.min(files.size, 2 * session.sparkContext.defaultParallelism)
    session.sparkContext.parallelize(files, slices).mapPartitions { paths =>
      paths.map(p => rowsInFooter(new Path(new java.net.URI(p)), conf.value, format))
    }.collect().toSeq
  }

  private def rowsInFooter(path: Path, conf: Configuration, format: String): Long =
    if (format == "parquet") {
      val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path, conf))
      try reader.getRecordCount finally reader.close()
    } else {
      val reader = OrcFile.createReader(path, OrcFile.readerOptions(conf))
      try reader.getNumberOfRows finally reader.close()
    }
}
