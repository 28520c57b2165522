-- A pipeline; expressions between the queries still run in order. (\syncpipeline is PG 17+,
-- newer than the pgbench the suite compares with: it is tested in pgbench_run.rs.)
\set aid random(1, 1000)
\startpipeline
SELECT :aid;
\set r debug(:aid * 2)
SELECT :aid + 1;
\set r debug(random(1, 10))
SELECT :aid + 2;
\endpipeline
\set r debug(:aid)
