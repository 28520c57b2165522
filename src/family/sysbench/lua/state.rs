//! One Lua interpreter (sysbench gives each worker thread its own, and one to the main thread):
//! LuaJIT with its standard libraries and FFI, sysbench's package path, the `sysbench` table,
//! the native functions `prelude.lua` builds the API on, then the script.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use stampede_lua::mlua::{self, Function, Lua, MultiValue, Table, UserData, Value};

use super::context::{Script, Shared, ThreadContext};
use super::stats::LogHistogram;
use super::{fast, sql};
use crate::family::sysbench::layout::Stat;
use crate::family::sysbench::sysbench_cmdline::{self, Kind, OptValue, OptionDef};
use stampede_script::extensions::sysbench_random as random;
use stampede_script::prng::PgPrng;

/// sysbench's Lua API as stampede writes it, chunk by chunk under sysbench's own module names
/// (which its error messages show).
const API: [(&str, &str); 6] = [
    ("sysbench.lua", include_str!("api/sysbench.lua")),
    (
        "sysbench.cmdline.lua",
        include_str!("api/sysbench.cmdline.lua"),
    ),
    ("sysbench.rand.lua", include_str!("api/sysbench.rand.lua")),
    (
        "sysbench.histogram.lua",
        include_str!("api/sysbench.histogram.lua"),
    ),
    ("sysbench.sql.lua", include_str!("api/sysbench.sql.lua")),
    (
        "sysbench.compat.lua",
        include_str!("api/sysbench.compat.lua"),
    ),
];
pub const VERSION: &str = "1.0.20";

/// An interpreter with the script loaded.
pub struct Interpreter {
    pub lua: Lua,
}

impl Interpreter {
    /// The main thread's interpreter (`tid` None) or worker `tid`'s.
    pub fn new(shared: &Arc<Shared>, tid: Option<usize>) -> Result<Interpreter, String> {
        let lua = stampede_lua::interpreter();
        let context = ThreadContext {
            shared: shared.clone(),
            tid: tid.unwrap_or(0),
            worker: tid.is_some(),
            runtime: OnceLock::new(),
            declared: RefCell::new(None),
            at_exit: RefCell::default(),
        };
        lua.set_app_data(Rc::new(context));
        fast::start_thread(shared, tid);
        let interpreter = Interpreter { lua };
        interpreter.setup(shared).map_err(|e| message(&e))?;
        interpreter.load_script(&shared.script)?;
        Ok(interpreter)
    }

    fn setup(&self, shared: &Shared) -> mlua::Result<()> {
        let lua = &self.lua;
        set_package_path(lua)?;
        let sysbench = lua.create_table()?;
        let context = lua
            .app_data_ref::<Rc<ThreadContext>>()
            .expect("every Lua state is made with its thread's context");
        sysbench.set("tid", context.tid)?;
        drop(context);
        sysbench.set("version", VERSION)?;
        sysbench.set("version_string", format!("sysbench {VERSION}"))?;
        let cmdline = lua.create_table()?;
        let argv = lua.create_table()?;
        for (index, arg) in shared.options().line.argv.iter().enumerate() {
            argv.raw_set(index, arg.as_str())?;
        }
        cmdline.set("argv", argv)?;
        if let Some(command) = &shared.options().line.command {
            cmdline.set("command", command.as_str())?;
        }
        if let Some(path) = shared.script.path() {
            cmdline.set("script_path", path)?;
        }
        sysbench.set("cmdline", cmdline)?;
        lua.globals().set("sysbench", sysbench)?;
        let native = native_functions(lua)?;
        for (name, source) in API {
            lua.load(source).set_name(name).call::<()>(native.clone())?;
        }
        Ok(())
    }

    fn load_script(&self, script: &Script) -> Result<(), String> {
        let chunk = match script {
            Script::File(path) => {
                let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
                self.lua
                    .load(without_shebang(text))
                    .set_name(format!("@{path}"))
            }
            Script::Stdin(text) => self
                .lua
                .load(without_shebang(text.clone().into_bytes()))
                .set_name("=stdin"),
            Script::Module(name) => {
                let require: Function =
                    self.lua.globals().get("require").map_err(|e| message(&e))?;
                return match require.call::<Value>(name.as_str()) {
                    Ok(_) => Ok(()),
                    Err(e) if message(&e).starts_with("module ") => Err(format!(
                        "Cannot find benchmark '{name}': no such built-in test, file or module"
                    )),
                    Err(e) => Err(message(&e)),
                };
            }
        };
        chunk.exec().map_err(|e| message(&e))
    }

