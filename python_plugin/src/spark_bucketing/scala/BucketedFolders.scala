package sparkbucketing

import java.util.Locale

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.hadoop.mapreduce.{Job, TaskAttemptContext}
import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.analysis.TableOutputResolver
import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, BitwiseAnd, BoundReference, Expression, ExpressionInfo, HiveHash, Literal, Pmod, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, UnaryNode}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.CharVarcharUtils
import org.apache.spark.sql.execution.datasources.{BucketingUtils, DataSource, FileFormat, InsertIntoHadoopFsRelationCommand, LogicalRelation, OutputWriter, OutputWriterFactory}
import org.apache.spark.sql.execution.datasources.orc.OrcFileFormat
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.{DataType, StringType, StructField, StructType}

/** A folder of a table's files with no catalog entry, described as the
 *  table would be: `columns` in table order (partition columns last), each
 *  with its type as DESCRIBE gives it; `buckets` 0 for an unbucketed one (a
 *  run's staged rows). The JSON form:
 *
 *    {"location": folder, "format": "parquet" | "orc", "columns": [[name, type], ...],
 *     "partition_by": [...], "clustered_by": [...], "sorted_by": [...], "buckets": n,
 *     "bucketing_version": 2}
 *
 *  `bucketing_version` (`hiveVersion`): 1, the buckets are Hive's v1, as
 *  Spark's writer places a Hive table's rows (its HiveHash); 2, Hive's v2
 *  (HiveHashV2). Either way the files carry Hive's names as well as
 *  Spark's. Absent: Spark's hash.
 */
case class BucketedFolder(
    location: String,
    format: String,
    columns: Seq[(String, DataType)],
    partitionBy: Seq[String],
    clusteredBy: Seq[String],
    sortedBy: Seq[String],
    buckets: Int,
    hiveVersion: Int = 0) {

  /** The folder's columns as a table's schema, in table order. */
  def schema: StructType = StructType(columns.map { case (name, t) => StructField(name, t) })

  /** The partition columns' fields, in `partitionBy` order. */
  def partitionFields(resolver: (String, String) => Boolean): Seq[StructField] = partitionBy.map { p =>
    schema.fields.find(f => resolver(f.name, p)).getOrElse(
      throw new IllegalArgumentException(s"spark_bucketing: partition column $p is not among the folder's columns"))
  }
}

object BucketedFolder {
  /** The description in its JSON form; `format` lower-cased, and refused
   *  unless Parquet or ORC (the formats the package writes, and whose
   *  footers TableFiles reads). */
  def parse(json: JsonNode): BucketedFolder = {
    def text(key: String): String = Option(json.get(key)).filter(_.isTextual).map(_.asText()).getOrElse(
      throw new IllegalArgumentException(s"spark_bucketing: the folder's '$key' is missing or not a string"))
    def names(key: String): Seq[String] = Option(json.get(key)).map(_.elements().asScala.map(_.asText()).toSeq).getOrElse(Nil)
    val columns = Option(json.get("columns")).map(_.elements().asScala.map { pair =>
      (pair.get(0).asText(), DataType.fromDDL(pair.get(1).asText()))
    }.toSeq).getOrElse(Nil)
    val format = text("format").toLowerCase(Locale.ROOT)
    if (format != "parquet" && format != "orc") {
      throw new IllegalArgumentException(s"spark_bucketing: a folder holds Parquet or ORC files, not '$format'")
    }
    BucketedFolder(text("location"), format, columns, names("partition_by"), names("clustered_by"),
      names("sorted_by"), Option(json.get("buckets")).map(_.asInt()).getOrElse(0), hiveVersion(json))
  }

  private def hiveVersion(json: JsonNode): Int = Option(json.get("bucketing_version")).map(_.asInt()) match {
    case None => 0
    case Some(v) if v == 1 || v == 2 => v
    case Some(v) => throw new IllegalArgumentException(
      s"spark_bucketing: a folder is written with Spark's hash or Hive's bucketing version 1 or 2, not bucketing_version $v")
  }

  def parse(json: String): BucketedFolder = parse(new ObjectMapper().readTree(json))

