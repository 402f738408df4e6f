package sparkbucketing

import org.apache.spark.sql.catalyst.expressions.{BitwiseAnd, Expression, HiveHash, Literal, Pmod}
import org.apache.spark.sql.catalyst.plans.physical._

/** Rows placed by Hive's bucket id, `(hivehash(cols) & Int.MaxValue) % n`,
 *  with Hive's bucketing `version` 1 hash (Hive's own: the id Spark's writer
 *  gives a Hive table's rows, but for a timestamp, HiveHashKeys) or 2 (HiveHashV2, the id the extension's folder write
 *  gives a `bucketing_version` 2 table's rows), so the bucket files of a
 *  Hive-hash table are these partitions. A subclass of HashPartitioning so
 *  that Spark's shuffle places rows by it (ShuffleExchangeExec asks any
 *  HashPartitioning for its partitionIdExpression), but never equal to
 *  Spark's Murmur3 HashPartitioning nor compatible with it, nor with the other version. */
class HiveHashPartitioning(expressions: Seq[Expression], numPartitions: Int, val kept: Seq[Expression] = Nil, val version: Int = 1)
    extends HashPartitioning(expressions, numPartitions) {

  /** The same placement, which a join on `joinKeys` may keep though they are more than its columns (SupersetKeyJoins). */
  def keptFor(joinKeys: Seq[Expression]): HiveHashPartitioning = new HiveHashPartitioning(expressions, numPartitions, joinKeys, version)

  /** The same placement by other expressions (a twin's, or Spark's rewrite of these). */
  def placing(exprs: Seq[Expression], n: Int = numPartitions): HiveHashPartitioning = new HiveHashPartitioning(exprs, n, kept, version)

  override def partitionIdExpression: Expression = {
    val hash = if (version == 2) HiveHashV2(expressions) else HiveHash(HiveHashKeys.v1Fields(expressions))
    Pmod(BitwiseAnd(hash, Literal(Int.MaxValue)), Literal(numPartitions))
  }

  override def satisfies0(required: Distribution): Boolean = required match {
    // Stateful operators keep their state partitioned by Spark's own hash.
    case _: StatefulOpClusteredDistribution => false
    case _ => super.satisfies0(required)
  }

  override def createShuffleSpec(distribution: ClusteredDistribution): ShuffleSpec =
    HiveHashShuffleSpec(this, distribution)

  // Spark rewrites partitionings (aliases, canonical forms) through these: they must keep the hash.
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): HashPartitioning =
    placing(newChildren)

  override def copy(expressions: Seq[Expression] = expressions, numPartitions: Int = numPartitions): HashPartitioning =
    placing(expressions, numPartitions)

  // Exchange reuse and plan comparison go by equality: never equal to a Murmur3 partitioning.
  // Expressions compare semantically: a union keeps its children's placement only when they
  // are equal, and a projection's output names a column with its table's qualifier where the
  // scan's placement names it without.
  override def canEqual(other: Any): Boolean = other.isInstanceOf[HiveHashPartitioning]
  override def equals(other: Any): Boolean = other match {
    case o: HiveHashPartitioning =>
      version == o.version && numPartitions == o.numPartitions && expressions.length == o.expressions.length &&
        expressions.zip(o.expressions).forall { case (a, b) => a.semanticEquals(b) }
    case _ => false
  }
  override def hashCode(): Int = ("hive", version, expressions.map(_.canonicalized), numPartitions).hashCode()
  override def toString: String =
    s"hivehash${if (version == 2) "v2" else ""}partitioning(${expressions.mkString(", ")}, $numPartitions)"
}

/** Two sides are co-partitioned when both are placed by one version of Hive's hash into the
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
    case o: HiveHashShuffleSpec => partitioning.version == o.partitioning.version && twin.isCompatibleWith(o.twin)
    case ShuffleSpecCollection(specs) => specs.exists(isCompatibleWith)
    case _ => false
  }

  override def canCreatePartitioning: Boolean =
    partitioning.kept.nonEmpty && KeptKeys.same(distribution.clustering, partitioning.kept) || twin.canCreatePartitioning

  override def createPartitioning(clustering: Seq[Expression]): Partitioning = twin.createPartitioning(clustering) match {
    case h: HashPartitioning => new HiveHashPartitioning(h.expressions, h.numPartitions, version = partitioning.version)
    case other => other
  }
}
