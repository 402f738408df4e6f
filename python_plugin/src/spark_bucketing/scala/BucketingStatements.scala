package sparkbucketing

import java.lang.reflect.{InvocationHandler, InvocationTargetException, Method, Proxy}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.{CatalogStorageFormat, CatalogTable, CatalogTablePartition, CatalogTableType, CatalogUtils}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Literal}
import org.apache.spark.sql.catalyst.parser.{ParseException, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.command.{DescribeQueryCommand, LeafRunnableCommand}
import org.apache.spark.sql.hive.HiveCatalogPartitions
import org.apache.spark.sql.types.{BooleanType, IntegerType, StringType, StructType}
import org.apache.spark.sparkbucketing.SparkFileNames

/** A statement of a run's commit that fails releases the run's commit lock
 *  (the view `entry`, macros/steps/lock.sql) before the error reaches dbt,
 *  whose macros cannot catch it: the runs waiting for the lock go on at
 *  once instead of after commit_lock_expiry. */
object CommitLock {
  /** Drops the lock entry `name` (a view), as `DROP VIEW IF EXISTS` does. */
  def release(session: SparkSession, name: String): Unit =
    session.sessionState.catalog.dropTable(
      session.sessionState.sqlParser.parseTableIdentifier(name), ignoreIfNotExists = true, purge = false)

  /** Creates the choosing mark `name` beside `table` (the view CREATE VIEW .. AS SELECT 1 AS held makes, with no
   *  session settings captured: it is listed and dropped, never read), then lists the entries beside the table
   *  (`<table>__dbt_*`, as SHOW TABLES .. LIKE lists them): take_ticket's first step. */
  def mark(session: SparkSession, table: TableIdentifier, name: String): Seq[String] = {
    val catalog = session.sessionState.catalog
    val database = table.database.getOrElse(catalog.getCurrentDatabase)
    // The catalog's call, not the statement: no query planned, no second lookup of the name (30 ms of 80 here).
    catalog.createTable(view(database, name), ignoreIfExists = false)
    // As SHOW TABLES .. LIKE lists them (ShowTablesCommand calls the same), without a statement planned.
    catalog.listTables(database, table.table.toLowerCase(java.util.Locale.ROOT) + "__dbt_*").map(_.table)
  }

  def quoted(name: String): String = "`" + name.replace("`", "``") + "`"

  private val Held = "select 1 as held"

  /** A lock entry: the view `database`.`name` of [[Held]], as CreateViewCommand records it. */
  private def view(database: String, name: String): CatalogTable = CatalogTable(
    identifier = TableIdentifier(name, Some(database)),
    tableType = CatalogTableType.VIEW,
    storage = CatalogStorageFormat.empty,
    schema = new StructType().add("held", IntegerType, nullable = false),
    viewText = Some(Held),
    viewOriginalText = Some(Held),
    properties = Map(
      "view.catalogAndNamespace.numParts" -> "2",
      "view.catalogAndNamespace.part.0" -> "spark_catalog",
      "view.catalogAndNamespace.part.1" -> database,
      "view.query.out.numCols" -> "1",
      "view.query.out.col.0" -> "held"))

  def releasedOnFailure[T](session: SparkSession, entry: Option[String])(body: => T): T =
    try body
    catch {
      case e: Throwable =>
        entry.foreach { name =>
          try release(session, name)
          catch { case d: Throwable => e.addSuppressed(d) }
        }
        throw e
    }
}

/** One partition's move: its spec, its new folder (None keeps the one it
 *  has), the record to keep in its parameters (metadata format 2; None
 *  leaves its parameters as they are), whether the run adds it (it is
 *  not listed yet) or drops it, and `addFiles`: a folder whose data files
 *  move into the partition's own folder (an append that adds files), which
 *  must be `expectLocation` (the folder its record describes). */
case class PartitionMove(
    spec: Map[String, String],
    location: Option[String],
    record: Option[String],
    create: Boolean,
    drop: Boolean,
    addFiles: Option[String] = None,
    expectLocation: Option[String] = None)

/** Points many partitions of a table at new folders in one metastore call:
 *
 *    SPARK_BUCKETING SWITCH PARTITIONS <table> LOCATIONS '<json>'
 *
 *  where <json> is [{"spec": {column: value}, "location": folder}, ...], or
 *  {"moves": [...], "table_properties": {key: value},
 *  "table_properties_after": {key: value}} where a move may also
 *  carry "record" (a string), "create": true or "drop": true, and may leave
 *  out "location". Spark SQL's ALTER TABLE .. PARTITION .. SET LOCATION
 *  moves one partition per statement, each its own metastore call. This
 *  reads the partitions, then hands all of them to HiveCatalogPartitions.alter
 *  at once: for a Hive metastore one alter_partitions call, which the
 *  metastore applies in one transaction (every partition moves, or none
 *  does), each partition keeping the table's bucket spec. The partitions to
 *  create are added after it in one
 *  createPartitions call, with the table's storage format as ALTER TABLE ..
 *  ADD PARTITION adds them, and those to drop dropped in one dropPartitions
 *  call, as ALTER TABLE .. DROP IF EXISTS PARTITION drops them. Each of
 *  the two is one transaction. `table_properties` are set on the table
 *  before any partition changes (format 2's summary marked pending; format
 *  1's records of the partitions it creates, so none is listed without
 *  one), `table_properties_after` once they all have (format 1's records of
 *  the moved partitions: a record never describes files its partition does
 *  not point at yet; `"fail_after_moves": true`, the tests' fault
 *  injection, stops in between; `"release_lock_on_failure"`: the run's
 *  commit lock entry, dropped if the statement fails, CommitLock;
 *  `"commit_properties"`: the table's commit number, set with
 *  `table_properties`, before anything moves; `"table_properties_unset_after"`:
 *  keys unset with `table_properties_after`). A move with "add_files" keeps
 *  its partition's folder and moves the data files of that folder into it
 *  (a rename each, after `table_properties`, before any partition changes:
 *  the records then describe the files). A file already moved is not there
 *  any more, so the statement run again with the same payload (the
 *  package's roll-forward of a run that died in it, kept in
 *  `table_properties`) moves the rest. `"end"`: the end of the run's
 *  commit (CleanRunFolders's payload; its "release_lock" is dropped on a
 *  failure too, where "release_lock_on_failure" is not given) with
 *  `"expect_left"`, the folders the run expects the partitions it moves
 *  (not created, dropped or added to) to leave, in the moves' order: where
 *  they left exactly those, the end runs here, after the switch (a round
 *  trip of a remote client saved; `"fail_before_end"`, the tests' fault
 *  injection, stops in between); else the run ends its commit itself, as it
 *  planned from the folders returned. `"lock"`: the statement takes the
 *  run's commit lock itself first (OwnLock). Returns each partition's previous
 *  folder and record (NULL for one it creates or that was not there),
 *  whether the end ran (`ended`, on every row), then a row per dead run's
 *  folder the end deleted (`deleted`); or, where OwnLock declined, one row
 *  with its reason (`declined`) and nothing changed. */
case class SwitchPartitionLocations(
    table: TableIdentifier,
    moves: Seq[PartitionMove],
    tableProperties: Map[String, String],
    tablePropertiesAfter: Map[String, String] = Map.empty,
    failAfterMoves: Boolean = false,
    lockEntry: Option[String] = None,
    commitProperties: Map[String, String] = Map.empty,
    unsetAfter: Seq[String] = Nil,
    end: Option[FoldedEnd] = None,
    ownLock: Option[OwnLock] = None)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("previous_location", StringType)(),
    AttributeReference("previous_record", StringType)(),
    AttributeReference("ended", BooleanType)(),
    AttributeReference("deleted", StringType)(),
    AttributeReference("declined", StringType)())

  override def run(session: SparkSession): Seq[Row] = CommitLock.releasedOnFailure(session, lockEntry) {
    ownLock.map(_.take(session, table)).getOrElse(Right(session.sessionState.catalog.getTableMetadata(table))) match {
      case Left(reason) => Seq(Row(null, null, false, null, reason))
      case Right(meta) => switchAndEnd(session, meta)
    }
  }

  private def switchAndEnd(session: SparkSession, meta: CatalogTable): Seq[Row] = {
    val conf = session.sessionState.newHadoopConf()
    // A folder the end would refuse to delete refuses the whole statement, before anything moves.
    end.foreach(_.clean.inside(meta, conf))
    val previous = switch(session, meta)
    val left = moves.zip(previous).collect { case (m, row) if !m.create && !m.drop && m.addFiles.isEmpty => Option(row.getString(0)) }
    val ended = end.filter(e => left.size == e.expectLeft.size && left.zip(e.expectLeft).forall {
      case (Some(l), expected) => Folders.qualified(conf, l) == Folders.qualified(conf, expected)
      case (None, _) => false
    })
    ended.foreach { e =>
      if (e.failBeforeEnd) throw new IllegalStateException("spark_bucketing: injected failure at step 'before_cleanup'")
    }
    val deleted = ended.toSeq.flatMap(_.clean.run(session))
    previous.map(r => Row(r.get(0), r.get(1), ended.isDefined, null, null)) ++
      deleted.map(r => Row(null, null, true, r.getString(0), null))
  }

  /** The moves, on the table's entry `meta` as the statement read it. */
  private def switch(session: SparkSession, meta: CatalogTable): Seq[Row] = {
    val catalog = session.sessionState.catalog
    val resolver = session.sessionState.conf.resolver
    // The catalog's spelling of each column (a Hive table's are lower case).
    val specs = moves.map { move =>
      move.spec.map { case (key, value) =>
        val field = meta.partitionSchema.fieldNames.find(resolver(_, key)).getOrElse(
          throw new IllegalArgumentException(s"$key is not a partition column of ${meta.identifier.quotedString}"))
        field -> value
      }
    }
    val indexed = moves.zip(specs)
    val existing = indexed.filter { case (m, _) => !m.create && !m.drop }
    val dropped = indexed.filter(_._1.drop)
    val created = indexed.filter(_._1.create)
    val found = HiveCatalogPartitions.get(session, meta, existing.map(_._2))
    val droppedFound = HiveCatalogPartitions.find(session, meta, dropped.map(_._2))
    def parameters(old: Map[String, String], move: PartitionMove) =
      move.record.map(r => RecordParameters.without(old) ++ RecordParameters.of(r)).getOrElse(old)
    def uri(location: String) = CatalogUtils.stringToURI(location)
    // A format-1 append's partition keeps its folder and parameters (its record is a table property): not altered.
    val updated = found.zip(existing).collect {
      case (old, (move, _)) if move.location.isDefined || move.record.isDefined => old.copy(
        storage = move.location.map(l => old.storage.copy(locationUri = Some(uri(l)))).getOrElse(old.storage),
        parameters = parameters(old.parameters, move))
    }
    val added = created.map { case (move, spec) =>
      val location = move.location.getOrElse(
        throw new IllegalArgumentException(s"${Contracts.SwitchStatement}: a partition to create needs its location"))
      CatalogTablePartition(spec, meta.storage.copy(locationUri = Some(uri(location))), parameters(Map.empty, move))
    }
    val toDrop = droppedFound.flatten.map(_.spec)
    val conf = session.sessionState.newHadoopConf()
    val adds = found.zip(existing).filter(_._2._1.addFiles.isDefined)
    // Every added partition checked before anything changes: the files join only the folder their record describes,
    // and a failed check leaves no pending moves behind for the next run to complete.
    adds.foreach { case (old, (move, _)) =>
      AddedFiles.check(conf, old.spec, old.storage.locationUri.map(CatalogUtils.URIToString), move.expectLocation)
    }
    val before = meta.copy(properties = meta.properties ++ tableProperties ++ commitProperties)
    if (tableProperties.nonEmpty || commitProperties.nonEmpty) catalog.alterTable(before)
    adds.foreach { case (old, (move, _)) =>
      AddedFiles.move(conf, move.addFiles.get, old.storage.locationUri.map(CatalogUtils.URIToString))
    }
    try {
      if (updated.nonEmpty) HiveCatalogPartitions.alter(session, meta, updated)
      if (added.nonEmpty) catalog.createPartitions(meta.identifier, added, ignoreIfExists = false)
      if (toDrop.nonEmpty) {
        catalog.dropPartitions(meta.identifier, toDrop, ignoreIfNotExists = true, purge = false, retainData = false)
      }
      // The tests' fault injection (the run's step 'inside_switch'): the partitions moved, their records not yet written.
      if (failAfterMoves) throw new IllegalStateException("spark_bucketing: injected failure at step 'inside_switch'")
      // Partition changes leave the table's entry as it was: no second read of it.
      if (tablePropertiesAfter.nonEmpty || unsetAfter.nonEmpty) {
        catalog.alterTable(before.copy(properties = before.properties ++ tablePropertiesAfter -- unsetAfter))
      }
    } finally {
      // Added files change a folder's listing, which Spark caches too.
      if (updated.nonEmpty || added.nonEmpty || toDrop.nonEmpty || adds.nonEmpty) {
        session.catalog.refreshTable(meta.identifier.quotedString)
      }
    }
    val previous = (existing.map(_._2).zip(found.map(Option(_))) ++ dropped.map(_._2).zip(droppedFound)).toMap
    specs.map(spec => previous.get(spec).flatten match {
      case Some(old) => Row(old.storage.locationUri.map(CatalogUtils.URIToString).orNull, RecordParameters.read(old.parameters).orNull)
      case None => Row(null, null)
    })
  }
}

