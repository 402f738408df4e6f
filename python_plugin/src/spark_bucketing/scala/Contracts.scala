package sparkbucketing

/** Names and formats shared with the dbt macros and the Python package
 *  (spark_bucketing/contracts.py); tests/test_contracts.py ties them. */
object Contracts {
  /** The property this package's materializations give every table they build. */
  val FormatVersionKey = "spark_bucketing.format_version"
  /** A partition's metadata record: the key prefix, then the partition's path. */
  val PartitionKeyPrefix = "spark_bucketing.partition."
  /** Format version 2: a partition's record in its own parameters, under this key (RecordParameters). */
  val PartitionRecordKey = "spark_bucketing.record"
  /** The extension's per-plan switch: false plans as stock Spark does. */
  val ExtensionSwitch = "spark_bucketing.extension.enabled"
  /** Off: joins of package tables on more than their bucket columns shuffle, as stock Spark plans them (SupersetKeyJoins). */
  val SupersetKeysSwitch = "spark_bucketing.extension.supersetJoinKeys"
  /** The largest ratio of two bucket counts the extension joins at the larger count (CloneBucketsInJoins); 1 turns it off. */
  val CloneRatioSetting = "spark_bucketing.extension.maxCloneRatio"
  /** Its default. */
  val CloneRatioDefault = "16"
  /** The most files of one bucket a task reads side by side and merges in `sorted_by` order (SortedBuckets); 1: off. */
  val MergedFilesSetting = "spark_bucketing.extension.maxMergedFiles"
  /** Its default: off, the Sort measured faster (docs/benchmarks.md). */
  val MergedFilesDefault = "1"
  /** On: declared-bucketed Hive tables this package did not write are read bucketed (ForeignTables). */
  val ForeignTablesSwitch = "spark_bucketing.extension.foreignTables"
  /** Off: such tables' rows are not checked against their files' buckets as they are read. */
  val ForeignTablesVerify = "spark_bucketing.extension.foreignTables.verify"
  /** The statement the extension adds to move many partitions at once (SwitchPartitionLocations). */
  val SwitchStatement = "spark_bucketing switch partitions"
  /** The statement the extension adds to end a commit: dead runs' folders under a table's `_bucketing/`, the run's
   *  own unused folders, the lock's release (CleanRunFolders). */
  val CleanStatement = "spark_bucketing clean folders"
  /** The statement the extension adds to mark a run choosing in a table's commit lock, list the lock's entries and
   *  read the table's properties, in one round trip (MarkCommitLock). */
  val MarkLockStatement = "spark_bucketing mark lock"
  /** The request, in a comment after DESCRIBE TABLE EXTENDED, that the extension answers by also reading the table's
   *  properties and its switch, and describing a query, in one round trip (DescribeWithProperties). */
  val DescribeRequest = "spark_bucketing describe"
  /** The first column of DescribeWithProperties's property rows. */
  val PropertyRow = "# spark_bucketing property"
  /** The first column of DescribeWithProperties's row of the extension's switch. */
  val SettingRow = "# spark_bucketing setting"
  /** The first column of DescribeWithProperties's rows of its query's columns. */
  val QueryColumnRow = "# spark_bucketing query column"
  /** The statement the extension adds to write a query's rows into a bucketed folder with no catalog entry (WriteBucketedFolder). */
  val WriteFolderStatement = "spark_bucketing write folder"
  /** The table function the extension adds: a folder's rows, read as a table of its description reads them (FolderRelation). */
  val FolderReadFunction = "spark_bucketing_folder"
  /** The table function the extension adds: every partition's record of a format-2 table (TablePartitionRecords). */
  val PartitionRecordsFunction = "spark_bucketing_records"
  /** The table function the extension adds: a bucketed folder's files and their footers' row counts (TableFiles). */
  val TableFilesFunction = "spark_bucketing_files"
  /** The SQL function the extension adds: Hive's own hash (GenericUDFHash), which the macros create as a temporary
   *  function where the extension is not loaded (HiveHashFunction). */
  val HiveHashFunction = "spark_bucketing_hive_hash"
  /** The SQL function the extension adds: Hive's bucketing v2 hash of its arguments (HiveHashV2). */
  val HiveHashV2Function = "spark_bucketing_hive_hash_v2"
  /** The SQL function the extension adds: Spark's own Hive v1 hash, the one its writer places rows by (HiveWriterHash). */
  val HiveWriterHashFunction = "spark_bucketing_hive_writer_hash"
  /** The column a package write routes its rows to their tasks by (the macros' REPARTITION; OneTaskRoutes). */
  val RouteColumn = "__sb_route"
  /** The bucket id in a Hive-hash table's file name as Hive and Trino read it (ForeignBucketFiles). */
  val HiveBucketFileName = """^(0\d+)_\d+.*"""
  /** The only name Spark's bucketed writer gives a file: (Hive-style lead id, bucket id). */
  val SparkBucketFileName = """^(?:(\d+)_0_)?part-.*_(\d+)\.c\d+(?:\..*)?$"""
}
