//! What every command that compiles shares, built once in main: the
//! targets, the user's clang flags, the toolchain the targets need and,
//! for the commands that build with it, the pass plugin, checked to be for
//! that toolchain's LLVM.

use std::path::{Path, PathBuf};

use crate::gpu::{self, Arch};
use crate::plugin::{self, LoadError, NotFound};
use crate::toolchain::nvcc::{Nvcc, NvccError};
use crate::toolchain::{Toolchain, ToolchainError};

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error(transparent)]
    NoPlugin(#[from] NotFound),
    #[error(transparent)]
    Plugin(#[from] LoadError),
    #[error(transparent)]
    Nvcc(#[from] NvccError),
    #[error("--compiler nvcc builds CUDA code: {0} is not an NVIDIA target (sm_XX)")]
    NvccTarget(String),
}

#[derive(Debug, Clone)]
pub struct Context {
    pub toolchain: Toolchain,
    pub archs: Vec<Arch>,
    /// The user's clang flags (after `--`, or a compile command's).
    pub user_args: Vec<String>,
    plugin: Option<PathBuf>,
    /// The user's files are built with nvcc (`user_args` are nvcc's flags):
    /// its PTX and cubins are tuned, not clang's.
    pub nvcc: Option<Nvcc>,
}

impl Context {
    /// The toolchain `archs` need; no plugin.
    pub fn new(archs: Vec<Arch>, user_args: Vec<String>) -> Result<Context, ContextError> {
        Ok(Context::with_toolchain(gpu::toolchain_for(&archs)?, archs, user_args))
    }

    /// A toolchain already found.
    pub fn with_toolchain(toolchain: Toolchain, archs: Vec<Arch>, user_args: Vec<String>) -> Context {
        Context { toolchain, archs, user_args, plugin: None, nvcc: None }
    }

    /// The same, building with nvcc (`nvcc`, or a path to one; `None`:
    /// the one detection finds) instead of clang; NVIDIA targets only.
    pub fn with_nvcc(self, nvcc: Option<&Path>) -> Result<Context, ContextError> {
        if let Some(a) = self.archs.iter().find(|a| gpu::of(a).family() != "nvptx") {
            return Err(ContextError::NvccTarget(a.to_string()));
        }
        let nvcc = match nvcc {
            Some(path) => Nvcc::at(path)?,
            None => Nvcc::detect()?,
        };
        Ok(Context { nvcc: Some(nvcc), ..self })
    }

    /// The same, with the pass plugin, which must be for the toolchain's
    /// LLVM: commands that build with it stop here rather than later.
    pub fn with_plugin(self) -> Result<Context, ContextError> {
        let plugin = plugin::find()?;
        plugin::check_version(&plugin, &self.toolchain.clang, &self.toolchain.version)?;
        Ok(Context { plugin: Some(plugin), ..self })
    }

    /// The same toolchain and plugin for other targets and flags (a
    /// compile command's, in `batch`).
    pub(crate) fn for_unit(&self, archs: Vec<Arch>, user_args: Vec<String>) -> Context {
        Context { toolchain: self.toolchain.clone(), archs, user_args, plugin: self.plugin.clone(), nvcc: self.nvcc.clone() }
    }

    /// [`Context::with_plugin`], or this context as it is and why not.
    pub fn with_plugin_if_found(self) -> (Context, Option<String>) {
        let found = plugin::find()
            .map_err(|e| e.to_string())
            .and_then(|p| plugin::check_version(&p, &self.toolchain.clang, &self.toolchain.version).map_err(|e| e.to_string()).map(|()| p));
        match found {
            Ok(plugin) => (Context { plugin: Some(plugin), ..self }, None),
            Err(why) => (self, Some(why)),
        }
    }

    /// The plugin, where the context has one.
    pub(crate) fn plugin_if_any(&self) -> Option<&Path> {
        self.plugin.as_deref()
    }

    /// The plugin [`Context::with_plugin`] found and checked.
    pub(crate) fn plugin(&self) -> &Path {
        self.plugin.as_deref().expect("regtune bug: a command that builds with the plugin made its context without it")
    }
}