  /** A table function `name('<json>')` of a folder's description, planned by `of` (of `owner`). */
  def tableFunction(owner: AnyRef, name: String, of: (SparkSession, BucketedFolder) => LogicalPlan)
      : (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = {
    val build: Seq[Expression] => LogicalPlan = {
      case Seq(arg) if arg.foldable && arg.dataType == StringType && arg.eval() != null =>
        of(SparkSession.active, parse(arg.eval().toString))
      case _ => throw new IllegalArgumentException(
        s"$name takes one argument, a folder's description (JSON) as a string literal")
    }
    (FunctionIdentifier(name), new ExpressionInfo(owner.getClass.getName, name), build)
  }
}

/** Writes a query's rows into a new folder exactly as an INSERT INTO a
 *  datasource table of that description (bucketed where `buckets` > 0)
 *  writes them, with no catalog entry:
 *
 *    SPARK_BUCKETING WRITE FOLDER '<json>' AS <query>
 *
 *  (<json>: BucketedFolder). The query's columns are taken by position, as
 *  an INSERT takes them (TableOutputResolver: the same casts and checks),
 *  and the write is Spark's own InsertIntoHadoopFsRelationCommand with the
 *  bucket spec: the same files, names, sort and one file per bucket per
 *  task a table's write makes, with maxRecordsPerFile 0 (the package's
 *  tables set it as a table option). It refuses a folder that exists.
 *
 *  Why: a run that writes its partitions beside the table, checks them and
 *  then points the table's partitions at them, would otherwise create a
 *  side table to write through and drop it afterwards: three metastore
 *  calls with nothing in them the run needs (seconds of a one-day run). */
case class WriteBucketedFolder(folder: BucketedFolder, query: LogicalPlan) extends UnaryNode {
  override def child: LogicalPlan = query
  override def output: Seq[Attribute] = Nil
  override protected def withNewChildInternal(newChild: LogicalPlan): WriteBucketedFolder = copy(query = newChild)
}

/** Plans WriteBucketedFolder once its query is resolved (a post-hoc
 *  resolution rule, where Spark's own rules plan an INSERT's write). */
case class PlanFolderWrites(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case WriteBucketedFolder(folder, query) if query.resolved => write(folder, query)
    case _ => plan
  }

  private def write(folder: BucketedFolder, query: LogicalPlan): InsertIntoHadoopFsRelationCommand = {
    val conf = session.sessionState.conf
    val format: FileFormat = if (folder.format == "orc") new OrcFileFormat else new ParquetFileFormat
    // A table's columns: char and varchar read as strings, their lengths checked on write.
    val schema = CharVarcharUtils.replaceCharVarcharWithStringInSchema(folder.schema)
    val projected = TableOutputResolver.resolveOutputColumns(
      folder.location, DataTypeUtils.toAttributes(schema), query, byName = false, conf)
    val out = projected.output
    // Spark's writer finds bucket and sort columns by exact name: the columns' own spelling.
    def column(name: String): Attribute = out.find(a => conf.resolver(a.name, name)).getOrElse(
      throw new IllegalArgumentException(s"${Contracts.WriteFolderStatement}: $name is not one of the folder's columns"))
    val bucketSpec = if (folder.buckets > 0) {
      Some(BucketSpec(folder.buckets, folder.clusteredBy.map(column(_).name), folder.sortedBy.map(column(_).name)))
    } else None
    val command = InsertIntoHadoopFsRelationCommand(
      outputPath = new Path(folder.location),
      staticPartitions = Map.empty,
      ifPartitionNotExists = false,
      partitionColumns = folder.partitionBy.map(column),
      bucketSpec = bucketSpec,
      fileFormat = format,
      options = Map("maxRecordsPerFile" -> "0"),
      query = projected,
      mode = SaveMode.ErrorIfExists,
      catalogTable = None,
      fileIndex = None,
      outputColumnNames = out.map(_.name))
    folder.hiveVersion match {
      case 2 => HiveV2Write(command, folder.buckets, bucketSpec.get.bucketColumnNames.map(column))
      // What Spark's own insert into a Hive table asks of the same writer: HiveHash v1 and Hive's names.
      case 1 => command.copy(options = command.options + (BucketingUtils.optionForHiveCompatibleBucketWrite -> "true"))
      case _ => command
    }
  }
}

/** Spark's Hive v1 hash (HiveHash), the one its writer places a Hive
 *  table's rows by, as the SQL function `spark_bucketing_hive_writer_hash`:
 *  a run that writes Hive v1 buckets through the folder statement checks,
 *  row by row as it writes, that this gives each row the bucket Hive's own
 *  hash function (GenericUDFHash) gives it. */
