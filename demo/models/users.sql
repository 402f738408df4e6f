-- Users: bucketed by user_id with Spark's hash, so Spark joins it with orders
-- without a shuffle.
{{ config(
    materialized='bucketed_table',
    clustered_by='user_id',
    buckets=16,
    bucket_hash='spark',
    sorted_by=['user_id'],
) }}

select
    cast(id as int) as user_id,
    concat('user-', id) as user_name,
    element_at(array('DE', 'FR', 'US', 'BR', 'JP', 'IN'), cast(id % 6 as int) + 1) as country,
    date_add(date'2020-01-01', cast(id % 1500 as int)) as signup_date
from range(0, {{ var('demo_users', 20000) }}, 1, 8)
