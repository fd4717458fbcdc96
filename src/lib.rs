//! demarcate: managed regions inside files people also edit by hand.
//!
//! A region is the text between two marker comments; everything outside regions belongs to
//! the user and is never changed. Two levels of API:
//!
//! - **Files** ([`set`], [`remove`], [`sync`], [`repair`], [`list`], [`check`], [`apply`]):
//!   the whole pipeline the `demarcate` command runs — lock, read, detect the format, plan,
//!   validate, write atomically, remember in the state store — with [`EditOptions`] whose
//!   defaults are the command line's. What happens is told to a [`Reporter`]; the result is
//!   a [`FileOutcome`].
//! - **Bytes** ([`Document::parse`], [`plan`]): pure, no I/O. Parse a file into its regions,
//!   their states and its problems, plan operations, get the new bytes.
//!
//! ```
//! use demarcate::{Desired, Document, Format, Identity, Op, PlanOptions, plan};
//!
//! let shell = Format::Shell.syntax();
//! let profile = b"export EDITOR=vi\n";
//! let hook = Desired {
//!     id: Identity::new("ZYLOS", "hooks"),
//!     body: b"export PATH=\"$HOME/.zylos/bin:$PATH\"\n".to_vec(),
//! };
//! let opts = PlanOptions::default();
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
//!
//! The file-level API, on a real file:
//!
//! ```
//! use demarcate::{Desired, EditOptions, Identity, Silent, StateDir};
//!
//! let dir = tempfile::tempdir()?;
//! let env = dir.path().join(".env");
//! let opts = EditOptions { state: StateDir::None, ..EditOptions::default() };
//! let api = Desired { id: Identity::new("ZYLOS", "api"), body: b"API_URL=https://x\n".to_vec() };
//!
//! let outcome = demarcate::set(&env, api, &opts, &Silent);
//! assert_eq!(outcome.exit_code(), 0);
//! assert_eq!(demarcate::list(&env, &opts).regions.len(), 1);
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod apply;
mod codec;
mod document;
mod engine;
pub mod entries;
mod format;
mod hash;
mod io;
mod lex;
mod lines;
mod marker;
mod place;
mod plan;
mod private;
mod problem;
mod repair;
mod report;
mod state;
mod warning;

pub use apply::{Manifest, ManifestError, run as apply};
pub use codec::{Codec, CodecError, Encoding, LineEnding};
pub use document::{Desired, Document, Foreign, MarkerLine, Region, State};
pub use engine::{
    EditOptions, EntryConfig, Error, Event, FileOutcome, LOCK_TIMEOUT, Reporter, Silent, StateDir,
    TemplateError, Work, canonical_path, check, edit, entries_template, filter, inspect, list,
    remove, repair, set, sync, template_op, template_work, unified_diff, uninstall,
};
pub use format::text::CommentStyle;
pub use format::{DetectError, Format, Syntax, detect};
pub use hash::{normalize_lines, of_normalized as body_hash};
pub use io::{IoError, MAX_FILE, validate_words};
pub use lex::{
    Comment, Keep, Key, KeyPolicy, Keys, KeysIter, Lexed, Lexer, Lines, Scan, Span, Unclosed,
};
pub use lines::eol_of;
pub use marker::{Identity, Marker};
pub use place::{At, AtError, Created, Home, Step, spans_lines};
pub use plan::{
    Action, Adopt, Checked, OnDrift, Op, Options as PlanOptions, Outcome, Plan, PlanError, plan,
};
pub use private::StoreError;
pub use problem::{MAX_PROBLEMS_PER_KIND, Problem, ProblemKind};
pub use repair::{Fix, Repaired, repair as repair_markers};
pub use report::{FileReport, ProblemReport, RegionReport, RegionState, Report};
pub use state::StoreWarning;
pub use warning::{MergeFailure, Warning};
