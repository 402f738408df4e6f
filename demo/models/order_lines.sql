-- Order lines: Hive-compatible buckets (Hive hash v1), so Hive and Trino read
-- this table as bucketed on order_id.
{{ config(
    materialized='bucketed_table',
    clustered_by='order_id',
    buckets=8,
    bucket_hash='hive',
    partition_by=['order_date'],
    sorted_by=['order_id', 'line_no'],
    file_format='orc',
) }}

select
    o.order_id,
    cast(l.line_no as int) as line_no,
    concat('sku-', (o.order_id * 31 + l.line_no) % 5000) as sku,
    cast(1 + (o.order_id + l.line_no) % 4 as int) as quantity,
    round(((o.order_id * 13 + l.line_no * 7) % 10000) / 100.0, 2) as unit_price,
    o.order_date
from {{ ref('orders') }} as o
lateral view explode(sequence(1, cast(1 + o.order_id % 4 as int))) l as line_no
