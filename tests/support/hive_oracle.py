"""Hive's own bucket numbering, called through py4j on the hive-exec/serde jars
that ship with pyspark: ObjectInspectorUtils.getBucketNumber with Hive's
writable object inspectors, as Hive's FileSinkOperator does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

_EPOCH = dt.date(1970, 1, 1)


class HiveOracle:
    def __init__(self, spark: SparkSession):
        self._gw = spark.sparkContext._gateway
        self._jvm = spark._jvm
        self._utils = self._jvm.org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils
        self._factory = (
            self._jvm.org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory
        )

    def _writable(self, value: Any, type_name: str):
        j, f = self._jvm, self._factory
        serde_io = j.org.apache.hadoop.hive.serde2.io
        hadoop_io = j.org.apache.hadoop.io
        table = {
            "tinyint": (lambda v: serde_io.ByteWritable(v), f.writableByteObjectInspector),
            "smallint": (lambda v: serde_io.ShortWritable(v), f.writableShortObjectInspector),
            "int": (lambda v: hadoop_io.IntWritable(v), f.writableIntObjectInspector),
            "bigint": (lambda v: hadoop_io.LongWritable(v), f.writableLongObjectInspector),
            "string": (lambda v: hadoop_io.Text(v), f.writableStringObjectInspector),
            "boolean": (lambda v: hadoop_io.BooleanWritable(v), f.writableBooleanObjectInspector),
            "float": (lambda v: hadoop_io.FloatWritable(v), f.writableFloatObjectInspector),
            "double": (lambda v: serde_io.DoubleWritable(v), f.writableDoubleObjectInspector),
            "date": (lambda v: serde_io.DateWritable((v - _EPOCH).days), f.writableDateObjectInspector),
            "decimal": (lambda v: serde_io.HiveDecimalWritable(str(v)), f.writableHiveDecimalObjectInspector),
            "timestamp": (
                lambda v: serde_io.TimestampWritable(j.java.sql.Timestamp.valueOf(v.strftime("%Y-%m-%d %H:%M:%S.%f"))),
                f.writableTimestampObjectInspector,
            ),
        }
        make, inspector = table[type_name]
        return (None if value is None else make(value)), inspector

    def bucket_number(self, values: Sequence[Any], types: Sequence[str], num_buckets: int) -> int:
        oi_class = self._jvm.org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector
        objects = self._gw.new_array(self._jvm.java.lang.Object, len(values))
        inspectors = self._gw.new_array(oi_class, len(values))
        for i, (value, type_name) in enumerate(zip(values, types, strict=True)):
            objects[i], inspectors[i] = self._writable(value, type_name)
        return self._utils.getBucketNumber(objects, inspectors, num_buckets)
