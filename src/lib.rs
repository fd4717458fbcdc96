//! demarcate: managed regions inside files people also edit by hand.
//!
//! A region is the text between two marker comments; everything outside regions belongs to
//! the user and is never changed. The library is pure: bytes in, bytes out. Parse a file into
//! a [`document::Document`] (its regions, their states, its problems), plan operations with
//! [`plan::plan`], and get the new bytes; reading and writing files is the caller's business
//! (the `demarcate` binary does it atomically, see [`io`]).
//!
//! ```
//! use demarcate::document::Document;
//! use demarcate::format::Format;
//! use demarcate::marker::Identity;
//! use demarcate::plan::{plan, Desired, Op, Options};
//!
//! let shell = Format::Shell.syntax();
//! let profile = b"export EDITOR=vi\n";
//! let hook = Desired {
//!     id: Identity::new("ZYLOS", "hooks"),
//!     body: b"export PATH=\"$HOME/.zylos/bin:$PATH\"\n".to_vec(),
//! };
//! let opts = Options { hash: true, ..Options::default() };
//!
//! let doc = Document::parse(profile, shell);
//! let edit = plan(&doc, shell, &[Op::Set(hook.clone())], &opts).expect("a clean file");
//! assert!(edit.new.starts_with(b"export EDITOR=vi\n# BEGIN ZYLOS MANAGED hooks hash="));
//!
//! // Running the same operation again changes nothing.
//! let again = Document::parse(&edit.new, shell);
//! let second = plan(&again, shell, &[Op::Set(hook)], &opts).expect("still clean");
//! assert_eq!(second.new, edit.new);
//!
//! // Removing the region gives back the original bytes.
//! let removed = plan(&again, shell, &[Op::Remove(Identity::new("ZYLOS", "hooks"))], &opts)
//!     .expect("removal");
//! assert_eq!(removed.new, profile);
//! ```
#![deny(missing_docs)]

pub mod apply;
pub mod cli;
pub mod document;
pub mod entries;
pub mod format;
pub mod hash;
pub mod io;
pub mod lex;
pub mod marker;
pub mod plan;
pub mod problem;
pub mod repair;
pub mod report;
pub mod state;
