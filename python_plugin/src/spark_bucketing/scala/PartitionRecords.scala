package sparkbucketing

import java.net.URI

import scala.jdk.CollectionConverters._
import scala.util.Try

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.{BucketSpec, CatalogTable}
import org.apache.spark.sql.catalyst.expressions.{Expression, PlanExpression}
import org.apache.spark.sql.execution.FileSourceScanExec

/** The spec one partition was written with, as this package records it (in
 *  the table's properties, spark_bucketing.partition.<path>, or in format 2
 *  in the partition's parameters): the folder its files were written to and
 *  how many. */
case class PartitionRecord(spec: BucketSpec, hash: String, folder: String, files: Long)

/** The bucket spec an evolving table (declared unbucketed while its
 *  partitions disagree) can be read with: the spec every partition a scan
 *  selects was written with. A partition counts only when its record
 *  describes the files the scan lists: they sit in the recorded folder (a
 *  write switches a partition to a new folder before it records it, so a
 *  record not yet updated names the old one) and are as many as recorded. */
object PartitionRecords {
  private val Prefix = Contracts.PartitionKeyPrefix
  private val mapper = new ObjectMapper()

  /** Format 1: every record of the table's properties. */
  def of(table: CatalogTable): Seq[PartitionRecord] =
    table.properties.collect { case (key, value) if key.startsWith(Prefix) => parse(value) }.flatten.toSeq

  /** Format 2: the records of the partitions `filters` select (all of them
   *  with none), from their parameters, in one metastore call. */
  def inPartitions(session: SparkSession, table: CatalogTable, filters: Seq[Expression]): Seq[PartitionRecord] =
    session.sessionState.catalog.listPartitionsByFilter(table.identifier, filters)
      .flatMap(p => RecordParameters.read(p.parameters)).flatMap(parse)

  def inPartitions(session: SparkSession, table: CatalogTable): Seq[PartitionRecord] = inPartitions(session, table, Nil)

  /** The records of the partitions `scans` may select: in format 2 those the
   *  scans' partition filters select, fetched as the scans' own listing
   *  fetched them (the filters that need a query's run, dynamic pruning,
   *  left out: a superset is matched by folder). */
  def selected(session: SparkSession, table: CatalogTable, scans: Seq[FileSourceScanExec]): Seq[PartitionRecord] =
    if (table.properties.get(Contracts.FormatVersionKey).contains("2")) {
      scans.flatMap { scan =>
        inPartitions(session, table, scan.partitionFilters.filter(f => f.deterministic && !f.exists(_.isInstanceOf[PlanExpression[_]])))
      }
    } else of(table)

  /** (spec, hash family) shared by the partitions `scans` select, None when
   *  they disagree, one is not recorded as listed, or none holds a file. */
  def sharedSpec(session: SparkSession, scans: Seq[FileSourceScanExec], table: CatalogTable): Option[(BucketSpec, String)] = {
    val byFolder = selected(session, table, scans).distinct.groupBy(_.folder)
    val partitions = scans.flatMap(SparkCompat.selectedFiles(_).map(_.map(_.getPath).toSeq))
      .filter(_.nonEmpty)
    val matched = partitions.map { files =>
      files.map(_.getParent).distinct match {
        case Seq(folder) => byFolder.getOrElse(folderKey(folder), Nil).filter(_.files == files.size) match {
          case Seq(record) => Some(record)
          case _ => None
        }
        case _ => None
      }
    }
    if (matched.isEmpty || matched.exists(_.isEmpty)) None
    else matched.flatten.map(r => (r.spec, r.hash)).distinct match {
      case Seq(shared) => Some(shared)
      case _ => None
    }
  }

  private def parse(json: String): Option[PartitionRecord] = Try {
    val node = mapper.readTree(json)
    def names(field: String): Seq[String] = node.path(field).elements().asScala.map(_.asText).toSeq
    val buckets = node.path("buckets").asInt(0)
    val hash = node.path("hash").asText("")
    val location = node.path("location").asText("")
    if (buckets <= 0 || names("clustered_by").isEmpty || location.isEmpty || !Set("hive", "spark")(hash)) None
    else Some(PartitionRecord(
      BucketSpec(buckets, names("clustered_by"), names("sorted_by")),
      hash,
      folderKey(recorded(location)),
      node.path("files").asLong(-1)))
  }.toOption.flatten

  /** A recorded location is a URI string (from input_file_name), escaped as such. */
  private def recorded(location: String): Path =
    Try(new Path(new URI(location))).getOrElse(new Path(location))

  private def folderKey(folder: Path): String = folder.toUri.getPath.stripSuffix("/")
}
