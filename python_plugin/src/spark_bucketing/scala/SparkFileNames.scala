// In Spark's package: the rule for the names Spark's file index skips
// (HadoopFSUtils) is private[spark].
package org.apache.spark.sparkbucketing

import org.apache.spark.util.HadoopFSUtils

object SparkFileNames {

  /** Whether a scan's file index skips a file or folder of this name: `_`
   *  and `.` names (but not `_col=value` folders, nor Parquet's `_metadata`),
   *  and files still being copied. */
  def skipped(name: String): Boolean = HadoopFSUtils.shouldFilterOutPathName(name)
}
