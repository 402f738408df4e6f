-- Per-user totals: joins users and orders on their common bucket key (no
-- shuffle in Spark) and is itself bucketed for Hive/Trino consumers.
{{ config(
    materialized='bucketed_table',
    clustered_by='user_id',
    buckets=8,
    bucket_hash='hive',
) }}

select
    u.user_id,
    u.country,
    count(o.order_id) as orders,
    min(o.order_date) as first_order_date,
    max(o.order_date) as last_order_date
from {{ ref('users') }} as u
join {{ ref('orders') }} as o
    on o.user_id = u.user_id
group by u.user_id, u.country
