package sparkbucketing

import java.nio.ByteBuffer

import org.apache.hive.common.util.Murmur3
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** Hive's bucketing v2 hash (Hive 3's default, `bucketing_version`=2,
 *  HIVE-18910; what Trino's HiveBucketingV2 computes): the columns folded as
 *  `31 * h + f` from 0, each field NULL -> 0, boolean 1/0, tinyint its
 *  value, every other type Hive's own Murmur3 `hash32` (seed 104729, the
 *  class Hive and Trino call) over the value's big-endian bytes. A row's
 *  bucket is `(h & Int.MaxValue) % n`. Spark has no such function: the
 *  extension registers it as `spark_bucketing_hive_hash_v2`. */
case class HiveHashV2(children: Seq[Expression]) extends Expression with CodegenFallback {

  override def nullable: Boolean = false
  override def dataType: DataType = IntegerType
  override def prettyName: String = HiveHashV2.Name

  override def checkInputDataTypes(): TypeCheckResult = {
    val unsupported = children.filterNot(c => HiveHashV2.supports(c.dataType))
    if (children.isEmpty) TypeCheckResult.TypeCheckFailure(s"$prettyName needs at least one column")
    else if (unsupported.nonEmpty) TypeCheckResult.TypeCheckFailure(
      s"$prettyName cannot hash ${unsupported.map(c => s"${c.sql} (${c.dataType.simpleString})").mkString(", ")}: Hive's v2 " +
        s"hash is defined here for ${HiveHashV2.TypeNames.mkString(", ")}")
    else TypeCheckResult.TypeCheckSuccess
  }

  override def eval(input: InternalRow): Any = {
    var h = 0
    children.foreach(c => h = 31 * h + HiveHashV2.field(c.eval(input), c.dataType))
    h
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): HiveHashV2 = copy(children = newChildren)
}

object HiveHashV2 {
  val Name = Contracts.HiveHashV2Function
  /** Hive's Murmur3.DEFAULT_SEED, the seed Hive's and Trino's v2 bucketing pass. */
  val Seed = 104729
  /** The types hashed as Hive hashes them (contracts.HIVE_HASH_TYPES; a char or varchar is a string here). */
  val TypeNames: Seq[String] = Seq("tinyint", "smallint", "int", "bigint", "string", "boolean", "date", "float", "double")

  def supports(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType => true
    case s: StringType => SparkCompat.defaultCollation(s)
    case _ => false
  }

  private def murmur(bytes: Array[Byte]): Int = Murmur3.hash32(bytes, 0, bytes.length, Seed)

  /** One field's hash, as Hive's ObjectInspectorUtils.hashCodeMurmur computes it. */
  def field(value: Any, t: DataType): Int = if (value == null) 0 else t match {
    case BooleanType => if (value.asInstanceOf[Boolean]) 1 else 0
    case ByteType => value.asInstanceOf[Byte].toInt
    case ShortType => murmur(ByteBuffer.allocate(2).putShort(value.asInstanceOf[Short]).array())
    case IntegerType | DateType => murmur(ByteBuffer.allocate(4).putInt(value.asInstanceOf[Int]).array())
    case LongType => murmur(ByteBuffer.allocate(8).putLong(value.asInstanceOf[Long]).array())
    // Sic: Hive puts the canonical bits *as a number* (putFloat(floatToIntBits(f)) converts the int to a float).
    case FloatType => murmur(ByteBuffer.allocate(4).putFloat(java.lang.Float.floatToIntBits(value.asInstanceOf[Float]).toFloat).array())
    case DoubleType => murmur(ByteBuffer.allocate(8).putDouble(java.lang.Double.doubleToLongBits(value.asInstanceOf[Double]).toDouble).array())
    case _: StringType => murmur(value.asInstanceOf[UTF8String].getBytes)
    case other => throw new IllegalArgumentException(s"$Name cannot hash a ${other.simpleString}")
  }

  /** The function the extension registers. */
  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression) =
    (FunctionIdentifier(Name), new ExpressionInfo(classOf[HiveHashV2].getName, Name), (args: Seq[Expression]) => HiveHashV2(args))
}