    /// The options the script declares (`sysbench.cmdline.options`), None when it declares
    /// none (a legacy script, which gets every option given).
    pub fn declared_options(&self) -> Result<Option<Vec<OptionDef>>, String> {
        let read: Function = self
            .lua
            .load("return sysbench.cmdline.read_cmdline_options")
            .eval()
            .map_err(|e| message(&e))?;
        read.call::<bool>(()).map_err(|e| message(&e))?;
        let context = self
            .lua
            .app_data_ref::<Rc<ThreadContext>>()
            .expect("every Lua state is made with its thread's context");
        let declared = context.declared.borrow().clone();
        Ok(declared)
    }

    pub fn function_defined(&self, name: &str) -> bool {
        matches!(
            self.lua.globals().get::<Value>(name),
            Ok(Value::Function(_))
        )
    }

    pub fn custom_command_defined(&self, name: &str) -> bool {
        let defined: mlua::Result<bool> = self
            .lua
            .load("return sysbench.cmdline.command_defined(...)")
            .call(name);
        defined.unwrap_or(false)
    }

    /// `sysbench.opt` (and, for a legacy script, a global per option that is not a function).
    pub fn export_options(&self, shared: &Shared) -> mlua::Result<()> {
        let legacy = shared.legacy.load(Ordering::Relaxed);
        let exported = shared.options().exported(legacy);
        let opt = self.lua.create_table()?;
        let globals = self.lua.globals();
        for (name, value) in exported {
            let value = self.to_lua(&value)?;
            opt.set(name.as_str(), value.clone())?;
            if legacy && !matches!(globals.get::<Value>(name.as_str())?, Value::Function(_)) {
                globals.set(name.as_str(), value)?;
            }
        }
        globals.get::<Table>("sysbench")?.set("opt", opt)
    }

    fn to_lua(&self, value: &OptValue) -> mlua::Result<Value> {
        Ok(match value {
            OptValue::Bool(b) => Value::Boolean(*b),
            OptValue::Number(n) => Value::Number(*n),
            OptValue::Str(s) => Value::String(self.lua.create_string(s)?),
            OptValue::List(items) => Value::Table(self.lua.create_sequence_from(items.clone())?),
            OptValue::Nothing => Value::Nil,
        })
    }

    /// Calls the global function `name` (a test's prepare, cleanup or help) with the options
    /// exported; its error is sysbench's "`name' function failed".
    pub fn call_command(&self, name: &str) -> i32 {
        let context = self
            .lua
            .app_data_ref::<Rc<ThreadContext>>()
            .expect("every Lua state is made with its thread's context");
        let shared = context.shared.clone();
        drop(context);
        let result = self.export_options(&shared).and_then(|()| {
            let function: Function = self.lua.globals().get(name)?;
            function.call::<Value>(())
        });
        match result {
            Ok(_) => 0,
            Err(e) => {
                shared
                    .log
                    .fatal(&format!("`{name}' function failed: {}", message(&e)));
                1
            }
        }
    }

    /// Calls global `name` if the script defines it, with `args`.
    pub fn call_if_defined(&self, name: &str, args: impl mlua::IntoLuaMulti) -> Result<(), String> {
        match self.lua.globals().get::<Value>(name) {
            Ok(Value::Function(function)) => function
                .call::<Value>(args)
                .map(|_| ())
                .map_err(|e| format!("`{name}' function failed: {}", message(&e))),
            _ => Ok(()),
        }
    }

    /// Calls a Lua function found by `path` (e.g. "sysbench.hooks.report_cumulative") with a
    /// stat table; false when there is none.
    pub fn call_hook(&self, path: &str, stat: &Stat) -> Result<bool, String> {
        let hook: Value = self
            .lua
            .load(format!("return {path}"))
            .eval()
            .map_err(|e| message(&e))?;
        let Value::Function(hook) = hook else {
            return Ok(false);
        };
        let table = stat_table(&self.lua, stat).map_err(|e| message(&e))?;
        hook.call::<Value>(table)
            .map(|_| true)
            .map_err(|e| message(&e))
    }

    pub fn hook_defined(&self, path: &str) -> bool {
        matches!(
            self.lua.load(format!("return {path}")).eval::<Value>(),
            Ok(Value::Function(_))
        )
    }
}

