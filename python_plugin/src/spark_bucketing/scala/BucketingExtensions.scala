package sparkbucketing

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.planning.ScanOperation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.{FileSourceStrategy, HadoopFsRelation, LogicalRelation}

/** Enabled with spark.sql.extensions=sparkbucketing.BucketingExtensions (and
 *  the jar on the classpath); switched off per session with
 *  SET spark_bucketing.extension.enabled=false. */
class BucketingExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectPlannerStrategy(session => HiveHashBucketedScans(session))
    extensions.injectQueryPostPlannerStrategyRule(session => CoalesceBucketsInJoins(session))
  }
}

object BucketingExtensions {
  val Enabled = "spark_bucketing.extension.enabled"
  /** The property this package's materializations give every table they build. */
  val Marker = "spark_bucketing.format_version"

  def enabled(session: SparkSession): Boolean = session.conf.get(Enabled, "true").toBoolean
}

/** Plans the scan of a Hive-hash bucketed table this package wrote as a
 *  bucketed scan, which Spark never does for a Hive table (its read passes no
 *  bucket spec): Spark's own FileSourceStrategy plans the scan with the
 *  table's bucket spec, and HiveHashBucketedScanExec states the partitioning
 *  by Hive's hash. A table whose files do not all carry Spark's bucket file
 *  names is read as Spark reads it today. */
case class HiveHashBucketedScans(session: SparkSession) extends SparkStrategy {

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case ScanOperation(_, _, _, relation @ LogicalRelation(fs: HadoopFsRelation, _, Some(table), false, _))
        if BucketingExtensions.enabled(session) && hiveHashBucketed(fs, table) =>
      val withSpec = plan.transformDown {
        case l: LogicalRelation if l eq relation => l.copy(relation = fs.copy(bucketSpec = table.bucketSpec)(fs.sparkSession))
      }
      val planned = FileSourceStrategy(withSpec)
      val scans = planned.flatMap(_.collect { case s: FileSourceScanExec => s })
      if (scans.isEmpty || !scans.forall(s => !s.bucketedScan || BucketFileNames.allMatch(s, table.bucketSpec.get.numBuckets))) Nil
      else planned.map(_.transformUp {
        // Spark prunes buckets by its own hash of the filter's values: for a Hive-hash table that would
        // pick the wrong buckets, so every bucket is read (the filter still applies above the scan).
        case s: FileSourceScanExec if s.bucketedScan => HiveHashBucketedScanExec(s.copy(optionalBucketSet = None))
      })
    case _ => Nil
  }

  /** A Hive table this package wrote, bucketed with Hive hash v1 (the hash
   *  Spark writes), read through Spark's file source (convertMetastoreParquet
   *  and convertMetastoreOrc, on by default). */
  private def hiveHashBucketed(fs: HadoopFsRelation, table: CatalogTable): Boolean =
    fs.bucketSpec.isEmpty &&
      table.provider.exists(_.equalsIgnoreCase("hive")) &&
      table.bucketSpec.isDefined &&
      table.properties.contains(BucketingExtensions.Marker) &&
      table.properties.get("bucketing_version").forall(_ == "1")
}

/** Spark groups a bucketed table's files by the number after the last "_" of
 *  the name. Files Hive or Trino name (000003_0) would all land in bucket 0,
 *  so a scan is read bucketed only when every file it selects carries the
 *  name Spark's writer gives it, whose two bucket ids agree. */
object BucketFileNames {
  private val SparkName = """^(?:(\d+)_0_)?part-.*_(\d+)\.c\d+(?:\..*)?$""".r

  def allMatch(scan: FileSourceScanExec, numBuckets: Int): Boolean =
    scan.selectedPartitions.filePartitionIterator.forall(_.files.forall { f =>
      f.getPath.getName match {
        case SparkName(lead, id) => id.toInt < numBuckets && (lead == null || lead.toInt == id.toInt)
        case _ => false
      }
    })
}
