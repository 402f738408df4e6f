// In Spark's package: its Hive catalog and client are private[spark] and
// private[hive], and Spark offers no public way to fetch many partitions of a
// table without fetching the table again for each.
package org.apache.spark.sql.hive

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.NoSuchPartitionException
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTablePartition}

object HiveCatalogPartitions {

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
        def lower(spec: Map[String, String]) = spec.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
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
}
