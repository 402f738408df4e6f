-- Order events, loaded incrementally: each run replaces the last two days
-- (insert_overwrite) and keeps every partition at one file per bucket. The
-- bucket spec may evolve (on_bucket_change='evolve'): try
--   dbt run -s order_events --vars '{demo_event_buckets: 16}' (in demo/)
{{ config(
    materialized='bucketed_incremental',
    clustered_by='order_id',
    buckets=var('demo_event_buckets', 8),
    bucket_hash='spark',
    partition_by=['event_date'],
    sorted_by=['event_ts'],
    incremental_strategy='insert_overwrite',
    on_bucket_change='evolve',
) }}

{% set first_day = 5 if spark_bucketing.is_incremental() else 0 %}
select
    o.order_id,
    e.event_type,
    timestamp_seconds(unix_timestamp(cast(o.order_date as timestamp)) + e.offset_s) as event_ts,
    date_add(o.order_date, 0) as event_date
from {{ ref('orders') }} as o
lateral view inline(array(
    struct('placed', 0),
    struct('paid', 600),
    struct('shipped', 86000)
)) e as event_type, offset_s
where o.order_date >= date_add(date'2024-06-01', {{ first_day }})
