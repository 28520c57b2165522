-- \gset and \aset: query results into variables, with and without a prefix.
SELECT 42 AS answer, 2.5 AS half, 'abc' AS word, NULL AS nothing \gset
\set r debug(:answer + 1)
\set r debug(:half * 2)
SELECT 7 AS answer \gset p_
\set r debug(:p_answer)
SELECT 1 AS a \; SELECT 2 AS b \aset
\set r debug(:a + :b)
SELECT :answer + :p_answer AS total \gset
\set r debug(:total)
