package sparkbucketing

import scala.util.Try

import org.apache.spark.sql.catalyst.catalog.BucketSpec
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types._
import org.apache.spark.util.collection.BitSet

/** The buckets a scan's filters can find rows in, for every hash family:
 *  `=` and `<=>` with a literal (either side), `IN` of literals, `IS NULL`
 *  on the bucket columns, AND and OR of them; any other condition allows
 *  every value. A table bucketed by several columns is pruned by the
 *  combinations of their values (at most `MaxCombinations`, Trino's way),
 *  each hashed as the writer hashes a row: `BucketIds`. A literal of
 *  another type than its column (`cast(int_col as bigint) = 5`) counts
 *  as the column's value when the cast widens an integral type, so it
 *  hashes the int. Floating-point columns are not pruned: SQL's `=` takes
 *  -0.0 and 0.0 as one value where a hash may not. Spark prunes only its
 *  own hash on one column, by `a = literal` in that order. */
object BucketPruning {
  val MaxCombinations = 1000

  /** Allowed values per bucket column position (absent: any value); a
   *  filter is a union of such boxes. */
  private type Box = Map[Int, Set[Any]]
  private val Anything: Seq[Box] = Seq(Map.empty)

  /** The selected buckets, None when the filters may hold rows of every bucket. */
  def selected(filters: Seq[Expression], output: Seq[Attribute], spec: BucketSpec, bucketId: Seq[Literal] => Int,
      resolver: (String, String) => Boolean): Option[BitSet] = {
    val columns = spec.bucketColumnNames.map(c => output.find(a => resolver(a.name, c)))
    val conditions = filters.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
    if (conditions.isEmpty || columns.exists(_.isEmpty) || columns.flatten.exists(a => !prunable(a.dataType))) return None
    val types = columns.flatten.map(_.dataType)
    val reading = new Conditions(columns.flatten.zipWithIndex.map { case (a, i) => a.exprId -> i }.toMap)
    val buckets = new BitSet(spec.numBuckets)
    reading.boxesOf(conditions.reduce(And)).foreach { box =>
      if (box.size < types.size) return None
      val sets = types.indices.map(box)
      if (sets.map(_.size.toLong).product > MaxCombinations) return None
      val ids = Try(combinations(sets).map(values => bucketId(values.zip(types).map { case (v, t) => Literal(v, t) })).toList)
      // A type the family's hash is not defined for here (Hive v2 of a decimal): no pruning.
      ids.getOrElse(return None).foreach(buckets.set)
    }
    if (buckets.cardinality() == spec.numBuckets) None else Some(buckets)
  }

  /** Both sets of buckets are correct (each holds every bucket a row can be in): their intersection is too. */
  def both(a: Option[BitSet], b: Option[BitSet]): Option[BitSet] = (a, b) match {
    case (Some(x), Some(y)) => Some(x & y)
    case _ => a.orElse(b)
  }

  private def prunable(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType |
        BinaryType | _: DecimalType => true
    case s: StringType => SparkCompat.defaultCollation(s)
    case _ => false
  }

  private def combinations(sets: Seq[Set[Any]]): Iterator[Seq[Any]] =
    sets.foldLeft(Iterator(Seq.empty[Any])) { (acc, set) => acc.flatMap(prefix => set.iterator.map(prefix :+ _)) }

  /** A scan's conditions read as boxes of the bucket columns at `positions`. */
  private class Conditions(positions: Map[ExprId, Int]) {

    def boxesOf(e: Expression): Seq[Box] = e match {
      case And(l, r) =>
        val (a, b) = (boxesOf(l), boxesOf(r))
        if (a.size.toLong * b.size > MaxCombinations) Anything
        else for (x <- a; y <- b) yield (x.keySet ++ y.keySet).map { k =>
          k -> ((x.get(k), y.get(k)) match {
            case (Some(s), Some(t)) => s intersect t
            case (s, t) => s.orElse(t).get
          })
        }.toMap
      case Or(l, r) =>
        val boxes = boxesOf(l) ++ boxesOf(r)
        if (boxes.size > MaxCombinations || boxes.exists(_.isEmpty)) Anything else boxes
      case EqualNullSafe(Column(i, a), Literal(v, t)) => values(i, a, Seq(v), t)
      case EqualNullSafe(Literal(v, t), Column(i, a)) => values(i, a, Seq(v), t)
      // `= NULL` holds for no row.
      case EqualTo(Column(i, a), Literal(v, t)) => values(i, a, Seq(v).filter(_ != null), t)
      case EqualTo(Literal(v, t), Column(i, a)) => values(i, a, Seq(v).filter(_ != null), t)
      case In(Column(i, a), list) if list.nonEmpty && list.forall(_.isInstanceOf[Literal]) =>
        values(i, a, list.map(_.asInstanceOf[Literal].value).filter(_ != null), list.head.dataType)
      case in @ InSet(Column(i, a), set) => values(i, a, set.toSeq.filter(_ != null), in.child.dataType)
      case IsNull(Column(i, _)) => Seq(Map(i -> Set[Any](null)))
      // A boolean column as the condition itself (`where flag`, `where not flag`).
      case Column(i, a) if a.dataType == BooleanType => values(i, a, Seq(true), BooleanType)
      case Not(Column(i, a)) if a.dataType == BooleanType => values(i, a, Seq(false), BooleanType)
      case _ => Anything
    }

    /** A bucket column (its position and attribute), itself or cast to a wider integral type. */
    private object Column {
      def unapply(e: Expression): Option[(Int, Attribute)] = e match {
        case a: Attribute => positions.get(a.exprId).map((_, a))
        case Cast(a: Attribute, to, _, _) if widens(a.dataType, to) => positions.get(a.exprId).map((_, a))
        case _ => None
      }
    }
  }

  /** The column's values the literals stand for: each one as the column's
   *  type, kept only when it converts back to the same literal (a bigint
   *  literal past an int column's range stands for no value of it). */
  private def values(i: Int, column: Attribute, literals: Seq[Any], literalType: DataType): Seq[Box] = {
    val converted: Option[Set[Any]] = if (column.dataType == literalType) Some(literals.toSet) else Try {
      literals.flatMap { v =>
        val x = Cast(Literal(v, literalType), column.dataType, None, EvalMode.LEGACY).eval()
        if (Cast(Literal(x, column.dataType), literalType, None, EvalMode.LEGACY).eval() == v) Some(x) else None
      }.toSet
    }.toOption
    converted.map(s => Seq[Box](Map(i -> s))).getOrElse(Anything)
  }

  /** An integral type cast to a wider integral type: a value of the wider one stands for at most one of it. */
  private def widens(from: DataType, to: DataType): Boolean = {
    val order = Seq(ByteType, ShortType, IntegerType, LongType)
    order.contains(from) && order.indexOf(to) > order.indexOf(from)
  }
}

/** A row's bucket from its bucket columns' values, as each hash family's
 *  writer computes it (the partitionings' own partitionIdExpression). */
object BucketIds {
  def of(hash: String, hiveVersion: Int, numBuckets: Int): Seq[Literal] => Int = values => {
    val partitioning =
      if (hash == "spark") HashPartitioning(values, numBuckets)
      else new HiveHashPartitioning(values, numBuckets, version = hiveVersion)
    partitioning.partitionIdExpression.eval().asInstanceOf[Int]
  }
}
