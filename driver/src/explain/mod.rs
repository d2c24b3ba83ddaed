//! `regtune explain`: why a kernel needs its registers.

pub mod mir;
pub mod pressure;
pub mod ir;
pub mod timeline;
pub mod loops;