/** The commit lock taken by the switch itself (its payload's "lock"), for a run that planned its commit without
 *  holding it: the run's choosing mark `mark` created and the entries beside the table listed (CommitLock.mark); the
 *  run holds the lock by its mark where the listing shows no other entry (take_ticket's rule), and its switch goes on
 *  where the table is as the run planned from: in `location`, the commit number `commit` (the property `commitKey`;
 *  0 where it is not set), no property under any of `pendingPrefixes` (an append's pending moves, a replaced
 *  partition's bucket spec to write back), and the MD5 of its
 *  partitions' names, sorted and joined by newlines, `partitionsMd5`. Else the mark is dropped, nothing else
 *  changed, and the reason returned: the run then takes the lock as every run does and plans anew. */
case class OwnLock(
    mark: String,
    location: String,
    commitKey: String,
    commit: Long,
    pendingPrefixes: Seq[String],
    partitionsMd5: String) {

  /** The table as read under the mark, or why the switch does not go on (the mark dropped). */
  def take(session: SparkSession, table: TableIdentifier): Either[String, CatalogTable] = {
    val others = CommitLock.mark(session, table, mark).filterNot(_.equalsIgnoreCase(mark))
    val declined = if (others.nonEmpty) Some(s"other entries beside the table: ${others.sorted.mkString(", ")}") else {
      val catalog = session.sessionState.catalog
      val meta = catalog.getTableMetadata(table)
      val conf = session.sessionState.newHadoopConf()
      val committed = meta.properties.get(commitKey).map(v => scala.util.Try(v.trim.toLong).getOrElse(-1L)).getOrElse(0L)
      def md5(names: Seq[String]) = java.security.MessageDigest.getInstance("MD5")
        .digest(names.sorted.mkString("\n").getBytes(java.nio.charset.StandardCharsets.UTF_8)).map("%02x".format(_)).mkString
      if (Folders.qualified(conf, meta.location.toString) != Folders.qualified(conf, location)) {
        Some(s"the table is in ${meta.location}, planned in $location")
      } else if (committed != commit) Some(s"commit $committed, planned from commit $commit")
      else if (meta.properties.keys.exists(k => pendingPrefixes.exists(k.startsWith))) Some("a dead run's step is pending")
      else if (md5(if (meta.partitionColumnNames.isEmpty) Nil else catalog.listPartitionNames(meta.identifier)) != partitionsMd5) {
        Some("its partitions changed")
      }
      else return Right(meta)
    }
    CommitLock.release(session, table.database.map(d => s"${CommitLock.quoted(d)}.").getOrElse("") + CommitLock.quoted(mark))
    Left(declined.get)
  }
}