impl Drop for Interpreter {
    fn drop(&mut self) {
        if let Some(context) = self.lua.app_data_ref::<Rc<ThreadContext>>() {
            let mut out = std::io::stdout().lock();
            for text in context.at_exit.borrow_mut().drain(..) {
                let _ = out.write_all(text.as_bytes());
            }
            let _ = out.flush();
        }
    }
}

/// luaL_loadfile skips a first line that starts with `#` (a shebang); so does sysbench.
fn without_shebang(mut text: Vec<u8>) -> Vec<u8> {
    if text.first() == Some(&b'#') {
        let end = text.iter().position(|&b| b == b'\n').unwrap_or(text.len());
        text.drain(..end);
    }
    text
}

/// An error's message as sysbench prints it: the Lua error alone, without mlua's traceback.
pub fn message(error: &mlua::Error) -> String {
    let text = match error {
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        mlua::Error::RuntimeError(text) | mlua::Error::SyntaxError { message: text, .. } => {
            text.clone()
        }
        other => other.to_string(),
    };
    match text.find("\nstack traceback:") {
        Some(end) => text[..end].to_string(),
        None => text,
    }
}

/// sysbench's package.path: the current directory, LuaRocks' trees, the system's, with
/// `LUA_PATH` in front and its `;;` standing for that default.
fn set_package_path(lua: &Lua) -> mlua::Result<()> {
    let mut default = String::from("./?.lua;./?/init.lua;./src/lua/?.lua;");
    if let Ok(home) = std::env::var("HOME") {
        for tail in [
            "/.luarocks/share/lua/5.1/?.lua;",
            "/.luarocks/share/lua/5.1/?/init.lua;",
            "/.luarocks/share/lua/?.lua;",
            "/.luarocks/share/lua/?/init.lua;",
        ] {
            default.push_str(&home);
            default.push_str(tail);
        }
    }
    default.push_str(
        "/usr/local/share/lua/5.1/?.lua;/usr/share/lua/5.1/?.lua;/usr/share/sysbench/?.lua;",
    );
    let path = match std::env::var("LUA_PATH") {
        Ok(path) => path.replace(";;", &format!(";{default};")),
        Err(_) => default,
    };
    let package: Table = lua.globals().get("package")?;
    package.set("path", path)
}

fn context(lua: &Lua) -> mlua::AppDataRef<'_, Rc<ThreadContext>> {
    lua.app_data_ref::<Rc<ThreadContext>>()
        .expect("every interpreter has its context")
}

/// The values of `print(...)`: tostring of each, tab-separated.
fn printed(lua: &Lua, values: MultiValue) -> mlua::Result<String> {
    let tostring: Function = lua.globals().get("tostring")?;
    let mut text = String::new();
    for (index, value) in values.into_iter().enumerate() {
        if index > 0 {
            text.push('\t');
        }
        let shown: mlua::String = tostring.call(value)?;
        text.push_str(&shown.to_string_lossy());
    }
    Ok(text)
}

fn native_functions(lua: &Lua) -> mlua::Result<Table> {
    let native = lua.create_table()?;
    native.set(
        "print",
        lua.create_function(|lua, values: MultiValue| {
            let mut text = printed(lua, values)?;
            text.push('\n');
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            Ok(())
        })?,
    )?;
    native.set(
        "write",
        lua.create_function(|_, values: MultiValue| {
            let mut out = std::io::stdout().lock();
            for value in values {
                let text = match &value {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => format!("{n}").into_bytes(),
                    _ => Vec::new(),
                };
                let _ = out.write_all(&text);
            }
            let _ = out.flush();
            Ok(true)
        })?,
    )?;
    native.set(
        "alert",
        lua.create_function(|lua, text: String| {
            context(lua).shared.log.alert(&text);
            Ok(())
        })?,
    )?;
    native.set(
        "at_exit",
        lua.create_function(|lua, text: String| {
            context(lua).at_exit.borrow_mut().push(text);
            Ok(())
        })?,
    )?;
    fast::add_functions(lua, &native)?;
    add_option_functions(lua, &native)?;
    add_rand_functions(lua, &native)?;
    native.set(
        "histogram",
        lua.create_function(|_, (size, low, high): (usize, f64, f64)| {
            Ok(ScriptHistogram(RefCell::new(LogHistogram::new(
                size, low, high,
            ))))
        })?,
    )?;
    native.set("driver", lua.create_function(sql::create_driver)?)?;
    sql::add_functions(lua, &native)?;
    Ok(native)
}

