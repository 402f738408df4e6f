// In Spark's package: the builder that makes a Hive UDF's expression, as
// CREATE TEMPORARY FUNCTION .. AS '<class>' does, lives in it.
package org.apache.spark.sql.hive

import org.apache.hadoop.hive.ql.udf.generic.GenericUDFHash
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}

import sparkbucketing.Contracts

/** Hive's own hash (GenericUDFHash), the one a Hive-hash table's bucket ids
 *  are checked against (macros/utils/hashing.sql), under the name the
 *  package's macros give the temporary function they create where the
 *  extension is not loaded: the expression that CREATE TEMPORARY FUNCTION
 *  spark_bucketing_hive_hash AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFHash'
 *  resolves to, without that statement in every run. */
object HiveHashFunction {
  val Name = Contracts.HiveHashFunction

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression) =
    (FunctionIdentifier(Name), new ExpressionInfo(classOf[GenericUDFHash].getName, Name),
      (args: Seq[Expression]) => HiveUDFExpressionBuilder.makeExpression(Name, classOf[GenericUDFHash], args))
}