/** A folder's location as its file system names it, without a trailing slash: two spellings of one folder
 *  (`file:/a`, `file:///a/`) compare equal. */
object Folders {
  def qualified(conf: Configuration, location: String): String = {
    val p = new Path(CatalogUtils.stringToURI(location))
    p.getFileSystem(conf).makeQualified(p).toString.stripSuffix("/")
  }
}

/** The end of a commit that the switch runs (SwitchPartitionLocations's "end"). */
case class FoldedEnd(expectLeft: Seq[String], clean: CleanRunFolders, failBeforeEnd: Boolean = false)

/** An append that adds files: the data files of a folder the run wrote,
 *  renamed into a partition's folder (the names Spark's writer gives are
 *  unique per job, so none is taken). */
object AddedFiles {
  import Folders.qualified

  def check(conf: org.apache.hadoop.conf.Configuration, spec: Map[String, String], actual: Option[String],
      expected: Option[String]): Unit =
    (actual, expected) match {
      case (Some(a), Some(e)) if qualified(conf, a) == qualified(conf, e) =>
      case _ => throw new IllegalStateException(
        s"spark_bucketing: partition ${spec.map { case (k, v) => s"$k=$v" }.mkString("/")} is in ${actual.getOrElse("no folder")}, " +
          s"not in ${expected.getOrElse("(none given)")} as its record says (a run that died in its switch left the record " +
          "behind); this append moved no file and published nothing. Rerunning is safe: the rerun rewrites the partition")
    }

