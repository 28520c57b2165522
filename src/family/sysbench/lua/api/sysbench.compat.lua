-- sysbench 0.5's global names (thread_id, sb_rand*, ...).
-- Part of the interpreter's set-up: lua/state.rs loads the API's chunks in order, each
-- given the native functions as `...`.

local native = ...

thread_id = sysbench.tid
test = sysbench.cmdline.script_path

function sb_rnd()
  local _, low = native.rand_u32_pair()
  return low
end
sb_rand = sysbench.rand.default
sb_rand_str = sysbench.rand.string
sb_rand_uniform = sysbench.rand.uniform
sb_rand_gaussian = sysbench.rand.gaussian
sb_rand_special = sysbench.rand.special
function sb_rand_uniq(a, b)
  a = a or 0
  b = b or 4294967295
  local value
  repeat
    value = sysbench.rand.unique()
  until value >= a and value <= b
  return value
end

mysql_table_engine = mysql_table_engine or "innodb"
myisam_max_rows = 1000000
