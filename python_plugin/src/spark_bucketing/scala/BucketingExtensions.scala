package sparkbucketing

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.catalog.{BucketSpec, CatalogTable}
import org.apache.spark.sql.catalyst.planning.ScanOperation
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.{FileSourceStrategy, HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.StructField
import org.apache.spark.util.collection.BitSet

/** Enabled with spark.sql.extensions=sparkbucketing.BucketingExtensions (and
 *  the jar on the classpath); switched off per session with
 *  SET spark_bucketing.extension.enabled=false. */
class BucketingExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    QuietLogs.install()
    extensions.injectPlannerStrategy(session => PackageBucketedScans(session))
    extensions.injectQueryPostPlannerStrategyRule(session => CoalesceBucketsInJoins(session))
    extensions.injectQueryPostPlannerStrategyRule(session => CloneBucketsInJoins(session))
    extensions.injectQueryPostPlannerStrategyRule(session => SupersetKeyJoins(session))
    extensions.injectQueryPostPlannerStrategyRule(session => BucketedUnions(session))
    extensions.injectQueryPostPlannerStrategyRule(session => SortedBuckets(session))
    extensions.injectQueryPostPlannerStrategyRule(session => OneTaskRoutes(session))
    extensions.injectParser((session, delegate) => BucketingParser(session, delegate))
    extensions.injectPostHocResolutionRule(session => PlanFolderWrites(session))
    extensions.injectPostHocResolutionRule(session => ListTablesDespiteDrops(session))
    extensions.injectTableFunction(TableFiles.description)
    extensions.injectTableFunction(FolderRelation.description)
    extensions.injectTableFunction(TablePartitionRecords.description)
    extensions.injectFunction(HiveHashV2.description)
    extensions.injectFunction(HiveWriterHash.description)
    extensions.injectFunction(org.apache.spark.sql.hive.HiveHashFunction.description)
  }
}

object BucketingExtensions {
  val Enabled = Contracts.ExtensionSwitch
  val Marker = Contracts.FormatVersionKey

  def enabled(session: SparkSession): Boolean = session.conf.get(Enabled, "true").toBoolean
}

/** Plans the scan of a table this package wrote as a bucketed scan where
 *  stock Spark reads it unbucketed:
 *  - a Hive-hash bucketed table (Spark's read of a Hive table passes no
 *    bucket spec), by its declared spec and `bucketing_version`;
 *  - an evolving table (declared unbucketed while its partitions disagree),
 *    by the spec the partitions the scan selects share (PartitionRecords).
 *  Spark's own FileSourceStrategy plans the scan with that spec, and for
 *  Hive's hash HiveHashBucketedScanExec states the partitioning by it. A
 *  scan whose files do not all carry Spark's bucket file names is read as
 *  Spark reads it today. */
