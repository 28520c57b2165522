//! The embedded LuaJIT that runs sysbench's scripts, with every standard library and LuaJIT's
//! FFI (sysbench's scripts declare and call C functions with `ffi.cdef` and `ffi.C`, as its
//! own test suite does). The one place stampede opens the FFI: everything else stays free of
//! unsafe code.

pub use mlua;

/// A fresh interpreter with LuaJIT's standard libraries, `jit` and `ffi` loaded.
#[allow(unsafe_code)]
pub fn interpreter() -> mlua::Lua {
    // SAFETY: mlua calls a Lua with the FFI "unsafe" because a script can then call any C
    // function with any arguments. That is what sysbench's scripts are for: the script is the
    // user's own program, run on the user's behalf exactly as sysbench runs it.
    unsafe { mlua::Lua::unsafe_new_with(mlua::StdLib::ALL, mlua::LuaOptions::new()) }
}