object HiveWriterHash {
  val Name = Contracts.HiveWriterHashFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression) =
    (FunctionIdentifier(Name), new ExpressionInfo(classOf[HiveHash].getName, Name), (args: Seq[Expression]) => HiveHash(args))
}

/** A write of Hive's bucketing v2, which Spark's writer cannot make (it
 *  places a Hive table's rows by v1). Spark's writer places rows by any
 *  bucket id under Hive's names when asked for Hive-compatible buckets of
 *  one int column whose value is the id (Hive's v1 hash of an int is the int
 *  itself): the query gains that column, the v2 id of its row, and the
 *  files leave it out (WithoutLastColumn). The rest is the command's own:
 *  the same sort, names `0000b_0_part-..._0000b.c000`, one file per bucket
 *  per partition. */
object HiveV2Write {
  val BucketColumn = "__spark_bucketing_v2_bucket"

  def apply(command: InsertIntoHadoopFsRelationCommand, buckets: Int, clusteredBy: Seq[Attribute]): InsertIntoHadoopFsRelationCommand = {
    val id = Alias(Pmod(BitwiseAnd(HiveHashV2(clusteredBy), Literal(Int.MaxValue)), Literal(buckets)), BucketColumn)()
    val query = Project(command.query.output :+ id, command.query)
    command.copy(
      query = query,
      bucketSpec = command.bucketSpec.map(_.copy(bucketColumnNames = Seq(BucketColumn))),
      fileFormat = WithoutLastColumn(command.fileFormat),
      options = command.options + (BucketingUtils.optionForHiveCompatibleBucketWrite -> "true"),
      outputColumnNames = command.outputColumnNames :+ BucketColumn)
  }
}

/** A file format that writes every data column of its rows but the last. */
case class WithoutLastColumn(inner: FileFormat) extends FileFormat {
  override def inferSchema(session: SparkSession, options: Map[String, String], files: Seq[FileStatus]): Option[StructType] =
    inner.inferSchema(session, options, files)

  override def supportDataType(dataType: DataType): Boolean = inner.supportDataType(dataType)
  override def supportFieldName(name: String): Boolean = inner.supportFieldName(name)
  override def toString: String = inner.toString

  override def prepareWrite(session: SparkSession, job: Job, options: Map[String, String], dataSchema: StructType): OutputWriterFactory = {
    val factory = inner.prepareWrite(session, job, options, StructType(dataSchema.dropRight(1)))
    new OutputWriterFactory {
      override def getFileExtension(context: TaskAttemptContext): String = factory.getFileExtension(context)
      override def newInstance(path: String, schema: StructType, context: TaskAttemptContext): OutputWriter = {
        val kept = StructType(schema.dropRight(1))
        val writer = factory.newInstance(path, kept, context)
        val project = UnsafeProjection.create(kept.fields.toSeq.zipWithIndex.map { case (f, i) => BoundReference(i, f.dataType, f.nullable) })
        new OutputWriter {
          override def write(row: InternalRow): Unit = writer.write(project(row))
          override def close(): Unit = writer.close()
          override def path(): String = writer.path()
        }
      }
    }
  }
}

/** The rows of a folder WriteBucketedFolder wrote, read as a table of its
 *  description would read them, with no catalog entry:
 *
 *    SELECT ... FROM spark_bucketing_folder('<json>')
 *
 *  (<json>: BucketedFolder; its bucket spec is not used: the rows are read
 *  as an unbucketed table's). The partition values are read with the
 *  described types, not inferred from the folder names (which would read a
 *  string '01' as the number 1). A run stages a model's rows this way,
 *  where it would otherwise create a side table and drop it. */
object FolderRelation {
  val Name = Contracts.FolderReadFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    BucketedFolder.tableFunction(this, Name, of)

  def of(session: SparkSession, folder: BucketedFolder): LogicalPlan = {
    val fields = folder.partitionFields(session.sessionState.conf.resolver)
    val source = DataSource(session, className = folder.format, paths = Seq(folder.location),
      userSpecifiedSchema = Some(folder.schema), partitionColumns = fields.map(_.name))
    LogicalRelation(source.resolveRelation(checkFilesExist = false))
  }
}