case class PackageBucketedScans(session: SparkSession) extends SparkStrategy {

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case ScanOperation(_, _, filters, FileTableRelation(relation, fs, table))
        if BucketingExtensions.enabled(session) && table.properties.contains(BucketingExtensions.Marker) =>
      val scan = Scan(plan, relation, fs, filters)
      (fs.bucketSpec, table.bucketSpec) match {
        // A Spark-hash table: Spark plans it bucketed and prunes one column by its own rule; the rule here prunes more.
        case (Some(spec), _) => scan.pruned(FileSourceStrategy(plan), spec, "spark", 0)
        case (None, Some(declared)) =>
          hiveHashVersion(table, declared).map(v => byKeyTypes(plan, table, declared, v)(scan.bucketed(declared, "hive", v)))
            .getOrElse(Nil)
        case (None, None) if table.partitionColumnNames.nonEmpty =>
          // Spark's own plan of the scan: the partitions it selects decide the spec, and it stands when they share none.
          val stock = FileSourceStrategy(plan)
          val scans = stock.flatMap(_.collect { case s: FileSourceScanExec => s })
          PartitionRecords.sharedSpec(session, scans, table)
            .flatMap { case (spec, hash) => inSchemaCase(spec, table).map((_, hash)) }
            .flatMap { case (spec, hash) =>
              if (hash == "spark") Some(scan.bucketed(spec, hash, 0))
              else hiveHashVersion(table, spec).filter(v => HiveHashKeys.unreadable(v, keyFields(table, spec)).isEmpty)
                .map(v => scan.bucketed(spec, hash, v))
            }
            .filter(_.nonEmpty)
            .getOrElse(stock)
        case _ => Nil
      }
    case ScanOperation(_, _, filters, FileTableRelation(relation, fs, table))
        if BucketingExtensions.enabled(session) && ForeignTables.enabled(session) && fs.bucketSpec.isEmpty &&
          session.sessionState.conf.bucketingEnabled =>
      (for {
        spec <- table.bucketSpec
        version <- hiveHashVersion(table, spec)
      } yield byKeyTypes(plan, table, spec, version)(ForeignTables.planned(session, FileSourceStrategy(plan), table, spec,
        version, selectedBuckets(filters, relation, spec, "hive", version)))).getOrElse(Nil)
    case _ => Nil
  }

  /** A scan of a package table: the logical plan of it, its relation and the filters that reach it. */
  private case class Scan(plan: LogicalPlan, relation: LogicalRelation, fs: HadoopFsRelation, filters: Seq[Expression]) {

    /** Spark's plan of the scan read with `spec`, when every file it selects carries a bucket name. */
    def bucketed(spec: BucketSpec, hash: String, hiveVersion: Int): Seq[SparkPlan] = {
      val withSpec = plan.transformDown {
        case l: LogicalRelation if l eq relation => l.copy(relation = fs.copy(bucketSpec = Some(spec))(fs.sparkSession))
      }
      val planned = FileSourceStrategy(withSpec)
      val scans = planned.flatMap(_.collect { case s: FileSourceScanExec => s })
      if (scans.isEmpty || !scans.forall(s => !s.bucketedScan || BucketFileNames.allMatch(s, spec.numBuckets))) Nil
      else pruned(planned, spec, hash, hiveVersion)
    }

    /** The plan with its bucketed scans reading the buckets the filters select (BucketPruning), and
     *  a Hive-hash one stating its placement. Spark's own choice, made by its own hash, stands for a
     *  Spark-hash scan only: on a Hive-hash table it would pick the wrong buckets. */
    def pruned(planned: Seq[SparkPlan], spec: BucketSpec, hash: String, hiveVersion: Int): Seq[SparkPlan] = {
      val selected = selectedBuckets(filters, relation, spec, hash, hiveVersion)
      planned.map(_.transformUp {
        case s: FileSourceScanExec if s.bucketedScan && hash == "spark" =>
          s.copy(optionalBucketSet = BucketPruning.both(s.optionalBucketSet, selected))
        case s: FileSourceScanExec if s.bucketedScan => HiveHashBucketedScanExec(s.copy(optionalBucketSet = selected), hiveVersion)
      })
    }
  }

  /** The buckets the filters of a scan of `relation` can find rows in, hashed by the family of `spec` (BucketPruning). */
  private def selectedBuckets(filters: Seq[Expression], relation: LogicalRelation, spec: BucketSpec, hash: String,
      hiveVersion: Int): Option[BitSet] =
    BucketPruning.selected(filters, relation.output, spec, BucketIds.of(hash, hiveVersion, spec.numBuckets),
      session.sessionState.conf.resolver)

  /** The version of Hive's hash a Hive table's buckets (or its partitions')
   *  were written with, by its `bucketing_version` (absent: 1, as Hive and
   *  Trino read it), where the extension reads them bucketed through
   *  Spark's file source (convertMetastoreParquet and convertMetastoreOrc,
   *  on by default). */
  private def hiveHashVersion(table: CatalogTable, spec: BucketSpec): Option[Int] =
    if (!table.provider.exists(_.equalsIgnoreCase("hive"))) None
    else table.properties.getOrElse("bucketing_version", "1") match {
      case "1" => Some(1)
      case "2" => Some(2)
      case _ => None
    }

  /** The catalog's fields of the bucket columns (a char or varchar keeps its declared type in their metadata). */
  private def keyFields(table: CatalogTable, spec: BucketSpec): Seq[StructField] =
    spec.bucketColumnNames.flatMap(c => table.schema.find(_.name.equalsIgnoreCase(c)))

  /** The `bucketed` plan of a Hive-hash table's scan where its bucket column types hash here as Hive hashes
   *  them (HiveHashKeys); else the stock plan, saying why it is read unbucketed. */
  private def byKeyTypes(plan: LogicalPlan, table: CatalogTable, spec: BucketSpec, version: Int)(
      bucketed: => Seq[SparkPlan]): Seq[SparkPlan] =
    HiveHashKeys.unreadable(version, keyFields(table, spec)) match {
      case None => bucketed
      case Some(reason) => ReadUnbucketedExec.over(FileSourceStrategy(plan), table, reason)
    }

  /** The scan finds bucket columns by exact name: the record's names in the table's case. */
  private def inSchemaCase(spec: BucketSpec, table: CatalogTable): Option[BucketSpec] = {
    def resolve(names: Seq[String]): Option[Seq[String]] = {
      val found = names.flatMap(n => table.dataSchema.fieldNames.find(_.equalsIgnoreCase(n)))
      if (found.size == names.size) Some(found) else None
    }
    for (cols <- resolve(spec.bucketColumnNames); sorts <- resolve(spec.sortColumnNames))
      yield BucketSpec(spec.numBuckets, cols, sorts)
  }
}

