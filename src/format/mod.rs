//! The formats demarcate understands, one module each.

pub mod env;
pub mod shell;