  def move(conf: org.apache.hadoop.conf.Configuration, from: String, to: Option[String]): Unit = {
    val source = new Path(CatalogUtils.stringToURI(from))
    val target = new Path(CatalogUtils.stringToURI(to.getOrElse(
      throw new IllegalStateException(s"${Contracts.SwitchStatement}: a partition that takes the files of $from has no folder"))))
    val fs = source.getFileSystem(conf)
    // Files moved by an earlier try of the same payload are gone from the source: nothing left to do for them.
    val files = if (fs.exists(source)) fs.listStatus(source).toSeq.filter(f => f.isFile && !SparkFileNames.skipped(f.getPath.getName)) else Nil
    files.foreach { f =>
      val dest = new Path(target, f.getPath.getName)
      if (!fs.rename(f.getPath, dest)) {
        throw new IllegalStateException(s"${Contracts.SwitchStatement}: could not move ${f.getPath} to $dest")
      }
    }
  }
}

/** The end of a run's commit, in one statement:
 *
 *    SPARK_BUCKETING CLEAN FOLDERS <table> LOCATIONS '<json>'
 *
 *  where <json> is {"started_before": epoch seconds, "keep": [folder, ...],
 *  "delete": [folder, ...], "release_lock": lock entry, "table_properties":
 *  {key: value}, "unset_properties": [key, ...]}, each optional.
 *
 *  - First the table's properties: `table_properties` set and
 *    `unset_properties` removed, in one metastore call (the replaced folders
 *    a run keeps for their retention, and lets go).
 *  - The folders that runs which died left under the table's `_bucketing/`.
 *    A run's folder is `_bucketing/<run>` (and `<run>__new`, its staged
 *    rows), where <run> is `r<start, epoch seconds>_<12 hex>`. A folder of
 *    a run that started before `started_before` is deleted when no
 *    partition of the table points into it and no `keep` folder (a
 *    replaced folder still in its retention) lies in it. Lists `_bucketing/`
 *    once; reads the table's partitions only when such a folder is there.
 *    The caller holds the table's commit lock, so no switch points a
 *    partition into a folder meanwhile.
 *  - Then the `delete` folders: the run's own that no partition uses any
 *    more. Each must lie inside the table's folder (the whole statement is
 *    refused otherwise, before it deletes any folder). Without the
 *    extension the package deletes them through a scratch managed table
 *    (create, add the folders as partitions, drop): three statements and as
 *    many metastore transactions. A folder already gone is no error.
 *  - Then drops `release_lock`, the run's commit lock entry (a statement of
 *    its own saved). A failure on the way drops it too.
 *
 *  Returns the dead runs' folders it deleted. */
