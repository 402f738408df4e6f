package sparkbucketing

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow, TableIdentifier}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTablePartition, CatalogUtils, ExternalCatalogUtils}
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.types.StringType
import org.apache.spark.sql.hive.HiveCatalogPartitions
import org.apache.spark.unsafe.types.UTF8String

/** A partition's record in its own parameters (metadata format version 2).
 *  A Hive 2.3 metastore holds a partition parameter's value in 4,000
 *  characters (PARTITION_PARAMS.PARAM_VALUE; a table's in 32,672): a longer
 *  record is split over numbered keys, as Spark splits a table's schema. */
object RecordParameters {
  val Key: String = Contracts.PartitionRecordKey
  private val Parts = s"$Key.numParts"
  private def part(i: Int) = s"$Key.part.$i"
  val MaxValue = 4000

  def of(record: String): Map[String, String] =
    if (record.length <= MaxValue) Map(Key -> record)
    else {
      val chunks = split(record)
      Map(Parts -> chunks.size.toString) ++ chunks.zipWithIndex.map { case (c, i) => part(i) -> c }
    }

  /** The record `parameters` hold, if any. */
  def read(parameters: Map[String, String]): Option[String] =
    parameters.get(Key).orElse(parameters.get(Parts).map { n =>
      (0 until n.toInt).map(i => parameters.getOrElse(part(i),
        throw new IllegalStateException(s"$Key: part $i of $n is missing"))).mkString
    })

  /** `parameters` without a record. */
  def without(parameters: Map[String, String]): Map[String, String] =
    parameters.filterNot { case (k, _) => k == Key || k.startsWith(s"$Key.") }

  /** Chunks of at most MaxValue characters, never splitting a surrogate pair. */
  private def split(s: String): Seq[String] = {
    val out = Seq.newBuilder[String]
    var i = 0
    while (i < s.length) {
      var end = math.min(i + MaxValue, s.length)
      if (end < s.length && Character.isHighSurrogate(s.charAt(end - 1))) end -= 1
      out += s.substring(i, end)
      i = end
    }
    out.result()
  }
}

/** Every partition's record of a table whose records live in its partitions:
 *
 *    SELECT path, record, location FROM spark_bucketing_records('<schema.table>')
 *
 *  `path` as SHOW PARTITIONS names the partition, `record` the JSON record
 *  or NULL, `location` the partition's folder. One metastore call lists every
 *  partition with its parameters (the bucket_metadata test, the package's
 *  readers, a table that changes its declared spec, a compaction). With a
 *  second argument, a JSON list of partition specs ([{column: value}, ...]),
 *  only those partitions (the ones the catalog lists), fetched with the table
 *  read once: an append that adds files reads the records of the partitions
 *  it touches and nothing else. */
object TablePartitionRecords {
  val Name: String = Contracts.PartitionRecordsFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = {
    def text(arg: Expression) =
      if (arg.foldable && arg.dataType == StringType && arg.eval() != null) Some(arg.eval().toString) else None
    val build: Seq[Expression] => LogicalPlan = {
      case Seq(arg) if text(arg).isDefined =>
        val session = SparkSession.active
        of(session, session.sessionState.sqlParser.parseTableIdentifier(text(arg).get), None)
      case Seq(arg, specs) if text(arg).isDefined && text(specs).isDefined =>
        val session = SparkSession.active
        of(session, session.sessionState.sqlParser.parseTableIdentifier(text(arg).get), Some(parseSpecs(text(specs).get)))
      case _ => throw new IllegalArgumentException(
        s"$Name takes a table's name as a string literal, and optionally a JSON list of partition specs as a second")
    }
    (FunctionIdentifier(Name), new ExpressionInfo(getClass.getName, Name), build)
  }

  private def parseSpecs(json: String): Seq[Map[String, String]] = {
    val node = new ObjectMapper().readTree(json)
    if (!node.isArray) throw new IllegalArgumentException(s"$Name: the partition specs must be a JSON list, got $json")
    node.elements().asScala.map(_.fields().asScala.map(f => f.getKey -> f.getValue.asText()).toMap).toSeq
  }

  def of(session: SparkSession, name: TableIdentifier, specs: Option[Seq[Map[String, String]]]): LogicalPlan = {
    val output = Seq(
      AttributeReference("path", StringType, nullable = false)(),
      AttributeReference("record", StringType)(),
      AttributeReference("location", StringType)())
    val rows = listed(session, name, specs).map { case (path, record, location) =>
      def utf8(s: String) = Option(s).map(UTF8String.fromString).orNull
      InternalRow(utf8(path), utf8(record), utf8(location))
    }
    LocalRelation(output, rows)
  }

  /** (path, record or null, folder) of the table's partitions the catalog lists among `paths` (as SHOW PARTITIONS
   *  names them: `column=value` folder names), in one call: an append that adds files reads the records of the
   *  partitions it wrote in the statement that writes them (WriteThenQuery). */
  def ofPaths(session: SparkSession, name: TableIdentifier, paths: Seq[String]): Seq[(String, String, String)] =
    listed(session, name, Some(paths.map(_.split("/").map { part =>
      val (column, value) = part.splitAt(part.indexOf('='))
      ExternalCatalogUtils.unescapePathName(column) -> ExternalCatalogUtils.unescapePathName(value.drop(1))
    }.toMap)))

  private def listed(session: SparkSession, name: TableIdentifier, specs: Option[Seq[Map[String, String]]]) = {
    val catalog = session.sessionState.catalog
    val table = catalog.getTableMetadata(name)
    val resolver = session.sessionState.conf.resolver
    val partitions = specs match {
      case None => catalog.listPartitions(table.identifier)
      case Some(wanted) =>
        // Keys spelled as the table's partition columns (a Hive table's are lower case).
        val spelled = wanted.map(_.map { case (k, v) => table.partitionColumnNames.find(resolver(_, k)).getOrElse(k) -> v })
        HiveCatalogPartitions.find(session, table, spelled).flatten
    }
    partitions.map { p =>
      (path(table, p), RecordParameters.read(p.parameters).orNull, p.storage.locationUri.map(CatalogUtils.URIToString).orNull)
    }
  }

  /** The partition's path as SHOW PARTITIONS spells it. */
  def path(table: CatalogTable, p: CatalogTablePartition): String =
    table.partitionColumnNames.map(c => ExternalCatalogUtils.getPartitionPathString(c, p.spec(c))).mkString("/")
}
