-- Orders: one partition per day, bucketed like users (same key, type, count and
-- hash) so that the join in user_order_totals needs no shuffle.
{{ config(
    materialized='bucketed_table',
    clustered_by='user_id',
    buckets=16,
    bucket_hash='spark',
    partition_by=['order_date'],
    sorted_by=['order_id'],
) }}

select
    id as order_id,
    -- skewed on purpose: a few heavy users place a third of all orders
    cast(case when id % 3 = 0 then id % 50 else (id * 7919) % {{ var('demo_users', 20000) }} end as int) as user_id,
    date_add(date'2024-06-01', cast(id % 7 as int)) as order_date,
    element_at(array('web', 'app', 'store'), cast(id % 3 as int) + 1) as channel
from range(0, {{ var('demo_orders', 200000) }}, 1, 12)