case class CleanRunFolders(
    table: TableIdentifier,
    startedBefore: Long,
    keep: Seq[String],
    lockEntry: Option[String],
    delete: Seq[String] = Nil,
    release: Option[String] = None,
    tableProperties: Map[String, String] = Map.empty,
    unsetProperties: Seq[String] = Nil)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(AttributeReference("deleted", StringType)())

  override def run(session: SparkSession): Seq[Row] = CommitLock.releasedOnFailure(session, lockEntry) {
    val catalog = session.sessionState.catalog
    val meta = catalog.getTableMetadata(table)
    val conf = session.sessionState.newHadoopConf()
    val own = inside(meta, conf)
    if (tableProperties.nonEmpty || unsetProperties.nonEmpty) {
      catalog.alterTable(meta.copy(properties = meta.properties ++ tableProperties -- unsetProperties))
    }
    val dead = clean(session, meta, conf)
    own.foreach(p => p.getFileSystem(conf).delete(p, true))
    release.foreach(CommitLock.release(session, _))
    dead.map(p => Row(p.toString))
  }

  /** The `delete` folders, each checked to lie inside the table's folder `meta` names (an error names the first
   *  that does not; the switch that ends a commit checks them before it moves anything). */
  def inside(meta: CatalogTable, conf: Configuration): Seq[Path] = {
    val root = new Path(meta.location)
    val rootName = root.getFileSystem(conf).makeQualified(root).toString.stripSuffix("/") + "/"
    delete.map { f =>
      val path = new Path(CatalogUtils.stringToURI(f))
      val qualified = path.getFileSystem(conf).makeQualified(path)
      if (!qualified.toString.startsWith(rootName)) {
        throw new IllegalArgumentException(
          s"${Contracts.CleanStatement}: $f is not inside ${meta.identifier.quotedString}'s folder $root; nothing was deleted")
      }
      qualified
    }
  }

  private def clean(session: SparkSession, meta: CatalogTable, conf: Configuration): Seq[Path] = {
    val runs = new Path(new Path(meta.location), "_bucketing")
    val fs = runs.getFileSystem(conf)
    val RunFolder = """r([0-9]+)_[0-9a-f]{12}(__new)?""".r
    val old = if (!fs.exists(runs)) Nil else fs.listStatus(runs).toSeq.filter(_.isDirectory).map(_.getPath).filter { p =>
      p.getName match {
        case RunFolder(start, _) => start.toLong < startedBefore
        case _ => false
      }
    }
    if (old.isEmpty) return Nil
    def folder(location: String) = {
      val p = new Path(CatalogUtils.stringToURI(location))
      p.getFileSystem(conf).makeQualified(p).toString.stripSuffix("/") + "/"
    }
    val used = session.sessionState.catalog.listPartitions(meta.identifier).flatMap(_.storage.locationUri)
      .map(u => folder(CatalogUtils.URIToString(u))) ++ keep.map(folder)
    val dead = old.map(fs.makeQualified).filterNot { p =>
      val prefix = p.toString.stripSuffix("/") + "/"
      used.exists(_.startsWith(prefix))
    }
    dead.foreach(p => fs.delete(p, true))
    dead
  }
}

/** The first step of a run's commit lock (macros/steps/lock.sql, take_ticket) and what the run reads next where it
 *  holds the lock by it, in one statement instead of four round trips of a remote client:
 *
 *    SPARK_BUCKETING MARK LOCK <table> ENTRY <name>
 *
 *  creates the run's choosing mark `name` beside the table (a view, as CREATE VIEW .. AS SELECT 1 AS held makes
 *  it), then lists the entries beside the table (`<table>__dbt_*`, as SHOW TABLES .. LIKE lists them), then reads
 *  the table's properties (as SHOW TBLPROPERTIES shows them) and its partitions' names (as SHOW PARTITIONS lists
 *  them; neither before the table exists), in that order: a run whose listing shows no other run's entry holds the
 *  lock, and its commit starts from what was read after that. Returns (kind, name, value) rows: ("entry", name,
 *  NULL) per listed entry, ("property", key, value) per property, ("partition", path, NULL) per partition. */
case class MarkCommitLock(table: TableIdentifier, mark: String) extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("kind", StringType)(),
    AttributeReference("name", StringType)(),
    AttributeReference("value", StringType)())

  override def run(session: SparkSession): Seq[Row] = {
    val entries = CommitLock.mark(session, table, mark).map(Row("entry", _, null))
    val catalog = session.sessionState.catalog
    // A run's first build takes the lock before its table exists.
    if (!catalog.tableExists(table)) return entries
    val meta = catalog.getTableMetadata(table)
    val properties = PropertyRows(session, meta, "property")
    // Names only, as SHOW PARTITIONS lists them: no partition's storage or parameters read.
    val partitions =
      if (meta.partitionColumnNames.isEmpty) Nil
      else catalog.listPartitionNames(meta.identifier).map(Row("partition", _, null))
    entries ++ properties ++ partitions
  }
}

/** A table's properties as SHOW TBLPROPERTIES shows them, as (`kind`, key, value) rows of a statement that returns
 *  them among other rows (MarkCommitLock, DescribeWithProperties). */
