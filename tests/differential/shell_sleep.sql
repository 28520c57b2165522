-- \setshell, \shell and \sleep with variables.
\set n 5
\setshell out echo :n
\set r debug(:out * 2)
\shell true
\sleep 1 ms
\sleep :n us
\set r debug(:out)
SELECT 1;
