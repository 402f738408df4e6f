package sparkbucketing

import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}

/** A bucketed scan of a Hive-hash table: the scan below reads one task per
 *  bucket (its files grouped by the bucket id in their names), and this node
 *  says what each task holds: the rows whose Hive bucket id (by Hive's
 *  bucketing `version`, 1 or 2) is the task's index. It requires its child's own bucketing, which keeps Spark from
 *  turning the bucketed read off below it (DisableUnnecessaryBucketedScan)
 *  or placing anything between them. */
case class HiveHashBucketedScanExec(child: SparkPlan, version: Int = 1) extends PassThroughExec {

  private def bucketing: Option[HashPartitioning] = child match {
    case scan: FileSourceScanExec if scan.bucketedScan =>
      scan.outputPartitioning match {
        case h: HashPartitioning => Some(h)
        case _ => None
      }
    case _ => None
  }

  override def outputPartitioning: Partitioning = bucketing match {
    case Some(h) => new HiveHashPartitioning(h.expressions, h.numPartitions, version = version)
    case None => child.outputPartitioning
  }

  override def requiredChildDistribution: Seq[Distribution] = bucketing match {
    case Some(h) => ClusteredDistribution(h.expressions, requiredNumPartitions = Some(h.numPartitions)) :: Nil
    case None => UnspecifiedDistribution :: Nil
  }

  override protected def withNewChildInternal(newChild: SparkPlan): HiveHashBucketedScanExec = copy(child = newChild)
}