object PropertyRows {
  /** From the table's entry `meta`, read already, as ShowTablePropertiesCommand shows them (redacted, no view's
   *  keys, by key): no statement planned, no second read of the entry. */
  def apply(session: SparkSession, meta: CatalogTable, kind: String): Seq[Row] =
    session.sessionState.conf.redactOptions(meta.properties).filter { case (key, _) => !key.startsWith(CatalogTable.VIEW_PREFIX) }
      .toSeq.sortBy(_._1).map { case (key, value) => Row(kind, key, value) }
}

/** A run's reads before it plans, in one round trip of a remote client instead of five:
 *
 *    DESCRIBE TABLE EXTENDED <table> /* SPARK_BUCKETING DESCRIBE [QUERY AS <query>] */
 *
 *  returns the rows of DESCRIBE TABLE EXTENDED, then a (PropertyRow, key, value) row per property, as SHOW
 *  TBLPROPERTIES shows them, then a (SettingRow, key, value) row of the extension's switch as the session has it
 *  (value NULL where it is not set), then, with a query, a (QueryColumnRow, name, type) row per column of the query,
 *  as DESCRIBE QUERY gives them. The request rides in a comment, so that a session without the extension answers
 *  the same statement as a plain DESCRIBE: a run learns whether the extension is loaded from the answer (a
 *  SettingRow) instead of a statement of its own. A reader of DESCRIBE's sections skips the rows after its own (a
 *  first column starting with `#` is a section's heading). */
case class DescribeWithProperties(table: TableIdentifier, query: Option[String] = None) extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("col_name", StringType)(),
    AttributeReference("data_type", StringType)(),
    AttributeReference("comment", StringType)())

  override def run(session: SparkSession): Seq[Row] = {
    val described = session.sql(s"describe table extended ${table.quotedString}").collect()
      .map(r => Row(r.getString(0), r.getString(1), r.getString(2)))
    val properties = PropertyRows(session, session.sessionState.catalog.getTableMetadata(table), Contracts.PropertyRow)
    val setting = Row(Contracts.SettingRow, Contracts.ExtensionSwitch, session.conf.getOption(Contracts.ExtensionSwitch).orNull)
    // DESCRIBE QUERY's command run on the query as parsed, without a statement of its own planned (15-20 ms).
    val columns = query.toSeq.flatMap(q => DescribeQueryCommand(q, session.sessionState.sqlParser.parseQuery(q)).run(session)
      .map(r => Row(Contracts.QueryColumnRow, r.getString(0), r.getString(1))))
    (described ++ properties ++ Seq(setting) ++ columns).toSeq
  }
}

/** A write and the query that checks it, in one round trip of a remote client:
 *
 *    SPARK_BUCKETING WRITE FOLDER '<json>' THEN '<query>' [RECORDS OF <table>] AS <query>
 *
 *  runs the write (WriteBucketedFolder), then `then`, planned once the write
 *  is done, as a statement of its own would be (a query of the folder's files
 *  lists them as the write left them), and returns `then`'s rows. Its
 *  columns are those `then` has when planned before the write (the
 *  folder not there yet). A run's check of what it wrote
 *  (macros/steps/verify.sql) goes with the write this way. With RECORDS OF,
 *  each row also carries the record and folder of `<table>`'s partition of
 *  its path (RecordColumns): an append that adds files reads the records of
 *  the partitions it wrote with no statement of its own. */
case class WriteThenQuery(write: String, then: String, thenColumns: Seq[Attribute], recordsOf: Option[TableIdentifier])
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = thenColumns ++ recordsOf.toSeq.flatMap(_ => WriteThenQuery.RecordColumns)

  override def run(session: SparkSession): Seq[Row] = {
    session.sql(write).collect()
    val rows = session.sql(then).collect().toSeq
    recordsOf.fold(rows) { table =>
      val paths = rows.map(_.getAs[String](WriteThenQuery.PathColumn)).filter(_ != null).distinct
      val listed = TablePartitionRecords.ofPaths(session, table, paths).map { case (p, r, l) => p -> Seq(r, l) }.toMap
      rows.map(r => Row.fromSeq(r.toSeq ++ listed.getOrElse(r.getAs[String](WriteThenQuery.PathColumn), Seq(null, null))))
    }
  }
}

object WriteThenQuery {
  /** The `then` query's column of a row's partition path (a check's, macros/catalog/files.sql). */
  val PathColumn = "__sb_path"

  /** With RECORDS OF <table>: the record and folder of the table's partition of each row's path, NULL where the
   *  catalog lists none (the records function's), read after the query: no statement of their own. */
  val RecordColumns: Seq[Attribute] = Seq(
    AttributeReference("__sb_record", StringType)(), AttributeReference("__sb_location", StringType)())
}

/** The columns of a write's `then` query (WriteThenQuery), planned once
 *  per query: a run's check differs from the previous run's by its folder
 *  alone, on which its columns do not depend, and planning it costs about a
 *  third of the check (60 ms of a small append on a long-lived Spark). Kept
 *  by the query's text with the folder's location taken out, and the
 *  settings that change how Spark types a query; every column nullable. */