/** A batch relation of a catalog table's files: matched by type, as LogicalRelation's fields differ in
 *  number between Spark versions. */
object FileTableRelation {
  def unapply(plan: LogicalPlan): Option[(LogicalRelation, HadoopFsRelation, CatalogTable)] = plan match {
    case r: LogicalRelation if !r.isStreaming => (r.relation, r.catalogTable) match {
      case (fs: HadoopFsRelation, Some(table)) => Some((r, fs, table))
      case _ => None
    }
    case _ => None
  }
}

/** Spark groups a bucketed table's files by the number after the last "_" of
 *  the name. Files Hive or Trino name (000003_0) would all land in bucket 0,
 *  so a scan is read bucketed only when every file it selects carries the
 *  name Spark's writer gives it, whose two bucket ids agree. */
object BucketFileNames {
  private val SparkName = Contracts.SparkBucketFileName.r

  def allMatch(scan: FileSourceScanExec, numBuckets: Int): Boolean =
    SparkCompat.selectedFiles(scan).forall(_.forall { f =>
      f.getPath.getName match {
        case SparkName(lead, id) => id.toInt < numBuckets && (lead == null || lead.toInt == id.toInt)
        case _ => false
      }
    })
}

/** The scan of a Hive-hash table the extension reads unbucketed, as stock
 *  Spark does, because its bucket columns' types do not hash here as Hive
 *  hashes them: the plan says so (HiveHashKeys). */
case class ReadUnbucketedExec(child: SparkPlan, table: String, reason: String) extends PassThroughExec {
  override def simpleString(maxFields: Int): String = s"ReadUnbucketed $table: $reason"
  override protected def withNewChildInternal(newChild: SparkPlan): ReadUnbucketedExec = copy(child = newChild)
}

object ReadUnbucketedExec {
  def over(stock: Seq[SparkPlan], table: CatalogTable, reason: String): Seq[SparkPlan] =
    stock.map(_.transformUp { case s: FileSourceScanExec => ReadUnbucketedExec(s, table.identifier.unquotedString, reason) })
}
