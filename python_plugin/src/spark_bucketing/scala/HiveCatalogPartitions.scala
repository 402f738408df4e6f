// In Spark's package: its Hive catalog and client are private[spark] and
// private[hive], and Spark offers no public way to fetch many partitions of a
// table without fetching the table again for each.
package org.apache.spark.sql.hive

import java.util.Locale

import scala.jdk.CollectionConverters._

import org.apache.hadoop.hive.metastore.api.EnvironmentContext
import org.apache.hadoop.hive.ql.metadata.{Hive, Table => HiveTable}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTablePartition}
import org.apache.spark.sql.hive.client.HiveClientImpl

object HiveCatalogPartitions {

  /** A spec with the metastore's spelling of its keys (a Hive table's columns are lower case). */
  private def lower(spec: Map[String, String]): Map[String, String] =
    spec.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }

  /** The catalog's entry of each partition in `specs` (keys spelled as the
   *  table's partition columns), in order, None for a partition the catalog
   *  does not list. The session catalog's getPartition fetches the table
   *  from the metastore again for every partition (85% of a 300-partition
   *  switch). A Hive metastore's client takes the table fetched once, and
   *  lists all of a table's partitions in one call for about what 1/30 of
   *  them cost one by one: so all are listed when `specs` are more than 1/20
   *  of them. Its entries keep Spark's statistics in their parameters, which
   *  alterPartitions writes back as they were. */
  def find(session: SparkSession, table: CatalogTable, specs: Seq[Map[String, String]]): Seq[Option[CatalogTablePartition]] =
    session.sharedState.externalCatalog.unwrapped match {
      case hive: HiveExternalCatalog =>
        val (db, name) = (table.database, table.identifier.table)
        val raw = hive.client.getRawHiveTable(db, name)
        val found: Map[String, String] => Option[CatalogTablePartition] =
          if (specs.size > 1 && specs.size * 20 >= hive.client.getPartitionNames(raw.toCatalogTable).size) {
            val all = hive.client.getPartitions(db, name, None).map(p => lower(p.spec) -> p).toMap
            spec => all.get(lower(spec))
          } else spec => hive.client.getPartitionOption(raw, lower(spec))
        specs.map(spec => found(spec).map(_.copy(spec = spec)))
      case _ =>
        val catalog = session.sharedState.externalCatalog
        specs.map(spec => catalog.getPartitionOption(table.database, table.identifier.table, spec))
    }

  /** As `find`, failing on a partition the catalog does not list. */
  def get(session: SparkSession, table: CatalogTable, specs: Seq[Map[String, String]]): Seq[CatalogTablePartition] =
    find(session, table, specs).zip(specs).map { case (found, spec) =>
      found.getOrElse(throw new NoSuchPartitionException(table.database, table.identifier.table, spec))
    }

  /** Writes `parts` (entries `find` read, changed) back in one call, as the session catalog's alterPartitions does,
   *  but for a Hive metastore with the table's bucket columns, count and sort columns on each partition. Spark
   *  builds a partition's storage descriptor anew from its own model of a partition, which has no bucket spec:
   *  every partition it alters (SET LOCATION too) is left with 0 buckets, and Trino then refuses every query of a
   *  bucketed table ("Hive table is bucketed but partition .. is not bucketed"). Hive itself gives a partition the
   *  table's spec when it adds or loads one; this does as Hive does. Like Spark, it asks the metastore not to
   *  recompute the partitions' statistics (which lists their files). */
  def alter(session: SparkSession, table: CatalogTable, parts: Seq[CatalogTablePartition]): Unit =
    session.sharedState.externalCatalog.unwrapped match {
      case hive: HiveExternalCatalog if hive.client.isInstanceOf[HiveClientImpl] =>
        val client = hive.client.asInstanceOf[HiveClientImpl]
        val (db, name) = (table.database, table.identifier.table)
        client.withHiveState {
          val raw = client.getRawHiveTable(db, name).rawTable.asInstanceOf[HiveTable]
          val hiveParts = parts.map { p =>
            val part = HiveClientImpl.toHivePartition(p.copy(spec = lower(p.spec)), raw)
            val sd = part.getTPartition.getSd
            sd.setBucketCols(raw.getBucketCols)
            sd.setNumBuckets(raw.getNumBuckets)
            sd.setSortCols(raw.getSortCols)
            part
          }
          val context = new EnvironmentContext()
          context.putToProperties("DO_NOT_UPDATE_STATS", "true")
          // withHiveState made this client's Hive the thread's own.
          Hive.get().alterPartitions(s"$db.$name", hiveParts.asJava, context)
        }
      case _ =>
        session.sessionState.catalog.alterPartitions(table.identifier, parts)
    }
}
