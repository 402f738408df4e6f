// Hive 4's own bucket numbering, called as Hive 4's ReduceSinkOperator calls it:
// the table's bucketing version picks the hash (2: ObjectInspectorUtils.getBucketHashCode,
// Murmur3; otherwise getBucketHashCodeOld), then ObjectInspectorUtils.getBucketNumber(hash, n).
// Run with Java's source launcher on the hive-serde/-common/-storage-api 4 jars only
// (harness/hive4_oracle.py). One request per stdin line:
//   <version> TAB <buckets> (TAB <type>:<value>)*   value: \N for NULL, strings as UTF-8 hex,
//   float/double as their IEEE bits in hex, dates as days since 1970-01-01, other numbers in decimal
// answered by one line: <hash code> TAB <bucket>.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.hive.common.type.Date;
import org.apache.hadoop.hive.serde2.io.ByteWritable;
import org.apache.hadoop.hive.serde2.io.DateWritableV2;
import org.apache.hadoop.hive.serde2.io.DoubleWritable;
import org.apache.hadoop.hive.serde2.io.ShortWritable;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.io.BooleanWritable;
import org.apache.hadoop.io.FloatWritable;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;

public class Hive4BucketOracle {
    static ObjectInspector inspector(String type) {
        switch (type) {
            case "tinyint": return PrimitiveObjectInspectorFactory.writableByteObjectInspector;
            case "smallint": return PrimitiveObjectInspectorFactory.writableShortObjectInspector;
            case "int": return PrimitiveObjectInspectorFactory.writableIntObjectInspector;
            case "bigint": return PrimitiveObjectInspectorFactory.writableLongObjectInspector;
            case "string": return PrimitiveObjectInspectorFactory.writableStringObjectInspector;
            case "boolean": return PrimitiveObjectInspectorFactory.writableBooleanObjectInspector;
            case "float": return PrimitiveObjectInspectorFactory.writableFloatObjectInspector;
            case "double": return PrimitiveObjectInspectorFactory.writableDoubleObjectInspector;
            case "date": return PrimitiveObjectInspectorFactory.writableDateObjectInspector;
            default: throw new IllegalArgumentException("no Hive type " + type);
        }
    }

    static Object writable(String type, String value) {
        if (value.equals("\\N")) return null;
        switch (type) {
            case "tinyint": return new ByteWritable(Byte.parseByte(value));
            case "smallint": return new ShortWritable(Short.parseShort(value));
            case "int": return new IntWritable(Integer.parseInt(value));
            case "bigint": return new LongWritable(Long.parseLong(value));
            case "string": return new Text(new String(hex(value), StandardCharsets.UTF_8));
            case "boolean": return new BooleanWritable(Boolean.parseBoolean(value));
            case "float": return new FloatWritable(Float.intBitsToFloat(Integer.parseUnsignedInt(value, 16)));
            case "double": return new DoubleWritable(Double.longBitsToDouble(Long.parseUnsignedLong(value, 16)));
            case "date": return new DateWritableV2(Date.ofEpochDay(Integer.parseInt(value)));
            default: throw new IllegalArgumentException("no Hive type " + type);
        }
    }

    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            int version = Integer.parseInt(parts[0]);
            int buckets = Integer.parseInt(parts[1]);
            Object[] fields = new Object[parts.length - 2];
            ObjectInspector[] inspectors = new ObjectInspector[parts.length - 2];
            for (int i = 2; i < parts.length; i++) {
                int colon = parts[i].indexOf(':');
                String type = parts[i].substring(0, colon);
                inspectors[i - 2] = inspector(type);
                fields[i - 2] = writable(type, parts[i].substring(colon + 1));
            }
            int hash = version == 2
                ? ObjectInspectorUtils.getBucketHashCode(fields, inspectors)
                : ObjectInspectorUtils.getBucketHashCodeOld(fields, inspectors);
            out.println(hash + "\t" + ObjectInspectorUtils.getBucketNumber(hash, buckets));
            out.flush();
        }
    }
}
