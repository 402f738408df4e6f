package sparkbucketing

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.{LeafRunnableCommand, ShowTablesCommand}

/** SHOW TABLE EXTENDED as Spark's command answers it (ShowTablesCommand), leaving out an entry dropped between the
 *  listing of the names and the read of its entry, where Spark's fails whole. dbt-spark lists a schema this way as
 *  a run starts and, where the listing fails, takes the schema for empty: a run that starts while another run of
 *  the schema drops an entry (a commit lock's, a run's side entry: several a second while runs commit) would take
 *  its own table for missing and build it from scratch, and a stock incremental model would try to create it. */
case class TablesListedExtended(databaseName: Option[String], pattern: Option[String], override val output: Seq[Attribute])
    extends LeafRunnableCommand {

  override def run(session: SparkSession): Seq[Row] = {
    val catalog = session.sessionState.catalog
    val database = databaseName.getOrElse(catalog.getCurrentDatabase)
    pattern.map(catalog.listTables(database, _)).getOrElse(catalog.listTables(database)).flatMap { table =>
      val isTemp = catalog.isTempView(table)
      try {
        val information = catalog.getTempViewOrPermanentTableMetadata(table).simpleString
        Some(Row(table.database.getOrElse(""), table.table, isTemp, s"$information\n"))
      } catch {
        case _: NoSuchTableException => None
      }
    }
  }
}

/** Plans SHOW TABLE EXTENDED (without a partition) of the session catalog as TablesListedExtended. */
case class ListTablesDespiteDrops(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case ShowTablesCommand(database, pattern, output, true, None) => TablesListedExtended(database, pattern, output)
    case other => other
  }
}
