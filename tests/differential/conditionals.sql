-- Nested \if / \elif / \else, with conditions of every type.
\set x 3
\if :x = 1
\set r debug(1)
\elif :x = 3
\set r debug(3)
\if :x > 2
\set r debug(32)
\else
\set r debug(-32)
\endif
\elif :x = 3
\set r debug(-3)
\else
\set r debug(-1)
\endif
\if 0
\set r debug(0)
\elif 0.0
\set r debug(0.0)
\elif NULL
\set r debug(-100)
\else
\set r debug(100)
\endif
\if :x
\set r debug(:x * 2)
\endif
SELECT 1;