object ThenColumns {
  private val Limit = 256
  private type Key = (String, Boolean, Boolean, String)
  private val known = java.util.Collections.synchronizedMap(new java.util.LinkedHashMap[Key, StructType](16, 0.75f, true) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[Key, StructType]): Boolean = size() > Limit
  })

  def of(session: SparkSession, then: String, location: String): Seq[Attribute] = {
    val conf = session.sessionState.conf
    val key = (then.replace(location, "\u0000"), conf.ansiEnabled, conf.caseSensitiveAnalysis, conf.sessionLocalTimeZone)
    val schema = Option(known.get(key)).getOrElse {
      val planned = session.sql(then).schema
      known.put(key, planned)
      planned
    }
    schema.map(f => AttributeReference(f.name, f.dataType, nullable = true)())
  }
}

/** A partition folder of a folder written with no catalog entry: its path
 *  under the folder and its data files. */
case class FolderPartition(path: String, files: Seq[FileStatus])

object FolderListing {

  /** The partition folders `depth` levels under `root` that hold a data
   *  file, by path, as a scan's file index finds them (skipping the names
   *  Spark's file index skips), listed here without the Spark job a file
   *  index runs to list more than 32 folders. */
  def partitions(session: SparkSession, root: Path, depth: Int): Seq[FolderPartition] = {
    val fs = root.getFileSystem(session.sessionState.newHadoopConf())
    def data(name: String) = !SparkFileNames.skipped(name)
    def folders(dir: Path, prefix: String, depth: Int): Seq[FolderPartition] = {
      val entries = fs.listStatus(dir).toSeq
      if (depth == 0) {
        val files = entries.filter(e => e.isFile && data(e.getPath.getName))
        if (files.nonEmpty) Seq(FolderPartition(prefix.stripSuffix("/"), files)) else Nil
      } else {
        entries.filter(e => e.isDirectory && data(e.getPath.getName) && e.getPath.getName.contains("="))
          .flatMap(e => folders(e.getPath, prefix + e.getPath.getName + "/", depth - 1))
      }
    }
    // A folder nothing was written to yet does not exist.
    (if (fs.exists(root)) folders(root, "", depth) else Nil).sortBy(_.path)
  }
}

/** The SPARK_BUCKETING statements: `<statement> <table> LOCATIONS '<json>'`
 *  and `<statement> '<json>' AS <query>`. */
object BucketingStatements {
  private def words(statement: String) = "(?is)^" + statement.split(" ").mkString("\\s+")
  private def pattern(statement: String) = (words(statement) + """\s+(.+?)\s+locations\s+('.*')\s*;?\s*$""").r
  private val Switch = pattern(Contracts.SwitchStatement)
  private val Clean = pattern(Contracts.CleanStatement)
  private val MarkLock = (words(Contracts.MarkLockStatement) + """\s+(.+?)\s+entry\s+([A-Za-z0-9_]+)\s*;?\s*$""").r
  // The query holds no bracketed comment (the macros send it only then): the first `*/` ends the request.
  private val Describe = ("""(?is)^describe\s+table\s+extended\s+(.+?)\s*/\*\s*""" +
    words(Contracts.DescribeRequest).stripPrefix("(?is)^") + """(?:\s+query\s+as\s+(.+?))?\s*\*/\s*;?\s*$""").r
  // Possessive: a long literal (a query) takes a few steps, not one stack frame per character.
  private val QuotedString = """'(?:[^'\\]++|\\.)*+'"""
  private val Write =
    (words(Contracts.WriteFolderStatement) + s"""\\s+($QuotedString)(?:\\s+then\\s+($QuotedString)""" +
      s"""(?:\\s+records\\s+of\\s+(\\S+))?)?\\s+as\\s+(.+?)\\s*;?\\s*$$""").r

  /** `sql` after its leading blanks and comments (dbt puts one before every statement). */
  private def body(sql: String): String = {
    var i = 0
    var more = true
    while (more) {
      while (i < sql.length && sql.charAt(i).isWhitespace) i += 1
      if (sql.startsWith("/*", i)) {
        val end = sql.indexOf("*/", i + 2)
        i = if (end < 0) sql.length else end + 2
      } else if (sql.startsWith("--", i)) {
        val end = sql.indexOf('\n', i)
        i = if (end < 0) sql.length else end + 1
      } else more = false
    }
    sql.substring(i)
  }

  private def string(literal: String, delegate: ParserInterface): String = delegate.parseExpression(literal) match {
    case Literal(value, StringType) if value != null => value.toString
    case _ => throw new IllegalArgumentException(s"spark_bucketing: expected one string literal, not $literal")
  }

  private def json(literal: String, delegate: ParserInterface) = new ObjectMapper().readTree(string(literal, delegate))

  /** A payload's {key: text} object `key` (empty where missing). */
  private def textMap(body: com.fasterxml.jackson.databind.JsonNode, key: String): Map[String, String] =
    body.path(key).fields().asScala.map(f => f.getKey -> f.getValue.asText()).toMap

  /** A payload's [text] array `key` (empty where missing). */
  private def texts(body: com.fasterxml.jackson.databind.JsonNode, key: String): Seq[String] =
    body.path(key).elements().asScala.map(_.asText()).toSeq

  /** The run's commit lock entry a failing statement releases ("release_lock_on_failure"). */
  private def lockEntry(body: com.fasterxml.jackson.databind.JsonNode) =
    Option(body.get("release_lock_on_failure")).filterNot(_.isNull).map(_.asText())