fn add_option_functions(lua: &Lua, native: &Table) -> mlua::Result<()> {
    native.set(
        "declare_options",
        lua.create_function(|lua, rows: Vec<Table>| {
            let mut declared = Vec::new();
            for row in rows {
                let kind: u8 = row.get(4)?;
                declared.push(OptionDef {
                    name: row.get(1)?,
                    desc: row.get(2)?,
                    default: row.get(3)?,
                    kind: kind_of(kind),
                });
            }
            *context(lua).declared.borrow_mut() = Some(declared);
            Ok(())
        })?,
    )?;
    native.set(
        "print_test_options",
        lua.create_function(|lua, ()| {
            let declared = context(lua).declared.borrow().clone().unwrap_or_default();
            println!("{}", sysbench_cmdline::option_list(&declared));
            let _ = std::io::stdout().flush();
            Ok(())
        })?,
    )?;
    Ok(())
}

/// sysbench.cmdline's ARG_* numbers.
fn kind_of(number: u8) -> Kind {
    match number {
        1 => Kind::Bool,
        2 => Kind::Int,
        3 => Kind::Size,
        4 => Kind::Double,
        6 => Kind::List,
        7 => Kind::File,
        _ => Kind::Str,
    }
}

fn add_rand_functions(lua: &Lua, native: &Table) -> mlua::Result<()> {
    native.set(
        "rand_unique",
        lua.create_function(|lua, ()| {
            let context = context(lua);
            let index = context.shared.unique.fetch_add(1, Ordering::Relaxed);
            Ok(unique_permutation(index, context.shared.seed as u32))
        })?,
    )?;
    native.set(
        "rand_string",
        lua.create_function(|lua, format: mlua::String| {
            let text: Vec<u8> = fast::with_rng(|rng| {
                format
                    .as_bytes()
                    .iter()
                    .map(|&c| match c {
                        b'#' => b'0' + random::uniform(rng, 0, 9) as u8,
                        b'@' => b'a' + random::uniform(rng, 0, 25) as u8,
                        other => other,
                    })
                    .collect()
            });
            lua.create_string(text)
        })?,
    )?;
    native.set(
        "rand_u32_pair",
        lua.create_function(|_, ()| {
            let value = fast::with_rng(PgPrng::next_u64);
            Ok(((value >> 32) as u32, value as u32))
        })?,
    )?;
    Ok(())
}

/// A permutation of the 32-bit integers (quadratic residues modulo the largest 32-bit prime,
/// applied twice around an offset): the n-th call's value differs from every other call's for
/// the first 2^32 calls, as `sysbench.rand.unique` promises.
fn unique_permutation(index: u32, offset: u32) -> u32 {
    const PRIME: u64 = 4_294_967_291;
    fn residue(x: u32) -> u32 {
        let x = x as u64;
        if x >= PRIME {
            return x as u32;
        }
        let r = (x * x) % PRIME;
        (if x <= PRIME / 2 { r } else { PRIME - r }) as u32
    }
    residue(residue(index).wrapping_add(offset) ^ 0x5bf0_3635)
}

/// `sysbench.histogram.new`: a histogram a script fills and prints.
struct ScriptHistogram(RefCell<LogHistogram>);

impl UserData for ScriptHistogram {
    fn add_methods<M: mlua::UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("update", |_, this, value: f64| {
            this.0.borrow_mut().update(value);
            Ok(())
        });
        methods.add_method("print", |_, this, ()| {
            print!("{}", this.0.borrow().text());
            let _ = std::io::stdout().flush();
            Ok(())
        });
    }
}

/// sysbench's `sb_stat_t` as the table its hooks receive.
pub fn stat_table(lua: &Lua, stat: &Stat) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("threads_running", stat.threads_running)?;
    table.set("time_interval", stat.time_interval)?;
    table.set("time_total", stat.time_total)?;
    table.set("latency_pct", stat.latency_pct)?;
    table.set("events", stat.events)?;
    table.set("reads", stat.reads)?;
    table.set("writes", stat.writes)?;
    table.set("other", stat.other)?;
    table.set("errors", stat.errors)?;
    table.set("reconnects", stat.reconnects)?;
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_values_do_not_repeat() {
        let mut seen = std::collections::HashSet::new();
        for index in 0..200_000 {
            assert!(seen.insert(unique_permutation(index, 12345)), "{index}");
        }
    }
}
