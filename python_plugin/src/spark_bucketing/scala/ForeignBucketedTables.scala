package sparkbucketing

import org.apache.spark.{Partition, SparkException, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.{BucketSpec, CatalogTable}
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{ColumnarToRowTransition, FileSourceScanExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.datasources.{FilePartition, FileScanRDD, PartitionedFile}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.TimestampType
import org.apache.spark.util.collection.BitSet

/** Hive tables this package did not write (Hive, Trino, stock Spark's Hive
 *  insert), read bucketed when `spark_bucketing.extension.foreignTables` is
 *  on: a declared-bucketed Hive table whose every selected file's name gives
 *  a bucket id below the count (ForeignBucketFiles), by the hash its
 *  `bucketing_version` says. Any number of files per bucket, none included.
 *  With `spark_bucketing.extension.foreignTables.verify` (on by default)
 *  each row's bucket is checked as it is read, and a row in another bucket's
 *  file fails the query naming the file, as Trino's hive.validate-bucketing
 *  does; off, the writer is trusted. */
object ForeignTables {
  val Switch = Contracts.ForeignTablesSwitch
  val Verify = Contracts.ForeignTablesVerify

  def enabled(session: SparkSession): Boolean = session.conf.get(Switch, "false").toBoolean
  def verify(session: SparkSession): Boolean = session.conf.get(Verify, "true").toBoolean

  /** The stock plan of the scan with each file scan that can be read by its buckets read so. A table bucketed on a
   *  timestamp is verified whatever the setting: stock Spark's Hive writer places a time before 1970 with a
   *  fraction of a second by its own hash, not Hive's (HiveFieldHash), so its tables cannot be trusted. */
  def planned(session: SparkSession, stock: Seq[SparkPlan], table: CatalogTable, spec: BucketSpec, version: Int,
      selected: Option[BitSet]): Seq[SparkPlan] = {
    val timestampKey = spec.bucketColumnNames.exists(c => table.schema.exists(f => f.name.equalsIgnoreCase(c) &&
      f.dataType == TimestampType))
    stock.map(_.transformUp {
      case s: FileSourceScanExec if s.relation.bucketSpec.isEmpty && readable(s, spec) =>
        ForeignBucketedScanExec(s, table.identifier.unquotedString, spec, version, verify(session) || timestampKey,
          selected, spec.numBuckets)
    })
  }

  private def readable(s: FileSourceScanExec, spec: BucketSpec): Boolean =
    spec.bucketColumnNames.forall(c => s.output.exists(_.name.equalsIgnoreCase(c))) &&
      SparkCompat.selectedFiles(s).forall(_.forall(f =>
        ForeignBucketFiles.bucketOf(f.getPath.getName).exists(_ < spec.numBuckets)))
}

/** The bucket id in a file's name, as Hive (Utilities.getBucketIdFromFile)
 *  and Trino (HiveBucketing's pattern) read it: the leading number of
 *  `000003_0`, `000003_0_copy_1`, Trino's `000003_0_<query>_<uuid>` and
 *  Spark's Hive-style `00003_0_part-..._00003.c000.parquet`. */
object ForeignBucketFiles {
  private val HiveName = Contracts.HiveBucketFileName.r

  def bucketOf(name: String): Option[Int] = name match {
    case HiveName(id) => scala.util.Try(id.toInt).toOption
    case _ => None
  }
}

/** A foreign table's file scan read by its buckets: task i reads the files
 *  of the buckets b with b % tasks == i (tasks: the bucket count, or fewer
 *  when a join reads it coalesced), each file through the scan's own reader,
 *  placed by Hive's hash of `version`. `selected`: the buckets its filters
 *  can find rows in (BucketPruning). */
case class ForeignBucketedScanExec(child: FileSourceScanExec, table: String, spec: BucketSpec, version: Int,
    verify: Boolean, selected: Option[BitSet], tasks: Int) extends ColumnarToRowTransition {

  private def keys: Seq[Attribute] = spec.bucketColumnNames.map(c => child.output.find(_.name.equalsIgnoreCase(c)).get)

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = new HiveHashPartitioning(keys, tasks, version = version)

  // The stock scan's metrics, of the files this node reads: it reads them itself, and the scan below it reads none.
  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "numFiles" -> SQLMetrics.createMetric(sparkContext, "number of files read"),
    "filesSize" -> SQLMetrics.createSizeMetric(sparkContext, "size of files read"),
    "scanTime" -> SQLMetrics.createTimingMetric(sparkContext, "scan time"))

  override def simpleString(maxFields: Int): String = {
    val read = selected.map(_.cardinality()).getOrElse(spec.numBuckets)
    val coalesced = if (tasks != spec.numBuckets) s" (coalesced to $tasks)" else ""
    s"ForeignBucketedScan $table, hivehash${if (version == 2) "v2" else ""} ${spec.numBuckets} buckets$coalesced, " +
      s"${if (verify) "verified" else "trusted"}, SelectedBucketsCount: $read out of ${spec.numBuckets}"
  }

  override protected def doExecute(): RDD[InternalRow] = child.inputRDD match {
    case files: FileScanRDD =>
      val kept = files.filePartitions.flatMap(_.files).map(f => (ForeignBucketedScanExec.bucketOf(f, spec.numBuckets, table), f))
        .filter { case (b, _) => selected.forall(_.get(b)) }
      val partitions = (0 until tasks).map(i => BucketFiles(i, kept.filter(_._1 % tasks == i).sortBy(_._1)))
      val bucketId = if (verify) Some(BindReferences.bindReference(
        new HiveHashPartitioning(keys, spec.numBuckets, version = version).partitionIdExpression, output)) else None
      metrics("numFiles").set(kept.size.toLong)
      metrics("filesSize").set(kept.map(_._2.length).sum)
      SQLMetrics.postDriverMetricUpdates(sparkContext, sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY),
        Seq(metrics("numFiles"), metrics("filesSize")))
      new ForeignBucketsRDD(files, partitions, child.supportsColumnar, output, bucketId, table, keys,
        metrics("numOutputRows"), metrics("scanTime"))
    case other => throw new IllegalStateException(s"a file scan reads through a FileScanRDD, not $other")
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ForeignBucketedScanExec =
    copy(child = newChild.asInstanceOf[FileSourceScanExec])
}

object ForeignBucketedScanExec {
  /** A file's bucket id; a file listed after planning whose name gives none below `buckets` fails the query. */
  def bucketOf(f: PartitionedFile, buckets: Int, table: String): Int =
    ForeignBucketFiles.bucketOf(f.toPath.getName).filter(_ < buckets).getOrElse(throw new SparkException(
      s"spark_bucketing: file ${f.toPath} of table $table carries no bucket id below $buckets in its name, and the " +
        s"query reads the table bucketed: REFRESH TABLE $table and run it again, or SET ${Contracts.ForeignTablesSwitch}=false"))
}

/** Task `index`'s files, each with its bucket id. */
case class BucketFiles(index: Int, files: Seq[(Int, PartitionedFile)]) extends Partition

/** Reads `partitions` with `files`' reader, file by file; with `bucketId`,
 *  checks each row's bucket against its file's. */
class ForeignBucketsRDD(files: FileScanRDD, partitions: Seq[BucketFiles], columnar: Boolean, output: Seq[Attribute],
    bucketId: Option[Expression], table: String, keys: Seq[Attribute], rowsRead: SQLMetric, scanTime: SQLMetric)
    extends RDD[InternalRow](files.context, Nil) {

  override protected def getPartitions: Array[Partition] = partitions.toArray

  override protected def getPreferredLocations(split: Partition): Seq[String] = {
    val part = split.asInstanceOf[BucketFiles]
    FilePartition(part.index, part.files.map(_._2).toArray).preferredLocations().toSeq
  }

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val part = split.asInstanceOf[BucketFiles]
    val toRow = UnsafeProjection.create(output, output)
    val check = bucketId.map(e => (UnsafeProjection.create(Seq(e)), UnsafeProjection.create(keys, output)))
    part.files.iterator.flatMap { case (bucket, f) =>
      val unsafe = timed(FileRows.of(files, part.index, f, columnar, context)).map { row => rowsRead += 1; toRow(row) }
      check match {
        case None => unsafe
        case Some((id, key)) => unsafe.map { row =>
          val found = id(row).getInt(0)
          if (found != bucket) throw misplaced(f, bucket, found, key(row))
          row
        }
      }
    }
  }

  /** The rows, the time spent reading them added to scanTime. */
  private def timed(rows: Iterator[InternalRow]): Iterator[InternalRow] = new Iterator[InternalRow] {
    override def hasNext: Boolean = {
      val start = System.nanoTime()
      try rows.hasNext finally scanTime += (System.nanoTime() - start) / 1000000
    }
    override def next(): InternalRow = rows.next()
  }

  private def misplaced(f: PartitionedFile, bucket: Int, found: Int, key: InternalRow): SparkException = {
    val values = keys.zipWithIndex.map { case (a, i) => s"${a.name}=${Literal(key.get(i, a.dataType), a.dataType).sql}" }
      .mkString(", ")
    new SparkException(s"spark_bucketing: table $table is not bucketed as it declares: file ${f.toPath} is for " +
      s"bucket $bucket, but holds a row for bucket $found ($values). Read it unbucketed with SET " +
      s"${Contracts.ForeignTablesSwitch}=false, and rewrite the partition so that each row is in its bucket's file.")
  }
}
