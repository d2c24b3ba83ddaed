//! Run-time linking: the GPU libraries are opened when a GPU is there to
//! use, so nothing here needs CUDA or ROCm to build.

use std::ffi::{c_void, CStr, CString};

pub struct Library(*mut c_void);

// SAFETY: a dlopen handle is a process-wide token; dlsym is thread-safe.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}

impl Library {
    /// The first of `names` that loads (sonames or paths).
    pub fn open(names: &[&str]) -> Result<Library, String> {
        let mut errors = Vec::new();
        for name in names {
            let c = CString::new(*name).map_err(|e| e.to_string())?;
            // SAFETY: `c` is a valid C string; dlopen has no other precondition.
            let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                return Ok(Library(handle));
            }
            errors.push(last_error());
        }
        // The first name's error says it best ("libcuda.so.1: cannot open shared object file").
        Err(errors.into_iter().next().unwrap_or_default())
    }

    /// The definitions after this library's in the lookup order: what an
    /// LD_PRELOAD wrapper forwards to.
    pub fn next() -> Library {
        Library(libc::RTLD_NEXT)
    }

    /// A function of the library, as the function pointer type `T`.
    ///
    /// # Safety
    /// `T` must be an `extern "C" fn` type matching the symbol's C prototype.
    pub unsafe fn get<T: Copy>(&self, name: &str) -> Result<T, String> {
        assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>(), "T must be a function pointer");
        let c = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: the handle came from dlopen (or is RTLD_NEXT); `c` is a valid C string.
        let sym = unsafe { libc::dlsym(self.0, c.as_ptr()) };
        if sym.is_null() {
            return Err(format!("{name}: {}", last_error()));
        }
        // SAFETY: `sym` is a non-null code address and the caller vouches for `T`'s prototype.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&sym) })
    }
}

fn last_error() -> String {
    // SAFETY: dlerror returns null or a valid C string owned by libc.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        // SAFETY: non-null, NUL-terminated, valid until the next dl* call.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Declare a table of C functions loaded from a library by name.
macro_rules! api {
    ($table:ident { $( $field:ident = $sym:literal : fn($($arg:ty),* $(,)?) -> $ret:ty; )* }) => {
        #[allow(non_snake_case)]
        pub struct $table {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl $table {
            /// The C names, in declaration order (checked against the headers in tests).
            pub const SYMBOLS: &[&str] = &[$($sym),*];

            pub fn load(lib: &$crate::dl::Library) -> Result<$table, String> {
                // SAFETY: each field's type is the C prototype of the symbol it names.
                Ok($table { $( $field: unsafe { lib.get($sym)? }, )* })
            }
        }
    };
}
pub(crate) use api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_a_library_function_and_names_what_is_missing() {
        let libc = Library::open(&["libc.so.6"]).unwrap();
        // SAFETY: strlen's prototype.
        let strlen: unsafe extern "C" fn(*const std::ffi::c_char) -> usize = unsafe { libc.get("strlen").unwrap() };
        // SAFETY: a valid C string.
        assert_eq!(unsafe { strlen(c"four".as_ptr()) }, 4);
        // SAFETY: the type is irrelevant: the lookup fails.
        let missing = unsafe { libc.get::<unsafe extern "C" fn()>("no_such_function_here") };
        assert!(missing.err().unwrap().starts_with("no_such_function_here: "));
        assert!(Library::open(&["libno-such-library.so.9"]).err().unwrap().contains("libno-such-library.so.9"));
    }
}
