package sparkbucketing

import org.apache.spark.sql.catalyst.expressions.{BitwiseAnd, Expression, HiveHash, Literal, Pmod}
import org.apache.spark.sql.catalyst.plans.physical._

/** Rows placed by Hive's bucket id, `(hivehash(cols) & Int.MaxValue) % n`: the
 *  id Spark's writer gives a Hive table's rows, so the bucket files of a
 *  Hive-hash table are these partitions. A subclass of HashPartitioning so
 *  that Spark's shuffle places rows by it (ShuffleExchangeExec asks any
 *  HashPartitioning for its partitionIdExpression), but never equal to
 *  Spark's Murmur3 HashPartitioning nor compatible with it. */
class HiveHashPartitioning(expressions: Seq[Expression], numPartitions: Int, val kept: Seq[Expression] = Nil)
    extends HashPartitioning(expressions, numPartitions) {

  /** The same placement, which a join on `joinKeys` may keep though they are more than its columns (SupersetKeyJoins). */
  def keptFor(joinKeys: Seq[Expression]): HiveHashPartitioning = new HiveHashPartitioning(expressions, numPartitions, joinKeys)

  override def partitionIdExpression: Expression =
    Pmod(BitwiseAnd(HiveHash(expressions), Literal(Int.MaxValue)), Literal(numPartitions))

  override def satisfies0(required: Distribution): Boolean = required match {
    // Stateful operators keep their state partitioned by Spark's own hash.
    case _: StatefulOpClusteredDistribution => false
    case _ => super.satisfies0(required)
  }

  override def createShuffleSpec(distribution: ClusteredDistribution): ShuffleSpec =
    HiveHashShuffleSpec(this, distribution)

  // Spark rewrites partitionings (aliases, canonical forms) through these: they must keep the hash.
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): HashPartitioning =
    new HiveHashPartitioning(newChildren, numPartitions, kept)

  override def copy(expressions: Seq[Expression] = expressions, numPartitions: Int = numPartitions): HashPartitioning =
    new HiveHashPartitioning(expressions, numPartitions, kept)

  // Exchange reuse and plan comparison go by equality: never equal to a Murmur3 partitioning.
  // Expressions compare semantically: a union keeps its children's placement only when they
  // are equal, and a projection's output names a column with its table's qualifier where the
  // scan's placement names it without.
  override def canEqual(other: Any): Boolean = other.isInstanceOf[HiveHashPartitioning]
  override def equals(other: Any): Boolean = other match {
    case o: HiveHashPartitioning =>
      numPartitions == o.numPartitions && expressions.length == o.expressions.length &&
        expressions.zip(o.expressions).forall { case (a, b) => a.semanticEquals(b) }
    case _ => false
  }
  override def hashCode(): Int = ("hive", expressions.map(_.canonicalized), numPartitions).hashCode()
  override def toString: String = s"hivehashpartitioning(${expressions.mkString(", ")}, $numPartitions)"
}

/** Two sides are co-partitioned when both are placed by Hive's hash into the
 *  same count by the same join key positions: the rules of Spark's own
 *  HashShuffleSpec (key positions, spark.sql.requireAllClusterKeysForCoPartition),
 *  asked of the Murmur3 twin of each side so that the two hashes follow one
 *  rule book (but for a join that keeps it, SupersetKeyJoins). Never compatible with Spark's HashShuffleSpec: the same count
 *  by another hash puts a key elsewhere. The other side of a join can be
 *  shuffled into this partitioning. */
case class HiveHashShuffleSpec(partitioning: HiveHashPartitioning, distribution: ClusteredDistribution) extends ShuffleSpec {

  private lazy val twin = HashShuffleSpec(HashPartitioning(partitioning.expressions, partitioning.numPartitions), distribution)

  override def numPartitions: Int = partitioning.numPartitions

  override def isCompatibleWith(other: ShuffleSpec): Boolean = other match {
    case o: HiveHashShuffleSpec => twin.isCompatibleWith(o.twin)
    case ShuffleSpecCollection(specs) => specs.exists(isCompatibleWith)
    case _ => false
  }

  override def canCreatePartitioning: Boolean =
    partitioning.kept.nonEmpty && KeptKeys.same(distribution.clustering, partitioning.kept) || twin.canCreatePartitioning

  override def createPartitioning(clustering: Seq[Expression]): Partitioning = twin.createPartitioning(clustering) match {
    case h: HashPartitioning => new HiveHashPartitioning(h.expressions, h.numPartitions)
    case other => other
  }
}
