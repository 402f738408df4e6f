package sparkbucketing

import org.apache.logging.log4j.LogManager
import org.apache.logging.log4j.core.{Filter, LoggerContext}
import org.apache.logging.log4j.core.filter.RegexFilter

/** WARN lines that Spark and Hive's metastore client print, at Spark's default log level, for what the
 *  package's runs do routinely, each harmless (stock dbt-spark's builds print none of them, or once):
 *  - a side table created over the folder its run writes next (Spark looks for a streaming sink's metadata
 *    there and logs, with a stack trace, that the folder does not exist yet);
 *  - the metastore counting an added partition's files, at WARN in Hive 2.3's client;
 *  - every new HiveConf saying that an internal key of Spark's Hive set-up is unknown to Hive.
 *  Dropped by one filter on the root logger's configuration, the one these loggers use under Spark's
 *  default log4j2 set-up, matched against the whole message: any other line of those loggers, and every
 *  line at ERROR, is printed as before. Installed once per JVM, by the first session that loads the
 *  extension; a log4j reconfiguration drops it again. */
object QuietLogs {
  val Routine: Seq[String] = Seq(
    """Assume no metadata directory\. Error while looking for metadata directory in the path: .*__dbt_.*""",
    """Updating partition stats fast for: .*""",
    """Updated size to \d+""",
    """HiveConf of name hive\.internal\.ss\.authz\.settings\.applied\.marker does not exist""")

  private var installed = false

  def install(): Unit = synchronized {
    if (!installed) {
      installed = true
      LogManager.getContext(false) match {
        case context: LoggerContext =>
          val filter = RegexFilter.createFilter(
            Routine.mkString("(?:", "|", ")"), Array.empty[String], false, Filter.Result.DENY, Filter.Result.NEUTRAL)
          context.getConfiguration.getRootLogger.addFilter(filter)
          context.updateLoggers()
        case _ => // another logging back end: nothing to quiet
      }
    }
  }
}