  /** The end of a commit from its payload (the clean statement's, or a switch's "end"). */
  private def clean(table: TableIdentifier, body: com.fasterxml.jackson.databind.JsonNode): CleanRunFolders = {
    val release = Option(body.get("release_lock")).filterNot(_.isNull).map(_.asText())
    CleanRunFolders(table, body.path("started_before").asLong(0L), texts(body, "keep"), lockEntry(body).orElse(release),
      texts(body, "delete"), release, textMap(body, "table_properties"), texts(body, "unset_properties"))
  }

  /** The command, if `sql` is one of the statements. */
  def parse(sql: String, delegate: ParserInterface, session: SparkSession): Option[LogicalPlan] = body(sql) match {
    case Switch(name, literal) =>
      val body = json(literal, delegate)
      val list = if (body.isArray) body else body.path("moves")
      val moves = list.elements().asScala.map { entry =>
        val spec = entry.get("spec").fields().asScala.map(f => f.getKey -> f.getValue.asText()).toMap
        def text(key: String) = Option(entry.get(key)).filterNot(_.isNull).map(_.asText())
        PartitionMove(spec, text("location"), text("record"), entry.path("create").asBoolean(false),
          entry.path("drop").asBoolean(false), text("add_files"), text("expect_location"))
      }.toSeq
      val table = delegate.parseTableIdentifier(name.trim)
      val end = Option(body.get("end")).filterNot(_.isNull).map { e =>
        FoldedEnd(texts(e, "expect_left"), clean(table, e), e.path("fail_before_end").asBoolean(false))
      }
      val own = Option(body.get("lock")).filterNot(_.isNull).map { l =>
        OwnLock(l.path("mark").asText(), l.path("location").asText(), l.path("commit_key").asText(),
          l.path("commit").asLong(0L), texts(l, "pending_prefixes"), l.path("partitions_md5").asText())
      }
      Some(SwitchPartitionLocations(table, moves, textMap(body, "table_properties"),
        textMap(body, "table_properties_after"), body.path("fail_after_moves").asBoolean(false),
        lockEntry(body).orElse(end.flatMap(_.clean.release)), textMap(body, "commit_properties"),
        texts(body, "table_properties_unset_after"), end, own))
    case Clean(name, literal) => Some(clean(delegate.parseTableIdentifier(name.trim), json(literal, delegate)))
    case MarkLock(name, mark) => Some(MarkCommitLock(delegate.parseTableIdentifier(name.trim), mark))
    case Describe(name, query) => Some(DescribeWithProperties(delegate.parseTableIdentifier(name.trim), Option(query)))
    case Write(literal, null, _, query) =>
      Some(WriteBucketedFolder(BucketedFolder.parse(json(literal, delegate)), delegate.parseQuery(query)))
    case Write(literal, then, recordsOf, query) =>
      val check = string(then, delegate)
      val columns = ThenColumns.of(session, check, BucketedFolder.parse(json(literal, delegate)).location)
      Some(WriteThenQuery(s"${Contracts.WriteFolderStatement} $literal as $query", check, columns,
        Option(recordsOf).map(delegate.parseTableIdentifier)))
    case _ => None
  }
}

/** Spark's parser, plus the SPARK_BUCKETING statements: a proxy of Spark's own parser's interface that
 *  answers the plan parsers (parsePlan; parsePlanWithParameters where the Spark version has it) with a
 *  bucketing statement where the text is one, and passes every other call to Spark's parser. A class that
 *  implemented the interface would have to name each of its methods, and they differ between Spark
 *  versions (4.0 has no parsePlanWithParameters, parseTemporalTableIdentifier or splitStatements, which
 *  4.3 has): one source for every version. */
object BucketingParser {
  private val PlanParsers = Set("parsePlan", "parsePlanWithParameters")

  def apply(session: SparkSession, delegate: ParserInterface): ParserInterface = {
    // A checked exception that the interface's method does not declare (Jackson's, on a description that
    // is not JSON) would reach the caller as the proxy's UndeclaredThrowableException, its cause hidden.
    def ours(sql: String): Option[LogicalPlan] =
      try BucketingStatements.parse(sql, delegate, session)
      catch {
        case e: Exception if !e.isInstanceOf[RuntimeException] && !e.isInstanceOf[ParseException] =>
          throw new IllegalArgumentException(s"spark_bucketing: cannot parse the statement: ${e.getMessage}", e)
      }
    val handler = new InvocationHandler {
      override def invoke(proxy: AnyRef, method: Method, args: Array[AnyRef]): AnyRef = {
        val statement =
          if (PlanParsers(method.getName) && args != null && args.nonEmpty) args(0) match {
            case sql: String => ours(sql)
            case _ => None
          } else None
        statement.getOrElse {
          try method.invoke(delegate, (if (args == null) Array.empty[AnyRef] else args): _*)
          catch { case e: InvocationTargetException if e.getCause != null => throw e.getCause }
        }
      }
    }
    Proxy.newProxyInstance(getClass.getClassLoader, Array[Class[_]](classOf[ParserInterface]), handler)
      .asInstanceOf[ParserInterface]
  }
}
