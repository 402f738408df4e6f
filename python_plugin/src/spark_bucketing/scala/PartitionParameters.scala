package sparkbucketing

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow, TableIdentifier}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTablePartition, ExternalCatalogUtils}
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.types.StringType
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
 *    SELECT path, record FROM spark_bucketing_records('<schema.table>')
 *
 *  `path` as SHOW PARTITIONS names the partition, `record` the JSON record
 *  or NULL. One metastore call lists every partition with its parameters;
 *  a run never needs this (it reads the records of the partitions it
 *  replaces from its switch); the bucket_metadata test, the package's
 *  readers and a table that changes its declared spec do. */
object TablePartitionRecords {
  val Name: String = Contracts.PartitionRecordsFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = {
    val build: Seq[Expression] => LogicalPlan = {
      case Seq(arg) if arg.foldable && arg.dataType == StringType && arg.eval() != null =>
        val session = SparkSession.active
        of(session, session.sessionState.sqlParser.parseTableIdentifier(arg.eval().toString))
      case _ => throw new IllegalArgumentException(s"$Name takes one argument, a table's name as a string literal")
    }
    (FunctionIdentifier(Name), new ExpressionInfo(getClass.getName, Name), build)
  }

  def of(session: SparkSession, name: TableIdentifier): LogicalPlan = {
    val catalog = session.sessionState.catalog
    val table = catalog.getTableMetadata(name)
    val output = Seq(AttributeReference("path", StringType, nullable = false)(), AttributeReference("record", StringType)())
    val rows = catalog.listPartitions(table.identifier).map { p =>
      InternalRow(UTF8String.fromString(path(table, p)), RecordParameters.read(p.parameters).map(UTF8String.fromString).orNull)
    }
    LocalRelation(output, rows)
  }

  /** The partition's path as SHOW PARTITIONS spells it. */
  def path(table: CatalogTable, p: CatalogTablePartition): String =
    table.partitionColumnNames.map(c => ExternalCatalogUtils.getPartitionPathString(c, p.spec(c))).mkString("/")
}
