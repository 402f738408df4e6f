package sparkbucketing

import org.apache.hadoop.hive.serde2.io.{DateWritable, TimestampWritable}
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.util.{CharVarcharUtils, DateTimeUtils}
import org.apache.spark.sql.types._

/** Which bucket column types the extension reads a Hive-hash table by, per
 *  Hive bucketing version: those whose hash here is Hive's own, checked
 *  against Hive's classes (tests/test_foreign_key_types.py). A table
 *  bucketed on any other type is read unbucketed, as stock Spark reads it,
 *  with the reason in its plan (ReadUnbucketedExec): a wrong bucket gives
 *  wrong answers without an error. contracts.HIVE_READ_TYPES ties the lists
 *  to the checker's. */
object HiveHashKeys {
  /** Version 1: Spark's HiveHash is Hive's for these, but for a date or timestamp, hashed by Hive's own class (HiveFieldHash). */
  val V1: Seq[String] = Seq("tinyint", "smallint", "int", "bigint", "boolean", "date", "float", "double", "string",
    "decimal", "timestamp")
  /** Version 2 (HiveHashV2): Hive 3's Murmur3 of these. */
  val V2: Seq[String] = Seq("tinyint", "smallint", "int", "bigint", "boolean", "date", "string")

  /** Why a table bucketed on `fields` (the catalog's, char and varchar kept) cannot be read by its buckets, if it cannot. */
  def unreadable(version: Int, fields: Seq[StructField]): Option[String] = {
    val readable = if (version == 2) V2 else V1
    fields.map(f => f -> typeName(f)).collectFirst {
      case (f, t) if !readable.contains(t) =>
        val why = t match {
          case "float" | "double" => "v2 hashes -0.0 and 0.0 apart, while Spark's joins and aggregations take them as one key"
          case "char" | "varchar" => "Hive hashes a char or varchar unlike a string (from 1, a char without its padding), and Spark's writer hashes it as a string"
          case "binary" => "Hive hashes a binary from 1 and Spark's writer from 0"
          case _ if version == 2 => s"Hive's v2 hash of a ${f.dataType.simpleString} is not computed here"
          case _ => s"Hive's hash of a ${f.dataType.simpleString} is not computed here"
        }
        s"bucket column ${f.name} is a ${CharVarcharUtils.getRawType(f.metadata).getOrElse(f.dataType).simpleString}: $why"
    }
  }

  /** The type's name in the lists: a char or varchar by its declared type, a decimal without its precision. */
  private def typeName(f: StructField): String = CharVarcharUtils.getRawType(f.metadata) match {
    case Some(_: CharType) => "char"
    case Some(_: VarcharType) => "varchar"
    case _ => f.dataType match {
      case _: DecimalType => "decimal"
      case s: StringType if !SparkCompat.defaultCollation(s) => "collated string"
      case TimestampType => "timestamp"
      case TimestampNTZType => "timestamp_ntz"
      case other => other.simpleString
    }
  }

  /** Version 1's fields as Spark's HiveHash takes them: a date or timestamp as the int Hive's own hash gives it
   *  (HiveHash of an int is the int). */
  def v1Fields(expressions: Seq[Expression]): Seq[Expression] = expressions.map { e =>
    if (e.dataType == TimestampType || e.dataType == DateType) HiveFieldHash(e) else e
  }
}

/** Hive's v1 hash of a date or timestamp: the hashCode of Hive's writable of
 *  the value as Spark hands it to Hive (DateWritable of DateTimeUtils.toJavaDate,
 *  TimestampWritable of toJavaTimestamp: Hive's calendar before 1582-10-15,
 *  a timestamp's seconds floored and its nanoseconds from 0). Spark's HiveHash
 *  counts days and truncated seconds of its own calendar, so a date before
 *  1582-10-15, and a time before 1970 with a fraction of a second, hash
 *  elsewhere there. */
case class HiveFieldHash(child: Expression) extends UnaryExpression with NullIntolerantExpression {
  override def dataType: DataType = IntegerType
  override protected def nullSafeEval(value: Any): Any = child.dataType match {
    case DateType => HiveFields.date(value.asInstanceOf[Int])
    case _ => HiveFields.timestamp(value.asInstanceOf[Long])
  }
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val of = if (child.dataType == DateType) "date" else "timestamp"
    defineCodeGen(ctx, ev, c => s"sparkbucketing.HiveFields.$of($c)")
  }
  override protected def withNewChildInternal(newChild: Expression): HiveFieldHash = copy(child = newChild)
}

object HiveFields {
  def date(days: Int): Int = new DateWritable(DateTimeUtils.toJavaDate(days)).hashCode()
  def timestamp(micros: Long): Int = new TimestampWritable(DateTimeUtils.toJavaTimestamp(micros)).hashCode()
}
