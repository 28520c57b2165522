-- sysbench.cmdline: options a script declares, its commands.
-- Part of the interpreter's set-up: lua/state.rs loads the API's chunks in order, each
-- given the native functions as `...`.

local native = ...

-- sysbench.cmdline ----------------------------------------------------------------------------

local cmdline = sysbench.cmdline
cmdline.ARG_NULL, cmdline.ARG_BOOL, cmdline.ARG_INT, cmdline.ARG_SIZE = 0, 1, 2, 3
cmdline.ARG_DOUBLE, cmdline.ARG_STRING, cmdline.ARG_LIST, cmdline.ARG_FILE = 4, 5, 6, 7
cmdline.ARG_MAX = 8
cmdline.PARALLEL_COMMAND = true

local type_of_default = {
  boolean = cmdline.ARG_BOOL,
  string = cmdline.ARG_STRING,
  number = cmdline.ARG_DOUBLE,
  table = cmdline.ARG_LIST,
}

-- The script's declared options as rows {name, description, default text, type}, sorted by
-- name; true when the script declares none.
function cmdline.read_cmdline_options()
  local options = cmdline.options
  if options == nil then
    return true
  end
  assert(type(options) == "table", "wrong type for sysbench.cmdline.options: " .. type(options))
  local names = {}
  for name, def in pairs(options) do
    assert(type(name) == "string" and type(def) == "table",
      "wrong table structure in sysbench.cmdline.options")
    names[#names + 1] = name
  end
  table.sort(names)
  local rows = {}
  for _, name in ipairs(names) do
    local def = options[name]
    assert(def[1] ~= nil, "nil description for option " .. name)
    local default = def[2]
    local text
    if type(default) == "table" then
      text = table.concat(default, ",")
    elseif type(default) == "boolean" then
      text = default and "on" or "off"
    elseif default ~= nil then
      text = tostring(default)
    end
    local kind = def[3]
    if kind == nil then
      kind = default ~= nil and type_of_default[type(default)] or cmdline.ARG_STRING
    end
    assert(kind ~= nil, "cannot determine type for option " .. name)
    rows[#rows + 1] = { name, tostring(def[1]), text, kind }
  end
  native.declare_options(rows)
  return true
end

function cmdline.command_defined(name)
  return type(cmdline.commands) == "table" and cmdline.commands[name] ~= nil
    and cmdline.commands[name][1] ~= nil
end

function cmdline.command_parallel(name)
  return cmdline.command_defined(name)
    and cmdline.commands[name][2] == cmdline.PARALLEL_COMMAND
end

function cmdline.call_command(name)
  if not cmdline.command_defined(name) then
    return false
  end
  local rc = cmdline.commands[name][1]()
  if rc == nil then
    return true
  end
  return rc and true or false
end

function cmdline.print_test_options()
  native.print_test_options()
end

